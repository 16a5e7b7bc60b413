//! Custom resource definitions (`apiextensions.k8s.io/v1` `CustomResourceDefinition`): their defaults and validation, and the work of the
//! API server's apiextensions controllers, done synchronously under the store lock after every write that
//! touches a definition — the naming controller (`NamesAccepted`, `acceptedNames`), establishing (`Established`,
//! which makes the custom types served, in [`crate::registry::custom::Types`]) and the finalizer that deletes
//! every custom resource of a definition being deleted before the definition goes.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use crate::registry::api_error::FieldError;
use crate::registry::custom::{self, Description, PrinterColumn};
use crate::registry::delete::{self, DeleteOptions};
use crate::registry::meta;
use crate::registry::resources::{self, RESOURCES, ResourceType};
use crate::registry::store::{Inner, ObjectKey};

/// The finalizer that holds a deleted definition until its custom resources are gone.
pub(crate) const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const COLUMN_TYPES: [&str; 5] = ["boolean", "date", "integer", "number", "string"];
const COLUMN_FORMATS: [&str; 9] = [
    "byte",
    "date",
    "date-time",
    "float",
    "double",
    "int32",
    "int64",
    "password",
    "",
];

fn text<'a>(value: &'a Value, path: &[&str]) -> &'a str {
    meta::str_at(value, path).unwrap_or_default()
}

