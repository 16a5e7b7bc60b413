//! Label and field selectors: parsing the query-string syntax, converting `spec.selector` objects, and matching
//! objects. Pure functions; parse errors become 400 BadRequest.

use serde_json::Value;

use crate::registry::api_error::ApiError;
use crate::registry::meta;
use crate::registry::resources::ResourceType;

#[derive(Debug, Clone, PartialEq)]
enum Operator {
    In(Vec<String>),
    NotIn(Vec<String>),
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq)]
struct Requirement {
    key: String,
    operator: Operator,
}

/// A parsed label selector; all requirements must hold. The empty selector matches everything.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    /// Parses `labelSelector` syntax: `k=v`, `k==v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`.
    pub fn parse(text: &str) -> Result<Self, ApiError> {
        let mut requirements = Vec::new();
        for part in split_top_level(text) {
            let part = part.trim();
            if part.is_empty() {
                continue;
            }
            requirements.push(parse_requirement(part)?);
        }
        Ok(LabelSelector { requirements })
    }

    /// Converts a `metav1.LabelSelector` object (`matchLabels`, `matchExpressions`). A missing selector object
    /// is `None`; an empty one matches everything.
    pub(crate) fn from_object(selector: &Value) -> Option<Self> {
        let map = selector.as_object()?;
        let mut requirements = Vec::new();
        if let Some(labels) = map.get("matchLabels").and_then(Value::as_object) {
            for (key, value) in labels {
                requirements.push(Requirement {
                    key: key.clone(),
                    operator: Operator::In(vec![value.as_str().unwrap_or_default().to_owned()]),
                });
            }
        }
        for expression in map
            .get("matchExpressions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let key = meta::str_at(expression, &["key"])
                .unwrap_or_default()
                .to_owned();
            let values: Vec<String> = expression
                .get("values")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            let operator = match meta::str_at(expression, &["operator"]) {
                Some("In") => Operator::In(values),
                Some("NotIn") => Operator::NotIn(values),
                Some("Exists") => Operator::Exists,
                _ => Operator::DoesNotExist,
            };
            requirements.push(Requirement { key, operator });
        }
        Some(LabelSelector { requirements })
    }

    /// Whether the selector matches nothing specific.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Pieces of JSON text that every matching object's compact JSON (as `serde_json` writes it) contains: a
    /// `"key":"value"` member for each single-valued `=`/`in`, a `"key":` for each existence. Objects whose text
    /// lacks one need not be parsed to be ruled out.
    pub(crate) fn required_text(&self) -> Vec<String> {
        self.requirements
            .iter()
            .filter_map(|r| match &r.operator {
                Operator::In(values) if values.len() == 1 => Some(format!(
                    "{}:{}",
                    Value::from(r.key.as_str()),
                    Value::from(values[0].as_str())
                )),
                Operator::Exists => Some(format!("{}:", Value::from(r.key.as_str()))),
                _ => None,
            })
            .collect()
    }

    /// Whether an object's labels satisfy every requirement.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        let labels = meta::labels(object);
        let get = |key: &str| labels.and_then(|l| l.get(key)).and_then(Value::as_str);
        self.requirements.iter().all(|r| match &r.operator {
            Operator::In(values) => get(&r.key).is_some_and(|v| values.iter().any(|x| x == v)),
            Operator::NotIn(values) => get(&r.key).is_none_or(|v| values.iter().all(|x| x != v)),
            Operator::Exists => get(&r.key).is_some(),
            Operator::DoesNotExist => get(&r.key).is_none(),
        })
    }
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0_i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
}

fn parse_requirement(part: &str) -> Result<Requirement, ApiError> {
    let error = |why: &str| ApiError::bad_request(format!("unable to parse requirement: {why}"));
    if let Some(key) = part.strip_prefix('!') {
        let key = valid_key(key.trim()).map_err(|e| error(&e))?;
        return Ok(Requirement {
            key,
            operator: Operator::DoesNotExist,
        });
    }
    if let Some(open) = part.find('(') {
        let Some(inner) = part[open + 1..].strip_suffix(')') else {
            return Err(error(&format!("found '{part}', expected: ')'")));
        };
        let words: Vec<&str> = part[..open].split_whitespace().collect();
        let [key, op] = words.as_slice() else {
            return Err(error(&format!("found '{part}', expected: in, notin")));
        };
        let key = valid_key(key).map_err(|e| error(&e))?;
        let values = inner
            .split(',')
            .map(|v| valid_value(v.trim()).map_err(|e| error(&e)))
            .collect::<Result<Vec<_>, _>>()?;
        let operator = match *op {
            "in" => Operator::In(values),
            "notin" => Operator::NotIn(values),
            other => return Err(error(&format!("found '{other}', expected: in, notin"))),
        };
        return Ok(Requirement { key, operator });
    }
    for (token, negate) in [("!=", true), ("==", false), ("=", false)] {
        if let Some((key, value)) = part.split_once(token) {
            let key = valid_key(key.trim()).map_err(|e| error(&e))?;
            let value = valid_value(value.trim()).map_err(|e| error(&e))?;
            let operator = if negate {
                Operator::NotIn(vec![value])
            } else {
                Operator::In(vec![value])
            };
            return Ok(Requirement { key, operator });
        }
    }
    if part.contains(['<', '>']) {
        return Err(error(&format!(
            "found '{part}', expected: '=', '!=', '==', 'in', notin'"
        )));
    }
    let words: Vec<&str> = part.split_whitespace().collect();
    match words.as_slice() {
        [key] => Ok(Requirement {
            key: valid_key(key).map_err(|e| error(&e))?,
            operator: Operator::Exists,
        }),
        _ => Err(error(&format!(
            "found '{}', expected: ',' or 'end of string'",
            words.get(1).unwrap_or(&"")
        ))),
    }
}

