//! Validation of a custom resource against its schema, worded as kube-openapi's validator and the
//! apiextensions-apiserver's translation of its results into field errors word it: the detail names the field
//! again (`spec.replicas in body must be of type integer: "string"`), and failed `anyOf`/`oneOf`/`allOf`/`not`
//! are reported on the path `<nil>` with the value `""`, as a 1.33 API server does.

use serde_json::{Map, Number, Value, json};

use super::{JsonType, ListType, Node, index, join};
use crate::registry::api_error::{FieldError, FieldErrorKind, render_value};

/// Validates `value` against `node`; `prefix` is the field path of `value` itself (empty for a resource,
/// `….default` for a default checked at compile time), while the details name fields relative to `value`.
pub(super) fn validate(value: &Value, node: &Node, prefix: &str) -> Vec<FieldError> {
    let mut validator = Validator {
        prefix,
        errors: Vec::new(),
    };
    validator.node(value, node, "");
    validator.errors
}

struct Validator<'a> {
    prefix: &'a str,
    errors: Vec<FieldError>,
}

impl Validator<'_> {
    /// The field path of the error: Go's nil path prints as `<nil>`.
    fn field(&self, name: &str) -> String {
        match (self.prefix.is_empty(), name.is_empty()) {
            (true, true) => "<nil>".to_owned(),
            (false, true) => self.prefix.to_owned(),
            (true, false) => name.to_owned(),
            (false, false) if name.starts_with('[') => format!("{}{name}", self.prefix),
            (false, false) => format!("{}.{name}", self.prefix),
        }
    }

    fn invalid(&mut self, name: &str, value: &Value, detail: String) {
        let field = self.field(name);
        self.errors.push(FieldError::invalid(field, value, detail));
    }

    fn node(&mut self, value: &Value, node: &Node, name: &str) {
        if value.is_null() {
            if (node.kind.is_some() || node.ext.int_or_string) && !node.nullable {
                self.type_error(node, name, "null");
            }
            self.enumeration(value, node, name);
            return;
        }
        self.check_type(value, node, name);
        self.junctors(value, node, name);
        match value {
            Value::String(text) => self.string(text, value, node, name),
            Value::Number(number) => self.number(number, value, node, name),
            Value::Array(items) => self.array(items, node, name),
            _ => {}
        }
        self.enumeration(value, node, name);
        if let Value::Object(map) = value {
            self.object(map, node, name);
        }
    }

    fn expected_type(node: &Node) -> Option<&'static str> {
        if node.ext.int_or_string {
            Some("integer,string")
        } else {
            node.kind.map(JsonType::name)
        }
    }

    fn type_error(&mut self, node: &Node, name: &str, actual: &str) {
        let expected = Self::expected_type(node).unwrap_or_default();
        // The value shown is the JSON type found, not the value itself, as kube-openapi reports it.
        self.invalid(
            name,
            &json!(actual),
            format!("{name} in body must be of type {expected}: \"{actual}\""),
        );
    }

    fn check_type(&mut self, value: &Value, node: &Node, name: &str) {
        if Self::expected_type(node).is_none() {
            return;
        }
        let integral = value.as_f64().is_some_and(|f| f.fract() == 0.0);
        let actual = match value {
            Value::Null => "null",
            Value::Bool(_) => "boolean",
            Value::Number(n) if n.is_f64() => "number",
            Value::Number(_) => "integer",
            Value::String(_) => "string",
            Value::Array(_) => "array",
            Value::Object(_) => "object",
        };
        let matches = |kind: JsonType| {
            kind.name() == actual
                // A float without a fraction counts as an integer and any integer as a number.
                || (kind == JsonType::Integer && actual == "number" && integral)
                || (kind == JsonType::Number && actual == "integer")
        };
        let ok = if node.ext.int_or_string {
            matches(JsonType::Integer) || matches(JsonType::String)
        } else {
            node.kind.is_some_and(matches)
        };
        if !ok {
            self.type_error(node, name, actual);
        }
    }

    /// Runs a branch on its own, to tell whether it holds and with which errors.
    fn branch(&self, value: &Value, node: &Node, name: &str) -> Vec<FieldError> {
        let mut sub = Validator {
            prefix: self.prefix,
            errors: Vec::new(),
        };
        sub.node(value, node, name);
        sub.errors
    }

    fn composite(&mut self, detail: String) {
        self.invalid("", &json!(""), detail);
    }

    fn junctors(&mut self, value: &Value, node: &Node, name: &str) {
        let quoted = Value::from(name).to_string();
        if !node.any_of.is_empty() {
            let results: Vec<Vec<FieldError>> = node
                .any_of
                .iter()
                .map(|b| self.branch(value, b, name))
                .collect();
            if !results.iter().any(Vec::is_empty) {
                self.composite(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                ));
                if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                    self.errors.extend(best);
                }
            }
        }
        if !node.one_of.is_empty() {
            let results: Vec<Vec<FieldError>> = node
                .one_of
                .iter()
                .map(|b| self.branch(value, b, name))
                .collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != 1 {
                let found = if valid == 0 {
                    "Found none valid".to_owned()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                self.composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {found}"
                ));
                if valid == 0
                    && let Some(best) = results.into_iter().min_by_key(Vec::len)
                {
                    self.errors.extend(best);
                }
            }
        }
        if !node.all_of.is_empty() {
            let mut valid = 0;
            for branch in &node.all_of {
                let errors = self.branch(value, branch, name);
                valid += usize::from(errors.is_empty());
                self.errors.extend(errors);
            }
            if valid != node.all_of.len() {
                let suffix = if valid == 0 { ". None validated" } else { "" };
                self.composite(format!(
                    "{quoted} must validate all the schemas (allOf){suffix}"
                ));
            }
        }
        if let Some(not) = &node.not
            && self.branch(value, not, name).is_empty()
        {
            self.composite(format!("{quoted} must not validate the schema (not)"));
        }
    }

    fn string(&mut self, text: &str, value: &Value, node: &Node, name: &str) {
        let length = u64::try_from(text.chars().count()).unwrap_or(u64::MAX);
        if let Some(max) = node.max_length
            && length > max
        {
            self.errors.push(FieldError {
                kind: FieldErrorKind::TooLong(usize::try_from(max).unwrap_or(usize::MAX)),
                field: self.field(name),
                detail: String::new(),
            });
        }
        if let Some(min) = node.min_length
            && length < min
        {
            self.invalid(
                name,
                value,
                format!("{name} in body should be at least {min} chars long"),
            );
        }
        let Some(format) = node.format.as_deref() else {
            return;
        };
        let valid = match format {
            "date-time" | "datetime" => {
                text.parse::<jiff::Timestamp>().is_ok()
                    || text.parse::<jiff::civil::DateTime>().is_ok()
            }
            "date" => text.parse::<jiff::civil::Date>().is_ok(),
            "byte" => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(text)
                    .is_ok()
            }
            _ => true,
        };
        if !valid {
            let quoted = value.to_string();
            self.invalid(
                name,
                value,
                format!("{name} in body must be of type {format}: {quoted}"),
            );
        }
    }

    fn number(&mut self, number: &Number, value: &Value, node: &Node, name: &str) {
        self.range(number, value, node, name);
        // Every JSON number this crate decodes has an f64 view; the u64/i64 extremes round, as in Go.
        let Some(data) = number.as_f64() else {
            return;
        };
        if let Some(factor) = node.multiple_of
            && (data / factor).fract() != 0.0
        {
            self.invalid(
                name,
                value,
                format!("{name} in body should be a multiple of {factor}"),
            );
        }
        if let Some(max) = node.maximum {
            if max.exclusive && data >= max.limit {
                let limit = max.limit;
                self.invalid(
                    name,
                    value,
                    format!("{name} in body should be less than {limit}"),
                );
            } else if data > max.limit {
                let limit = max.limit;
                self.invalid(
                    name,
                    value,
                    format!("{name} in body should be less than or equal to {limit}"),
                );
            }
        }
        if let Some(min) = node.minimum {
            if min.exclusive && data <= min.limit {
                let limit = min.limit;
                self.invalid(
                    name,
                    value,
                    format!("{name} in body should be greater than {limit}"),
                );
            } else if data < min.limit {
                let limit = min.limit;
                self.invalid(
                    name,
                    value,
                    format!("{name} in body should be greater than or equal to {limit}"),
                );
            }
        }
    }

    /// kube-openapi's capacity check of integers against their `format` (int64 when there is none).
    fn range(&mut self, number: &Number, value: &Value, node: &Node, name: &str) {
        let integer = node.ext.int_or_string || node.kind == Some(JsonType::Integer);
        if !integer {
            return;
        }
        let as_i64 = number.as_i64().or_else(|| {
            number
                .as_f64()
                .filter(|f| f.fract() == 0.0 && f.abs() < 2f64.powi(63))
                // Truncation cannot happen: the value is integral and inside the i64 range.
                .map(|f| {
                    #[expect(clippy::cast_possible_truncation, reason = "checked just above")]
                    let i = f as i64;
                    i
                })
        });
        let format = node.format.as_deref();
        let fits = match (as_i64, format) {
            (Some(i), Some("int32")) => i32::try_from(i).is_ok(),
            (Some(_), _) => true,
            (None, _) => false,
        };
        if !fits {
            let kind = match format {
                Some(f @ ("int32" | "int64")) => format!("integer ({f})"),
                _ => "integer".to_owned(),
            };
            self.invalid(
                name,
                value,
                format!("{name} in Checked must be of type {kind}"),
            );
        }
    }

    fn array(&mut self, items: &[Value], node: &Node, name: &str) {
        let count = items.len();
        if let Some(min) = node.min_items
            && (count as u64) < min
        {
            self.invalid(
                name,
                &json!(count),
                format!("{name} in body should have at least {min} items"),
            );
        }
        if let Some(max) = node.max_items
            && (count as u64) > max
        {
            self.too_many(name, count, max);
        }
        if let Some(item) = node.items.as_deref() {
            for (i, entry) in items.iter().enumerate() {
                self.node(entry, item, &index(name, i));
            }
        }
        match &node.list {
            ListType::Atomic => {}
            ListType::Set => {
                let mut reported: Vec<&Value> = Vec::new();
                for (i, entry) in items.iter().enumerate() {
                    if items[..i].iter().any(|seen| same(seen, entry))
                        && !reported.iter().any(|r| same(r, entry))
                    {
                        reported.push(entry);
                        let field = self.field(name);
                        self.errors.push(FieldError::duplicate(field, entry));
                    }
                }
            }
            ListType::Map(keys) => {
                let key_of = |entry: &Value| -> Map<String, Value> {
                    keys.iter()
                        .filter_map(|k| entry.get(k).map(|v| (k.clone(), v.clone())))
                        .collect()
                };
                let identities: Vec<Map<String, Value>> = items.iter().map(key_of).collect();
                for (i, identity) in identities.iter().enumerate() {
                    if identities[..i].contains(identity) {
                        let field = self.field(&index(name, i));
                        self.errors.push(FieldError::duplicate(
                            field,
                            &Value::Object(identity.clone()),
                        ));
                    }
                }
            }
        }
    }

    fn too_many(&mut self, name: &str, count: usize, max: u64) {
        let unit = if max == 1 { "item" } else { "items" };
        self.errors.push(FieldError {
            kind: FieldErrorKind::TooMany(count),
            field: self.field(name),
            detail: format!("must have at most {max} {unit}"),
        });
    }

    fn enumeration(&mut self, value: &Value, node: &Node, name: &str) {
        let Some(allowed) = &node.enumeration else {
            return;
        };
        if allowed.iter().any(|a| same(a, value)) {
            return;
        }
        // Kubernetes lists string values bare (the renderer quotes them) and the others as JSON.
        let supported = allowed
            .iter()
            .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
            .collect();
        self.errors.push(FieldError {
            kind: FieldErrorKind::NotSupported(render_value(value), supported),
            field: self.field(name),
            detail: String::new(),
        });
    }

    fn object(&mut self, map: &Map<String, Value>, node: &Node, name: &str) {
        let count = map.len();
        if let Some(min) = node.min_properties
            && (count as u64) < min
        {
            self.invalid(
                name,
                &json!(count),
                format!("{name} in body should have at least {min} properties"),
            );
        }
        if let Some(max) = node.max_properties
            && (count as u64) > max
        {
            self.too_many(name, count, max);
        }
        if let Some(additional) = node.additional.as_deref() {
            for (key, field) in map {
                if !node.properties.contains_key(key) {
                    self.node(field, additional, &join(name, key));
                }
            }
        }
        for key in &node.required {
            if !map.contains_key(key) {
                let field = self.field(&join(name, key));
                self.errors.push(FieldError::required(field, ""));
            }
        }
        for (key, property) in &node.properties {
            if let Some(field) = map.get(key) {
                self.node(field, property, &join(name, key));
            }
        }
        if node.ext.embedded {
            self.embedded(map, name);
        }
    }

    /// What the API server checks of an embedded resource beyond its schema: a non-empty type.
    fn embedded(&mut self, map: &Map<String, Value>, name: &str) {
        for key in ["apiVersion", "kind"] {
            if !map.contains_key(key) {
                let field = self.field(&join(name, key));
                self.errors
                    .push(FieldError::required(field, "must not be empty"));
            }
        }
        for key in ["apiVersion", "kind"] {
            match map.get(key) {
                Some(Value::String(text)) if text.is_empty() => {
                    self.invalid(&join(name, key), &json!(""), "must not be empty".to_owned());
                }
                Some(Value::String(_)) | None => {}
                Some(other) => {
                    self.invalid(&join(name, key), other, "must be a string".to_owned());
                }
            }
        }
    }
}

/// JSON equality with numbers compared by value, so that `1` matches `1.0` as in Go.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}