fn strings(value: &Value, path: &[&str]) -> Vec<String> {
    meta::at(value, path)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn versions(definition: &Value) -> &[Value] {
    meta::at(definition, &["spec", "versions"])
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn storage_version(definition: &Value) -> Option<&str> {
    versions(definition)
        .iter()
        .find(|v| v.get("storage") == Some(&Value::Bool(true)))
        .and_then(|v| v.get("name")?.as_str())
}

/// Decode-time defaults: `singular` and `listKind` from the kind, conversion strategy None.
pub(crate) fn apply_defaults(definition: &mut Value) {
    let names = meta::map_at(definition, &["spec", "names"]);
    let kind = names
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let unset = |names: &Map<String, Value>, key: &str| {
        names
            .get(key)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
    };
    if unset(names, "singular") {
        names.insert("singular".into(), json!(kind.to_lowercase()));
    }
    if unset(names, "listKind") && !kind.is_empty() {
        names.insert("listKind".into(), json!(format!("{kind}List")));
    }
    let spec = meta::map_at(definition, &["spec"]);
    if spec.get("conversion").is_none_or(Value::is_null) {
        spec.insert("conversion".into(), json!({"strategy": "None"}));
    }
}

/// Create-time status: only the stored version (the controllers below fill in the rest).
pub(crate) fn prepare_create(definition: &mut Value) {
    let stored: Vec<&str> = storage_version(definition).into_iter().collect();
    let status = json!({"storedVersions": stored});
    meta::set_at(definition, &["status"], status);
}

fn dns1035_errors(field: &str, value: &str, prefix: &str) -> Vec<FieldError> {
    let lower = value.to_lowercase();
    let mut problems = Vec::new();
    if lower.len() > 63 {
        problems.push("must be no more than 63 characters".to_owned());
    }
    let valid = lower.starts_with(|c: char| c.is_ascii_lowercase())
        && lower.ends_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && lower
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !valid {
        problems.push(DNS1035.to_owned());
    }
    if problems.is_empty() {
        return Vec::new();
    }
    vec![FieldError::invalid(
        field,
        &json!(value),
        format!("{prefix}{}", problems.join(",")),
    )]
}

fn is_subdomain(text: &str) -> bool {
    text.len() <= 253
        && text.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// The errors of a definition, as the API server's validation words them.
pub(crate) fn validate(definition: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let group = text(definition, &["spec", "group"]);
    let plural = text(definition, &["spec", "names", "plural"]);
    let name = meta::name(definition);
    if name != format!("{plural}.{group}") {
        errors.push(FieldError::invalid(
            "metadata.name",
            &json!(name),
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    if group.is_empty() {
        errors.push(FieldError::required("spec.group", ""));
    } else if !is_subdomain(group) {
        errors.push(FieldError::invalid("spec.group", &json!(group), "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"));
    } else if !group.contains('.') {
        errors.push(FieldError::invalid(
            "spec.group",
            &json!(group),
            "should be a domain with at least one dot",
        ));
    }
    errors.extend(names_errors(definition));
    match text(definition, &["spec", "scope"]) {
        "" => errors.push(FieldError::required("spec.scope", "")),
        "Cluster" | "Namespaced" => {}
        other => errors.push(FieldError::not_supported(
            "spec.scope",
            &json!(other),
            &["Cluster", "Namespaced"],
        )),
    }
    errors.extend(versions_errors(definition));
    match text(definition, &["spec", "conversion", "strategy"]) {
        "None" => {}
        other => errors.push(FieldError::not_supported(
            "spec.conversion.strategy",
            &json!(other),
            &["None"],
        )),
    }
    errors
}

fn names_errors(definition: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let names = meta::at(definition, &["spec", "names"]).unwrap_or(&Value::Null);
    for (field, lowercase) in [
        ("plural", true),
        ("singular", true),
        ("kind", false),
        ("listKind", false),
    ] {
        let value = text(names, &[field]);
        let path = format!("spec.names.{field}");
        if value.is_empty() {
            errors.push(FieldError::required(path, ""));
        } else if lowercase {
            errors.extend(dns1035_errors(&path, value, ""));
        } else {
            errors.extend(dns1035_errors(
                &path,
                value,
                "may have mixed case, but should otherwise match: ",
            ));
        }
    }
    let kind = text(names, &["kind"]);
    if !kind.is_empty() && kind == text(names, &["listKind"]) {
        errors.push(FieldError::invalid(
            "spec.names.listKind",
            &json!(kind),
            "kind and listKind may not be the same or parsing become ambiguous",
        ));
    }
    for field in ["shortNames", "categories"] {
        for (i, value) in strings(names, &[field]).iter().enumerate() {
            errors.extend(dns1035_errors(
                &format!("spec.names.{field}[{i}]"),
                value,
                "",
            ));
        }
    }
    errors
}

fn versions_errors(definition: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let versions = versions(definition);
    let summary = Value::Array(versions.iter().map(|v| json!(text(v, &["name"]))).collect());
    let mut seen = HashSet::new();
    for (i, version) in versions.iter().enumerate() {
        let path = format!("spec.versions[{i}]");
        let name = text(version, &["name"]);
        if !seen.insert(name) {
            errors.push(FieldError::invalid(
                "spec.versions",
                &summary,
                "must contain unique version names",
            ));
        }
        errors.extend(dns1035_errors(&format!("{path}.name"), name, ""));
        match meta::at(version, &["schema", "openAPIV3Schema"]) {
            None | Some(Value::Null) => errors.push(FieldError::required(
                format!("{path}.schema.openAPIV3Schema"),
                "schemas are required",
            )),
            Some(schema) => {
                for mut error in custom::check_schema(schema) {
                    error.field = format!("{path}.schema.openAPIV3Schema.{}", error.field);
                    errors.push(error);
                }
            }
        }
        if let Some(scale) = meta::at(version, &["subresources", "scale"]) {
            errors.extend(scale_errors(&format!("{path}.subresources.scale"), scale));
        }
        for (j, column) in meta::at(version, &["additionalPrinterColumns"])
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            errors.extend(column_errors(
                &format!("{path}.additionalPrinterColumns[{j}]"),
                column,
            ));
        }
    }
    if versions.is_empty() {
        errors.push(FieldError::required(
            "spec.versions",
            "must have at least one version",
        ));
    }
    let storage = versions
        .iter()
        .filter(|v| v.get("storage") == Some(&Value::Bool(true)))
        .count();
    if storage != 1 {
        errors.push(FieldError::invalid(
            "spec.versions",
            &summary,
            "must have exactly one version marked as storage version",
        ));
    }
    if !versions.is_empty()
        && !versions
            .iter()
            .any(|v| v.get("served") == Some(&Value::Bool(true)))
    {
        errors.push(FieldError::invalid(
            "spec.versions",
            &summary,
            "must have at least one version marked as served",
        ));
    }
    errors
}

fn scale_errors(path: &str, scale: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (field, under) in [
        ("specReplicasPath", ".spec."),
        ("statusReplicasPath", ".status."),
    ] {
        let value = text(scale, &[field]);
        if value.is_empty() {
            errors.push(FieldError::required(format!("{path}.{field}"), ""));
        } else if !value.starts_with(under) {
            errors.push(FieldError::invalid(
                format!("{path}.{field}"),
                &json!(value),
                format!(
                    "should be a json path under {}",
                    under.trim_end_matches('.')
                ),
            ));
        }
    }
    let selector = text(scale, &["labelSelectorPath"]);
    if !selector.is_empty() && !selector.starts_with(".spec.") && !selector.starts_with(".status.")
    {
        errors.push(FieldError::invalid(
            format!("{path}.labelSelectorPath"),
            &json!(selector),
            "should be a json path under either .spec or .status",
        ));
    }
    errors
}

fn column_errors(path: &str, column: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if text(column, &["name"]).is_empty() {
        errors.push(FieldError::required(format!("{path}.name"), ""));
    }
    match text(column, &["type"]) {
        "" => errors.push(FieldError::required(
            format!("{path}.type"),
            format!("must be one of {}", COLUMN_TYPES.join(",")),
        )),
        kind if COLUMN_TYPES.contains(&kind) => {}
        other => errors.push(FieldError::not_supported(
            format!("{path}.type"),
            &json!(other),
            &COLUMN_TYPES,
        )),
    }
    let format = text(column, &["format"]);
    if !COLUMN_FORMATS.contains(&format) {
        errors.push(FieldError::not_supported(
            format!("{path}.format"),
            &json!(format),
            &COLUMN_FORMATS[..8],
        ));
    }
    if text(column, &["jsonPath"]).is_empty() {
        errors.push(FieldError::required(format!("{path}.jsonPath"), ""));
    }
    errors
}

/// The condition a delete of a definition sets, beside the cleanup finalizer.
pub(crate) fn mark_terminating(definition: &mut Value, now: &str) {
    set_condition(
        definition,
        "Terminating",
        true,
        "InstanceDeletionPending",
        "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
        now,
    );
}

/// Sets a condition, keeping its transition time when its status does not change.
fn set_condition(
    definition: &mut Value,
    kind: &str,
    status: bool,
    reason: &str,
    message: &str,
    now: &str,
) {
    let status = if status { "True" } else { "False" };
    let conditions = meta::map_at(definition, &["status"])
        .entry("conditions")
        .or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    let mut condition = json!({"type": kind, "status": status, "lastTransitionTime": now, "reason": reason, "message": message});
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(existing) => {
            if existing["status"] == status {
                condition["lastTransitionTime"] = existing["lastTransitionTime"].clone();
            }
            *existing = condition;
        }
        None => list.push(condition),
    }
}

fn condition_is_true(definition: &Value, kind: &str) -> bool {
    meta::at(definition, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .any(|c| c["type"] == kind && c["status"] == "True")
}

/// Runs the controllers when the write changed a definition, or a custom resource while a definition is
/// being deleted.
pub(crate) fn reconcile(s: &mut Inner) {
    let crds = resources::crds();
    let definitions = s.pending().iter().any(|c| c.resource.is(crds));
    let instances = s.pending().iter().any(|c| c.resource.is_custom());
    if definitions || (instances && s.list(crds, None).any(|d| meta::is_deleting(&d))) {
        establish(s);
    }
}

/// The names a definition claims, checked in the order the naming controller checks them.
struct Names {
    group: String,
    /// (name, conflict reason) for plural, singular and short names, which share one namespace.
    resources: Vec<(String, &'static str)>,
    /// (kind, conflict reason) for kind and list kind.
    kinds: Vec<(String, &'static str)>,
}

impl Names {
    fn of(definition: &Value) -> Names {
        let names = meta::at(definition, &["spec", "names"]).unwrap_or(&Value::Null);
        let mut resources = vec![
            (text(names, &["plural"]).to_owned(), "PluralConflict"),
            (text(names, &["singular"]).to_owned(), "SingularConflict"),
        ];
        resources.extend(
            strings(names, &["shortNames"])
                .into_iter()
                .map(|n| (n, "ShortNamesConflict")),
        );
        Names {
            group: text(definition, &["spec", "group"]).to_owned(),
            resources,
            kinds: vec![
                (text(names, &["kind"]).to_owned(), "KindConflict"),
                (text(names, &["listKind"]).to_owned(), "ListKindConflict"),
            ],
        }
    }
}

/// The names already taken in each group: the built-in types', then each accepted definition's.
#[derive(Default)]
struct Taken {
    resources: HashSet<(String, String)>,
    kinds: HashSet<(String, String)>,
}

impl Taken {
    fn built_in() -> Taken {
        let mut taken = Taken::default();
        for r in RESOURCES {
            let group = r.group.to_owned();
            for name in std::iter::once(r.plural)
                .chain(std::iter::once(r.singular))
                .chain(r.short_names.iter().copied())
            {
                taken.resources.insert((group.clone(), name.to_owned()));
            }
            taken.kinds.insert((group.clone(), r.kind.to_owned()));
            taken.kinds.insert((group, r.list_kind()));
        }
        taken
    }

    /// The first conflict of `names`: (reason, the name in use).
    fn conflict(&self, names: &Names) -> Option<(&'static str, String)> {
        let group = &names.group;
        names
            .resources
            .iter()
            .find(|(name, _)| self.resources.contains(&(group.clone(), name.clone())))
            .or_else(|| {
                names
                    .kinds
                    .iter()
                    .find(|(kind, _)| self.kinds.contains(&(group.clone(), kind.clone())))
            })
            .map(|(name, reason)| (*reason, name.clone()))
    }

    fn take(&mut self, names: Names) {
        for (name, _) in names.resources {
            self.resources.insert((names.group.clone(), name));
        }
        for (kind, _) in names.kinds {
            self.kinds.insert((names.group.clone(), kind));
        }
    }
}

/// The naming and establishing controllers and the cleanup finalizer, unconditionally (also at restore).
pub(crate) fn establish(s: &mut Inner) {
    let crds = resources::crds();
    let now = meta::now(s.clock());
    let mut definitions: Vec<Value> = s.list(crds, None).collect();
    // Definitions that hold their names keep them; newer ones conflict with them, not the other way round.
    definitions.sort_by(|a, b| {
        let key = |d: &Value| {
            (
                !condition_is_true(d, "NamesAccepted"),
                text(d, &["metadata", "creationTimestamp"]).to_owned(),
                meta::name(d).to_owned(),
            )
        };
        key(a).cmp(&key(b))
    });
    let mut taken = Taken::built_in();
    let mut served = Vec::new();
    for definition in definitions {
        let mut updated = definition.clone();
        let names = Names::of(&definition);
        let accepted = if let Some((reason, name)) = taken.conflict(&names) {
            let message = format!("\"{name}\" is already in use");
            set_condition(&mut updated, "NamesAccepted", false, reason, &message, &now);
            set_condition(
                &mut updated,
                "Established",
                false,
                "NotAccepted",
                "not all names are accepted",
                &now,
            );
            false
        } else {
            taken.take(names);
            set_condition(
                &mut updated,
                "NamesAccepted",
                true,
                "NoConflicts",
                "no conflicts found",
                &now,
            );
            set_condition(
                &mut updated,
                "Established",
                true,
                "InitialNamesAccepted",
                "the initial names have been accepted",
                &now,
            );
            meta::set_at(
                &mut updated,
                &["status", "acceptedNames"],
                accepted_names(&definition),
            );
            true
        };
        if let Some(storage) = storage_version(&definition) {
            let mut stored = strings(&updated, &["status", "storedVersions"]);
            if !stored.iter().any(|v| v == storage) {
                stored.push(storage.to_owned());
                meta::set_at(&mut updated, &["status", "storedVersions"], json!(stored));
            }
        }
        let types = if accepted {
            types_of(&updated)
        } else {
            Vec::new()
        };
        if meta::is_deleting(&updated) && clean_up(s, &types, &mut updated, &now) {
            continue;
        }
        if updated != definition {
            s.update(crds, updated);
        }
        served.extend(types);
    }
    s.custom.set(served);
}

fn accepted_names(definition: &Value) -> Value {
    let names = meta::at(definition, &["spec", "names"]).unwrap_or(&Value::Null);
    let mut accepted = json!({
        "plural": text(names, &["plural"]),
        "singular": text(names, &["singular"]),
        "kind": text(names, &["kind"]),
        "listKind": text(names, &["listKind"]),
    });
    for field in ["shortNames", "categories"] {
        let values = strings(names, &[field]);
        if !values.is_empty() {
            accepted[field] = json!(values);
        }
    }
    accepted
}

/// How Kubernetes orders versions (`version.CompareKubeAwareVersionStrings`): GA before beta before alpha,
/// higher numbers first, then anything else alphabetically. Discovery lists a group's versions this way and
/// clients use the first, the preferred one.
fn version_priority(name: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    let parsed = name.strip_prefix('v').and_then(|rest| {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let major: u64 = rest[..digits].parse().ok()?;
        let tail = &rest[digits..];
        if tail.is_empty() {
            return Some((0, major, 0));
        }
        let (level, minor) = if let Some(minor) = tail.strip_prefix("beta") {
            (1, minor)
        } else {
            (2, tail.strip_prefix("alpha")?)
        };
        Some((level, major, minor.parse().ok()?))
    });
    match parsed {
        Some((level, major, minor)) => (
            level,
            std::cmp::Reverse(major),
            std::cmp::Reverse(minor),
            String::new(),
        ),
        None => (
            3,
            std::cmp::Reverse(0),
            std::cmp::Reverse(0),
            name.to_owned(),
        ),
    }
}

/// The types of every version of an accepted definition, in version priority order.
fn types_of(definition: &Value) -> Vec<&'static ResourceType> {
    let names = meta::at(definition, &["status", "acceptedNames"]).unwrap_or(&Value::Null);
    let storage = storage_version(definition).unwrap_or_default();
    let mut versions: Vec<&Value> = versions(definition).iter().collect();
    versions.sort_by_key(|v| version_priority(text(v, &["name"])));
    versions
        .into_iter()
        .map(|version| {
            let columns: Vec<PrinterColumn> = version
                .get("additionalPrinterColumns")
                .and_then(|c| serde_json::from_value(c.clone()).ok())
                .unwrap_or_default();
            custom::intern(Description {
                definition: meta::name(definition).to_owned(),
                group: text(definition, &["spec", "group"]).to_owned(),
                version: text(version, &["name"]).to_owned(),
                plural: text(names, &["plural"]).to_owned(),
                singular: text(names, &["singular"]).to_owned(),
                kind: text(names, &["kind"]).to_owned(),
                list_kind: text(names, &["listKind"]).to_owned(),
                namespaced: text(definition, &["spec", "scope"]) == "Namespaced",
                short_names: strings(names, &["shortNames"]),
                categories: strings(names, &["categories"]),
                served: version.get("served") == Some(&Value::Bool(true)),
                storage_version: storage.to_owned(),
                status: meta::at(version, &["subresources", "status"])
                    .is_some_and(Value::is_object),
                schema: meta::at(version, &["schema", "openAPIV3Schema"]).cloned(),
                columns,
            })
        })
        .collect()
}

/// The cleanup finalizer of a definition being deleted: deletes its custom resources and, once they are all
/// gone, removes the finalizer. Returns whether the definition is gone.
fn clean_up(
    s: &mut Inner,
    types: &[&'static ResourceType],
    definition: &mut Value,
    now: &str,
) -> bool {
    if !meta::finalizers(definition)
        .iter()
        .any(|f| f == CLEANUP_FINALIZER)
    {
        return false;
    }
    let storage = types
        .iter()
        .copied()
        .find(|r| r.custom.is_some_and(|c| c.storage_version == r.version));
    if let Some(storage) = storage {
        let keys: Vec<ObjectKey> = s
            .list(storage, None)
            .filter(|o| !meta::is_deleting(o))
            .map(|o| ObjectKey::of(storage, &o))
            .collect();
        for key in keys {
            // The key was just listed under the lock, so the object exists and the delete has no precondition.
            let _ = delete::delete_in(s, storage, &key, &DeleteOptions::default());
        }
        if s.list(storage, None).next().is_some() {
            set_condition(
                definition,
                "Terminating",
                true,
                "InstanceDeletionInProgress",
                "CustomResource deletion is in progress",
                now,
            );
            return false;
        }
    }
    let mut finalizers = meta::finalizers(definition);
    finalizers.retain(|f| f != CLEANUP_FINALIZER);
    meta::set_finalizers(definition, &finalizers);
    let crds = resources::crds();
    if finalizers.is_empty() {
        let key = ObjectKey::of(crds, definition);
        s.remove_as(crds, &key, Some(definition.clone()));
        return true;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition() -> Value {
        json!({"metadata": {"name": "widgets.example.org"}, "spec": {"group": "example.org", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
    }

    #[test]
    fn versions_sort_as_kubernetes_sorts_them() {
        let mut names = vec![
            "v1alpha1",
            "foo",
            "v1",
            "v2beta1",
            "v1beta2",
            "v2",
            "v11alpha2",
            "bar",
        ];
        names.sort_by_key(|n| version_priority(n));
        assert_eq!(
            names,
            [
                "v2",
                "v1",
                "v2beta1",
                "v1beta2",
                "v11alpha2",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
    }

    #[test]
    fn defaults_fill_singular_list_kind_and_conversion() {
        let mut crd = definition();
        apply_defaults(&mut crd);
        assert_eq!(crd["spec"]["names"]["singular"], "widget");
        assert_eq!(crd["spec"]["names"]["listKind"], "WidgetList");
        assert_eq!(crd["spec"]["conversion"]["strategy"], "None");
        assert!(validate(&crd).is_empty(), "{:?}", validate(&crd));
    }

    #[test]
    fn invalid_definitions_name_the_fields() {
        let mut crd = definition();
        apply_defaults(&mut crd);
        crd["metadata"]["name"] = json!("widgets");
        crd["spec"]["group"] = json!("example");
        crd["spec"]["scope"] = json!("Global");
        crd["spec"]["versions"][0]["storage"] = json!(false);
        crd["spec"]["versions"][0]
            .as_object_mut()
            .expect("object")
            .remove("schema");
        let fields: Vec<String> = validate(&crd).into_iter().map(|e| e.field).collect();
        assert_eq!(
            fields,
            [
                "metadata.name",
                "spec.group",
                "spec.scope",
                "spec.versions[0].schema.openAPIV3Schema",
                "spec.versions"
            ]
        );
    }
}