fn valid_key(key: &str) -> Result<String, String> {
    let (prefix, name) = key.rsplit_once('/').unwrap_or(("", key));
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.len() <= 253
        && prefix
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-.".contains(c));
    if name_ok && prefix_ok && !(key.contains('/') && prefix.is_empty()) {
        Ok(key.to_owned())
    } else {
        Err(format!(
            "invalid label key \"{key}\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

fn valid_value(value: &str) -> Result<String, String> {
    if crate::registry::validation::is_label_value(value) {
        Ok(value.to_owned())
    } else {
        Err(format!(
            "invalid label value: \"{value}\": at key: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        ))
    }
}

/// A parsed field selector: `field=value`, `field==value`, `field!=value`, comma separated.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FieldSelector {
    terms: Vec<(String, String, bool)>,
}

impl FieldSelector {
    /// Parses the selector and checks every field is supported for the resource type.
    pub fn parse(text: &str, resource: &ResourceType) -> Result<Self, ApiError> {
        let mut terms = Vec::new();
        for part in split_escaped(text) {
            if part.trim().is_empty() {
                continue;
            }
            let (field, value, negate) = if let Some((f, v)) = split_unescaped(&part, "!=") {
                (f, v, true)
            } else if let Some((f, v)) = split_unescaped(&part, "==") {
                (f, v, false)
            } else if let Some((f, v)) = split_unescaped(&part, "=") {
                (f, v, false)
            } else {
                return Err(ApiError::bad_request(format!(
                    "invalid selector: '{text}'; can't understand '{part}'"
                )));
            };
            let field = field.trim().to_owned();
            if !supported_field(resource, &field) {
                return Err(ApiError::bad_request(format!(
                    "\"{field}\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"; field label not supported: {field}"
                )));
            }
            terms.push((field, unescape(&value), negate));
        }
        Ok(FieldSelector { terms })
    }

    /// Pieces of JSON text that every matching object's compact JSON contains, as
    /// [`LabelSelector::required_text`]: `"name":"x"` for `metadata.name=x` and `"namespace":"x"` for
    /// `metadata.namespace=x` (what a watch of one object by name asks for). Other fields are not strings in every
    /// kind, so they give nothing.
    pub(crate) fn required_text(&self) -> Vec<String> {
        self.terms
            .iter()
            // An empty value matches an object without the field (`metadata.namespace=`: cluster-scoped ones).
            .filter(|(_, value, negate)| !negate && !value.is_empty())
            .filter_map(|(field, value, _)| {
                let key = field
                    .strip_prefix("metadata.")
                    .filter(|key| matches!(*key, "name" | "namespace"))?;
                Some(format!(
                    "{}:{}",
                    Value::from(key),
                    Value::from(value.as_str())
                ))
            })
            .collect()
    }

    /// Whether the object satisfies every term.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        self.terms
            .iter()
            .all(|(field, value, negate)| (field_value(object, field) == *value) != *negate)
    }
}

fn split_escaped(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let current = parts.last_mut();
                if let (Some(current), Some(next)) = (current, chars.next()) {
                    current.push('\\');
                    current.push(next);
                }
            }
            ',' => parts.push(String::new()),
            other => {
                if let Some(current) = parts.last_mut() {
                    current.push(other);
                }
            }
        }
    }
    parts
}

fn split_unescaped(part: &str, token: &str) -> Option<(String, String)> {
    let mut escaped = false;
    for (i, c) in part.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        if c == '\\' {
            escaped = true;
            continue;
        }
        if part[i..].starts_with(token) {
            return Some((part[..i].to_owned(), part[i + token.len()..].to_owned()));
        }
    }
    None
}

fn unescape(value: &str) -> String {
    let mut out = String::new();
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(next) = chars.next() {
                out.push(next);
            }
        } else {
            out.push(c);
        }
    }
    out
}

fn supported_field(resource: &ResourceType, field: &str) -> bool {
    if field == "metadata.name" || field == "metadata.namespace" {
        return true;
    }
    if resource.is_custom() {
        // Selectable fields of custom resources (`selectableFields`) are not served.
        return false;
    }
    let extra: &[&str] = match resource.plural {
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
        ],
        "jobs" => &["status.successful"],
        "events" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "namespaces" => &["status.phase"],
        _ => &[],
    };
    extra.contains(&field)
}

fn field_value(object: &Value, field: &str) -> String {
    let path: Vec<&str> = match field {
        "status.successful" => vec!["status", "succeeded"],
        "source" => vec!["source", "component"],
        "status.podIPs" => vec!["status", "podIP"],
        other => other.split('.').collect(),
    };
    match meta::at(object, &path) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::Bool(b)) => b.to_string(),
        _ => match field {
            "status.successful" => "0".to_owned(),
            "spec.hostNetwork" => "false".to_owned(),
            _ => String::new(),
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::find;

    fn object(labels: &Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_selectors_support_every_operator() {
        let o = object(&json!({"app": "web", "tier": "front"}));
        let cases = [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app!=db", true),
            ("missing!=x", true),
            ("app in (db, web)", true),
            ("app notin (db,web)", false),
            ("missing notin (x)", true),
            ("tier", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier=back", false),
            (" app = web , tier ", true),
            ("", true),
        ];
        let json = o.to_string();
        for (text, expected) in cases {
            let selector = LabelSelector::parse(text).expect(text);
            assert_eq!(selector.matches(&o), expected, "{text}");
            let in_text = selector
                .required_text()
                .iter()
                .all(|piece| json.contains(piece.as_str()));
            assert!(
                in_text || !expected,
                "{text}: a match ruled out by its text"
            );
        }
        let texts = |selector: &str| {
            LabelSelector::parse(selector)
                .expect(selector)
                .required_text()
        };
        assert_eq!(
            texts("app=web,tier in (front),env,!gone,x notin (y),y in (a,b)"),
            [r#""app":"web""#, r#""tier":"front""#, r#""env":"#]
        );
        assert!(
            !json.contains(&texts("app=db")[0]),
            "an object is ruled out by its text"
        );
    }

    #[test]
    fn malformed_label_selectors_are_bad_requests() {
        for text in ["app in (a", "a b", "x>1", "-bad=1"] {
            let error = LabelSelector::parse(text).expect_err(text);
            assert_eq!(error.code, 400, "{text}");
            assert!(
                error.message.starts_with("unable to parse requirement"),
                "{}",
                error.message
            );
        }
    }

    #[test]
    fn selector_objects_match_like_the_string_form() {
        let selector = LabelSelector::from_object(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["front"]}]
        }))
        .expect("object");
        assert!(selector.matches(&object(&json!({"app": "web", "tier": "front"}))));
        assert!(!selector.matches(&object(&json!({"app": "web"}))));
    }

    #[test]
    fn a_field_selector_by_name_or_namespace_rules_objects_out_by_their_text() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let selector = FieldSelector::parse(
            "metadata.name=migrate,metadata.namespace=ns,status.successful=1",
            jobs,
        )
        .expect("parses");
        assert_eq!(
            selector.required_text(),
            [r#""name":"migrate""#, r#""namespace":"ns""#]
        );
        let job =
            json!({"metadata": {"name": "migrate", "namespace": "ns"}, "status": {"succeeded": 1}});
        let text = job.to_string();
        assert!(selector.matches(&job));
        assert!(
            selector
                .required_text()
                .iter()
                .all(|piece| text.contains(piece.as_str()))
        );
        // Negated and empty terms, and other fields, say nothing about the text.
        let loose = FieldSelector::parse(
            "metadata.name!=a,metadata.namespace=,status.successful=1",
            jobs,
        )
        .expect("parses");
        assert!(loose.required_text().is_empty());
    }

    #[test]
    fn field_selectors_match_supported_fields_and_reject_others() {
        let pods = find("", "v1", "pods").expect("served");
        let pod =
            json!({"metadata": {"name": "a", "namespace": "ns"}, "status": {"phase": "Running"}});
        assert!(
            FieldSelector::parse("metadata.name=a,status.phase!=Failed", pods)
                .expect("parses")
                .matches(&pod)
        );
        assert!(
            !FieldSelector::parse("metadata.namespace==other", pods)
                .expect("parses")
                .matches(&pod)
        );
        let error = FieldSelector::parse("spec.foo=x", pods).expect_err("unsupported");
        assert!(
            error
                .message
                .contains("field label not supported: spec.foo")
        );
        assert_eq!(
            FieldSelector::parse("nonsense", pods)
                .expect_err("syntax")
                .code,
            400
        );
        let jobs = find("batch", "v1", "jobs").expect("served");
        let selector = FieldSelector::parse("status.successful=0", jobs).expect("parses");
        assert!(selector.matches(&json!({"metadata": {"name": "j"}})));
    }
}
