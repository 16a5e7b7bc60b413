//! Validation of objects on create and update (reference §2): names, labels, and the per-type rules for Pods,
//! Jobs, CronJobs, Deployments and ReplicaSets, including the immutable fields. Pure functions returning the
//! list of field errors; the caller turns them into a 422 Invalid.

use serde_json::{Value, json};

use crate::registry::api_error::FieldError;
use crate::registry::meta;
use crate::registry::resources::ResourceType;
use crate::registry::selector::LabelSelector;

const SUBDOMAIN_REGEX: &str = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const LABEL_REGEX: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";

fn is_label_chars(text: &str) -> bool {
    !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !text.starts_with('-')
        && !text.ends_with('-')
}

/// A label value: empty, or alphanumerics with `-_.` inside, at most 63 characters.
pub(crate) fn is_label_value(text: &str) -> bool {
    text.is_empty()
        || (text.len() <= 63
            && text
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            && text.starts_with(|c: char| c.is_ascii_alphanumeric())
            && text.ends_with(|c: char| c.is_ascii_alphanumeric()))
}

fn subdomain_errors(field: &str, value: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if value.len() > 253 {
        errors.push(FieldError::invalid(
            field,
            &json!(value),
            "must be no more than 253 characters",
        ));
    }
    if !value.split('.').all(is_label_chars) {
        errors.push(FieldError::invalid(field, &json!(value), format!(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{SUBDOMAIN_REGEX}')"
        )));
    }
    errors
}

fn label_name_errors(field: &str, value: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if value.len() > 63 {
        errors.push(FieldError::invalid(
            field,
            &json!(value),
            "must be no more than 63 characters",
        ));
    }
    if value.contains('.') {
        errors.push(FieldError::invalid(
            field,
            &json!(value),
            "must not contain dots",
        ));
    } else if !is_label_chars(value) {
        errors.push(FieldError::invalid(field, &json!(value), format!(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '{LABEL_REGEX}')"
        )));
    }
    errors
}

fn labels_errors(field: &str, labels: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in labels.and_then(Value::as_object).into_iter().flatten() {
        let text = value.as_str().unwrap_or_default();
        if text.len() > 63 {
            errors.push(FieldError::invalid(
                field,
                value,
                "must be no more than 63 characters",
            ));
        } else if !is_label_value(text) {
            errors.push(FieldError::invalid(field, value, "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"));
        }
        errors.extend(qualified_name_errors(field, key));
    }
    errors
}

const QUALIFIED_NAME: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

/// Label and annotation keys: an optional DNS subdomain prefix and `/`, then a name of at most 63 characters.
pub(crate) fn qualified_name_errors(field: &str, key: &str) -> Vec<FieldError> {
    let value = json!(key);
    let parts: Vec<&str> = key.split('/').collect();
    let (prefix, name) = match parts.as_slice() {
        [name] => (None, *name),
        [prefix, name] => (Some(*prefix), *name),
        _ => {
            return vec![FieldError::invalid(
                field,
                &value,
                format!(
                    "a qualified name {QUALIFIED_NAME} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                ),
            )];
        }
    };
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(FieldError::invalid(
            field,
            &value,
            "name part must be non-empty",
        ));
    } else if name.len() > 63 {
        errors.push(FieldError::invalid(
            field,
            &value,
            "name part must be no more than 63 characters",
        ));
    } else if !(name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric()))
    {
        errors.push(FieldError::invalid(
            field,
            &value,
            format!("name part {QUALIFIED_NAME}"),
        ));
    }
    match prefix {
        Some("") => errors.push(FieldError::invalid(
            field,
            &value,
            "prefix part must be non-empty",
        )),
        Some(prefix) if !(prefix.len() <= 253 && prefix.split('.').all(is_label_chars)) => {
            errors.push(FieldError::invalid(field, &value, format!(
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '{SUBDOMAIN_REGEX}')"
            )));
        }
        _ => {}
    }
    errors
}

fn annotations_errors(annotations: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let mut size = 0;
    for (key, value) in annotations.and_then(Value::as_object).into_iter().flatten() {
        errors.extend(qualified_name_errors(
            "metadata.annotations",
            &key.to_lowercase(),
        ));
        size += key.len() + value.as_str().map_or(0, str::len);
    }
    if size > 262_144 {
        errors.push(FieldError {
            kind: crate::registry::api_error::FieldErrorKind::TooLong(262_144),
            field: "metadata.annotations".into(),
            detail: String::new(),
        });
    }
    errors
}

/// Warnings for names that are valid but not DNS labels, for the types whose names become pod hostnames.
pub(crate) fn name_warnings(resource: &ResourceType, name: &str) -> Vec<String> {
    if resource.is_custom() {
        return Vec::new();
    }
    let used_as = match resource.plural {
        "pods" => "the Pod's hostname",
        "jobs" | "deployments" | "replicasets" => "Pod names and hostnames",
        _ => return Vec::new(),
    };
    let problems: Vec<String> = label_name_errors("metadata.name", name)
        .iter()
        .map(|e| e.detail.clone())
        .collect();
    if problems.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "metadata.name: this is used in {used_as}, which can result in surprising behavior; a DNS label is recommended: [{}]",
        problems.join(", ")
    )]
}

/// Errors of a new object (create), `name` being the final name.
pub(crate) fn validate_create(resource: &ResourceType, object: &Value) -> Vec<FieldError> {
    let mut errors = metadata(resource, object);
    if resource.is_custom() {
        errors.extend(crate::registry::custom::validate(resource, object));
        return errors;
    }
    if resource.plural == "cronjobs" {
        let name = meta::name(object);
        if name.len() > 52 {
            errors.push(FieldError::invalid(
                "metadata.name",
                &json!(name),
                "must be no more than 52 characters",
            ));
        }
    }
    errors.extend(spec(resource, object));
    if resource.builtin("events") {
        errors.extend(crate::registry::event_validation::create(resource, object));
    }
    if resource.plural == "jobs"
        && meta::at(object, &["spec", "manualSelector"]) != Some(&json!(true))
    {
        let generated =
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": meta::uid(object)}});
        let selector = meta::at(object, &["spec", "selector"]).unwrap_or(&Value::Null);
        if *selector != generated {
            errors.push(FieldError::invalid(
                "spec.selector",
                selector,
                "`selector` not auto-generated",
            ));
        }
    }
    errors
}

/// Errors of an update from `old` to `new`: full validation plus the immutability rules.
pub(crate) fn validate_update(
    resource: &ResourceType,
    old: &Value,
    new: &Value,
) -> Vec<FieldError> {
    let mut errors = metadata(resource, new);
    if resource.is_custom() {
        errors.extend(crate::registry::custom::validate(resource, new));
        return errors;
    }
    errors.extend(spec(resource, new));
    if resource.builtin("events") {
        errors.extend(crate::registry::event_validation::update(
            resource, old, new,
        ));
    }
    let immutable: &[&str] = match resource.plural {
        "jobs" => &[
            "template",
            "selector",
            "completionMode",
            "podFailurePolicy",
            "backoffLimitPerIndex",
            "managedBy",
            "successPolicy",
        ],
        "deployments" | "replicasets" => &["selector"],
        _ => &[],
    };
    for field in immutable {
        let before = meta::at(old, &["spec", field]);
        let after = meta::at(new, &["spec", field]);
        let allowed = *field == "template"
            && suspended_and_never_started(old)
            && scheduling_only(before, after);
        if before != after && !allowed {
            errors.push(FieldError::invalid(
                format!("spec.{field}"),
                after.unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
    }
    if resource.plural == "jobs" {
        let indexed = meta::str_at(new, &["spec", "completionMode"]) == Some("Indexed");
        let before = meta::at(old, &["spec", "completions"]);
        let after = meta::at(new, &["spec", "completions"]);
        if !indexed && before != after {
            errors.push(FieldError::invalid(
                "spec.completions",
                after.unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
    }
    errors
}

/// A suspended Job that never started may still change where its pods would be scheduled.
fn suspended_and_never_started(job: &Value) -> bool {
    meta::at(job, &["spec", "suspend"]) == Some(&json!(true))
        && meta::at(job, &["status", "startTime"]).is_none_or(Value::is_null)
}

/// Whether two pod templates differ only in the fields a suspended Job may change.
fn scheduling_only(before: Option<&Value>, after: Option<&Value>) -> bool {
    let strip = |template: Option<&Value>| {
        let mut template = template.cloned().unwrap_or(Value::Null);
        for path in [
            &["metadata", "labels"][..],
            &["metadata", "annotations"],
            &["spec", "nodeSelector"],
            &["spec", "tolerations"],
            &["spec", "schedulingGates"],
            &["spec", "affinity", "nodeAffinity"],
        ] {
            meta::remove_at(&mut template, path);
        }
        template
    };
    strip(before) == strip(after)
}

fn metadata(resource: &ResourceType, object: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let name = meta::name(object);
    if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if resource.builtin("namespaces") || resource.builtin("services") {
        errors.extend(label_name_errors("metadata.name", name));
    } else {
        errors.extend(subdomain_errors("metadata.name", name));
    }
    if resource.namespaced && meta::namespace(object).is_empty() {
        errors.push(FieldError::required("metadata.namespace", ""));
    }
    errors.extend(labels_errors(
        "metadata.labels",
        meta::at(object, &["metadata", "labels"]),
    ));
    errors.extend(annotations_errors(meta::at(
        object,
        &["metadata", "annotations"],
    )));
    errors
}

fn spec(resource: &ResourceType, object: &Value) -> Vec<FieldError> {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    match resource.plural {
        "pods" => pod_spec("spec", spec, &["Always", "OnFailure", "Never"]),
        "jobs" => job_spec("spec", spec, true),
        "cronjobs" => cronjob_spec(spec),
        "deployments" | "replicasets" => replicated_spec(spec),
        "configmaps" => config_map_size(object),
        "customresourcedefinitions" => crate::registry::crd::validate(object),
        other => crate::registry::stored_kinds::validate(other, object),
    }
}

/// The most a ConfigMap may hold (`core.MaxSecretSize`, 1 MiB).
const MAX_CONFIG_MAP_SIZE: usize = 1 << 20;

/// A ConfigMap holds at most 1 MiB: the sizes of the `data` values plus the decoded `binaryData` values, as
/// Kubernetes' validation counts them (keys are not counted). The error is about the whole object, whose field
/// path Kubernetes renders `[]`.
fn config_map_size(object: &Value) -> Vec<FieldError> {
    let values = |field: &str| {
        object
            .get(field)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(_, value)| value.as_str())
    };
    let text: usize = values("data").map(str::len).sum();
    let binary: usize = values("binaryData")
        .map(|value| {
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, value)
                .map_or(value.len(), |bytes| bytes.len())
        })
        .sum();
    if text + binary > MAX_CONFIG_MAP_SIZE {
        vec![FieldError {
            kind: crate::registry::api_error::FieldErrorKind::TooLong(MAX_CONFIG_MAP_SIZE),
            field: "[]".into(),
            detail: String::new(),
        }]
    } else {
        Vec::new()
    }
}

fn non_negative(errors: &mut Vec<FieldError>, prefix: &str, spec: &Value, fields: &[&str]) {
    for field in fields {
        if let Some(value) = spec.get(field).and_then(Value::as_i64)
            && value < 0
        {
            errors.push(FieldError::invalid(
                format!("{prefix}.{field}"),
                &json!(value),
                "must be greater than or equal to 0",
            ));
        }
    }
}

fn pod_spec(prefix: &str, spec: &Value, allowed_restart: &[&'static str]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let restart = spec
        .get("restartPolicy")
        .and_then(Value::as_str)
        .unwrap_or("Always");
    if allowed_restart == ["OnFailure", "Never"] && restart == "Always" {
        errors.push(FieldError::required(
            format!("{prefix}.restartPolicy"),
            "valid values: \"OnFailure\", \"Never\"",
        ));
    } else if !allowed_restart.contains(&restart) {
        errors.push(FieldError::not_supported(
            format!("{prefix}.restartPolicy"),
            &json!(restart),
            allowed_restart,
        ));
    }
    let containers = spec
        .get("containers")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if containers.is_empty() {
        errors.push(FieldError::required(format!("{prefix}.containers"), ""));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, container) in containers.iter().enumerate() {
        let path = format!("{prefix}.containers[{i}]");
        let name = container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if name.is_empty() {
            errors.push(FieldError::required(format!("{path}.name"), ""));
        } else if seen.contains(&name) {
            errors.push(FieldError::duplicate(format!("{path}.name"), &json!(name)));
        } else {
            errors.extend(label_name_errors(&format!("{path}.name"), name));
        }
        seen.push(name);
        if container
            .get("image")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
        {
            errors.push(FieldError::required(format!("{path}.image"), ""));
        }
    }
    errors
}

fn template_errors(
    prefix: &str,
    spec: &Value,
    allowed_restart: &[&'static str],
) -> Vec<FieldError> {
    let template = spec.get("template").unwrap_or(&Value::Null);
    let mut errors = labels_errors(
        &format!("{prefix}.template.metadata.labels"),
        meta::at(template, &["metadata", "labels"]),
    );
    errors.extend(pod_spec(
        &format!("{prefix}.template.spec"),
        template.get("spec").unwrap_or(&Value::Null),
        allowed_restart,
    ));
    errors
}

fn selector_matches_template(prefix: &str, spec: &Value, errors: &mut Vec<FieldError>) {
    let Some(selector) = spec.get("selector").and_then(LabelSelector::from_object) else {
        errors.push(FieldError::required(format!("{prefix}.selector"), ""));
        return;
    };
    let template = spec.get("template").unwrap_or(&Value::Null);
    if !selector.matches(template) {
        let labels = meta::at(template, &["metadata", "labels"]).unwrap_or(&Value::Null);
        errors.push(FieldError::invalid(
            format!("{prefix}.template.metadata.labels"),
            labels,
            "`selector` does not match template `labels`",
        ));
    }
}

fn job_spec(prefix: &str, spec: &Value, selector_required: bool) -> Vec<FieldError> {
    let mut errors = Vec::new();
    non_negative(
        &mut errors,
        prefix,
        spec,
        &[
            "parallelism",
            "completions",
            "activeDeadlineSeconds",
            "backoffLimit",
            "ttlSecondsAfterFinished",
        ],
    );
    let allowed: &[&'static str] = if spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
        &["Never"]
    } else {
        &["OnFailure", "Never"]
    };
    errors.extend(template_errors(prefix, spec, allowed));
    if selector_required {
        selector_matches_template(prefix, spec, &mut errors);
    }
    errors
}

fn cronjob_spec(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    match spec.get("schedule").and_then(Value::as_str) {
        None | Some("") => errors.push(FieldError::required("spec.schedule", "")),
        Some(schedule) => {
            if let Err(why) = check_schedule(schedule) {
                errors.push(FieldError::invalid("spec.schedule", &json!(schedule), why));
            }
        }
    }
    if let Some(zone) = spec.get("timeZone").and_then(Value::as_str)
        && (zone.is_empty() || zone == "Local" || jiff::tz::TimeZone::get(zone).is_err())
    {
        errors.push(FieldError::invalid(
            "spec.timeZone",
            &json!(zone),
            format!("unknown time zone {zone}"),
        ));
    }
    if let Some(policy) = spec.get("concurrencyPolicy").and_then(Value::as_str)
        && !["Allow", "Forbid", "Replace"].contains(&policy)
    {
        errors.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            &json!(policy),
            &["Allow", "Forbid", "Replace"],
        ));
    }
    non_negative(
        &mut errors,
        "spec",
        spec,
        &[
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        ],
    );
    let job_spec_value = meta::at(spec, &["jobTemplate", "spec"]).unwrap_or(&Value::Null);
    if let Some(selector) = job_spec_value.get("selector").filter(|s| !s.is_null()) {
        errors.push(FieldError::invalid(
            "spec.jobTemplate.spec.selector",
            selector,
            "`selector` will be auto-generated",
        ));
    }
    if job_spec_value.get("manualSelector") == Some(&json!(true)) {
        errors.push(FieldError::not_supported(
            "spec.jobTemplate.spec.manualSelector",
            &json!(true),
            &["nil", "false"],
        ));
    }
    errors.extend(job_spec("spec.jobTemplate.spec", job_spec_value, false));
    errors
}

/// The 5-field cron syntax (with names and steps) or an `@` descriptor; `TZ=` prefixes are refused.
fn check_schedule(schedule: &str) -> Result<(), String> {
    if schedule.starts_with("TZ=") || schedule.starts_with("CRON_TZ=") {
        return Err("cannot use TZ or CRON_TZ in schedule, use timeZone field instead".to_owned());
    }
    crate::schedule::check(schedule)
}

fn replicated_spec(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    non_negative(
        &mut errors,
        "spec",
        spec,
        &[
            "replicas",
            "minReadySeconds",
            "revisionHistoryLimit",
            "progressDeadlineSeconds",
        ],
    );
    if let Some(selector) = spec.get("selector")
        && LabelSelector::from_object(selector).is_some_and(|s| s.is_empty())
    {
        errors.push(FieldError::invalid(
            "spec.selector",
            selector,
            "empty selector is invalid for deployment",
        ));
    }
    selector_matches_template("spec", spec, &mut errors);
    let template_spec = meta::at(spec, &["template", "spec"]).unwrap_or(&Value::Null);
    if template_spec
        .get("activeDeadlineSeconds")
        .is_some_and(|v| !v.is_null())
    {
        errors.push(FieldError::forbidden(
            "spec.template.spec.activeDeadlineSeconds",
            "activeDeadlineSeconds in ReplicaSet is not Supported",
        ));
    }
    errors.extend(template_errors("spec", spec, &["Always"]));
    errors.extend(strategy_errors(spec));
    errors
}

/// A `maxSurge`/`maxUnavailable` value: an integer, or a percentage string, as a count out of 100 for comparison.
fn int_or_percent(field: &str, value: Option<&Value>, errors: &mut Vec<FieldError>) -> Option<i64> {
    match value? {
        Value::Number(n) => n.as_i64(),
        Value::String(text) => {
            let percent = text.strip_suffix('%').and_then(|p| p.parse::<i64>().ok());
            if percent.is_none() {
                errors.push(FieldError::invalid(field, &json!(text), "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"));
            }
            percent
        }
        _ => None,
    }
}

/// Deployment strategy rules; ReplicaSets have no strategy, so nothing is checked for them.
fn strategy_errors(spec: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let Some(strategy) = spec.get("strategy") else {
        return errors;
    };
    match strategy.get("type").and_then(Value::as_str) {
        Some("Recreate") => {
            if strategy.get("rollingUpdate").is_some_and(|r| !r.is_null()) {
                errors.push(FieldError::forbidden(
                    "spec.strategy.rollingUpdate",
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        Some("RollingUpdate") => {
            let surge_field = "spec.strategy.rollingUpdate.maxSurge";
            let unavailable_field = "spec.strategy.rollingUpdate.maxUnavailable";
            let surge = int_or_percent(
                surge_field,
                meta::at(strategy, &["rollingUpdate", "maxSurge"]),
                &mut errors,
            );
            let unavailable = int_or_percent(
                unavailable_field,
                meta::at(strategy, &["rollingUpdate", "maxUnavailable"]),
                &mut errors,
            );
            for (field, value) in [(surge_field, surge), (unavailable_field, unavailable)] {
                if let Some(v) = value.filter(|v| *v < 0) {
                    errors.push(FieldError::invalid(
                        field,
                        &json!(v),
                        "must be greater than or equal to 0",
                    ));
                }
            }
            if surge == Some(0) && unavailable == Some(0) {
                errors.push(FieldError::invalid(
                    unavailable_field,
                    &json!(0),
                    "may not be 0 when `maxSurge` is 0",
                ));
            }
        }
        other => errors.push(FieldError::not_supported(
            "spec.strategy.type",
            &json!(other.unwrap_or_default()),
            &["Recreate", "RollingUpdate"],
        )),
    }
    let deadline = spec.get("progressDeadlineSeconds").and_then(Value::as_i64);
    let min_ready = spec
        .get("minReadySeconds")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(deadline) = deadline
        && deadline <= min_ready
    {
        errors.push(FieldError::invalid(
            "spec.progressDeadlineSeconds",
            &json!(deadline),
            "must be greater than minReadySeconds",
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::defaults;
    use crate::registry::resources::find;

    fn messages(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.body()))
            .collect()
    }

    fn job(restart: &str) -> Value {
        let mut job = json!({"metadata": {"name": "j", "namespace": "default", "uid": "u"}, "spec": {"template": {"spec": {
            "restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}}}});
        let jobs = find("batch", "v1", "jobs").expect("served");
        defaults::apply(jobs, &mut job);
        defaults::prepare_create(jobs, &mut job);
        job
    }

    #[test]
    fn job_restart_policy_must_be_on_failure_or_never() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        assert!(validate_create(jobs, &job("Never")).is_empty());
        assert_eq!(
            messages(&validate_create(jobs, &job("Always"))),
            [
                "spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
            ]
        );
        assert_eq!(
            messages(&validate_create(jobs, &job("Sometimes"))),
            [
                "spec.template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"OnFailure\", \"Never\""
            ]
        );
    }

    #[test]
    fn job_template_is_immutable_but_parallelism_is_not() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let old = job("Never");
        let mut new = old.clone();
        new["spec"]["parallelism"] = json!(3);
        assert!(validate_update(jobs, &old, &new).is_empty());
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
        let errors = validate_update(jobs, &old, &new);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.template");
        assert!(errors[0].body().ends_with("field is immutable"));
    }

    #[test]
    fn job_selectors_must_be_generated_unless_manual() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let mut job = json!({"metadata": {"name": "j", "namespace": "d", "uid": "u"}, "spec": {
            "selector": {"matchLabels": {"x": "y"}},
            "template": {"metadata": {"labels": {"x": "y"}}, "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
        defaults::prepare_create(jobs, &mut job);
        let found = messages(&validate_create(jobs, &job));
        assert_eq!(
            found,
            [
                "spec.selector: Invalid value: {\"matchLabels\":{\"x\":\"y\"}}: `selector` not auto-generated"
            ]
        );
        job["spec"]["manualSelector"] = json!(true);
        assert!(validate_create(jobs, &job).is_empty());
    }

    #[test]
    fn suspended_jobs_that_never_started_may_change_scheduling_fields() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let mut old = job("Never");
        old["spec"]["suspend"] = json!(true);
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert!(validate_update(jobs, &old, &new).is_empty());
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("other");
        assert_eq!(validate_update(jobs, &old, &new).len(), 1);
        let mut started = old.clone();
        started["status"] = json!({"startTime": "2026-01-01T00:00:00Z"});
        let mut moved = started.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert_eq!(validate_update(jobs, &started, &moved).len(), 1);
    }

    #[test]
    fn long_job_names_fail_on_the_generated_labels() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        let mut long = json!({"metadata": {"name": "a".repeat(64), "namespace": "d", "uid": "u"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
        defaults::prepare_create(jobs, &mut long);
        let errors = validate_create(jobs, &long);
        assert!(
            errors
                .iter()
                .any(|e| e.body().contains("must be no more than 63 characters")),
            "{errors:?}"
        );
    }

    #[test]
    fn cronjob_names_are_limited_to_52_and_schedules_are_checked() {
        let cronjobs = find("batch", "v1", "cronjobs").expect("served");
        let mut cronjob = json!({"metadata": {"name": "c".repeat(53), "namespace": "d"}, "spec": {"schedule": "not a schedule",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}}}});
        defaults::apply(cronjobs, &mut cronjob);
        let found = messages(&validate_create(cronjobs, &cronjob));
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("metadata.name: Invalid value: \"ccc"));
        assert!(found[0].ends_with("must be no more than 52 characters"));
        assert!(found[1].starts_with("spec.schedule: Invalid value: \"not a schedule\""));
        cronjob["metadata"]["name"] = json!("ok");
        cronjob["spec"]["schedule"] = json!("*/5 * * * *");
        cronjob["spec"]["timeZone"] = json!("Europe/Berlin");
        assert!(validate_create(cronjobs, &cronjob).is_empty());
        cronjob["spec"]["schedule"] = json!("TZ=UTC * * * * *");
        assert!(
            messages(&validate_create(cronjobs, &cronjob))[0]
                .ends_with("cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
        );
        cronjob["spec"]["schedule"] = json!("*/5 * * * *");
        cronjob["spec"]["timeZone"] = json!("Mars/Olympus");
        assert_eq!(
            messages(&validate_create(cronjobs, &cronjob)),
            ["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
        );
    }

    #[test]
    fn deployment_selector_must_match_and_is_immutable() {
        let deployments = find("apps", "v1", "deployments").expect("served");
        let mut deployment = json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": {"metadata": {"labels": {"app": "b"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        defaults::apply(deployments, &mut deployment);
        let found = messages(&validate_create(deployments, &deployment));
        assert_eq!(
            found,
            [
                "spec.template.metadata.labels: Invalid value: {\"app\":\"b\"}: `selector` does not match template `labels`"
            ]
        );
        deployment["spec"]["template"]["metadata"]["labels"]["app"] = json!("a");
        assert!(validate_create(deployments, &deployment).is_empty());
        let mut changed = deployment.clone();
        changed["spec"]["selector"]["matchLabels"]["app"] = json!("z");
        changed["spec"]["template"]["metadata"]["labels"]["app"] = json!("z");
        assert_eq!(
            validate_update(deployments, &deployment, &changed)[0].field,
            "spec.selector"
        );
    }

    #[test]
    fn dotted_names_of_pod_owners_get_a_warning() {
        let jobs = find("batch", "v1", "jobs").expect("served");
        assert_eq!(
            name_warnings(jobs, "a.b"),
            [
                "metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]"
            ]
        );
        assert!(name_warnings(jobs, "ab").is_empty());
        assert!(name_warnings(find("", "v1", "configmaps").expect("served"), "a.b").is_empty());
    }

    #[test]
    fn label_and_annotation_keys_are_qualified_names() {
        assert!(qualified_name_errors("f", "app").is_empty());
        assert!(qualified_name_errors("f", "example.com/app-1").is_empty());
        let bodies = |key: &str| {
            qualified_name_errors("f", key)
                .iter()
                .map(FieldError::body)
                .collect::<Vec<_>>()
        };
        assert_eq!(bodies("a/b/c").len(), 1);
        assert!(
            bodies("bad key!")[0]
                .starts_with("Invalid value: \"bad key!\": name part must consist of")
        );
        assert!(bodies("Example.com/x")[0].contains("prefix part a lowercase RFC 1123 subdomain"));
        assert!(bodies("/x")[0].ends_with("prefix part must be non-empty"));
        let big = json!({"k": "v".repeat(262_144)});
        assert_eq!(
            annotations_errors(Some(&big))[0].body(),
            "Too long: may not be more than 262144 bytes"
        );
    }

    #[test]
    fn deployment_strategies_are_checked() {
        let deployments = find("apps", "v1", "deployments").expect("served");
        let mut deployment = json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": "0%"}},
            "progressDeadlineSeconds": 5, "minReadySeconds": 10,
            "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}});
        defaults::apply(deployments, &mut deployment);
        assert_eq!(
            messages(&validate_create(deployments, &deployment)),
            [
                "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
                "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
            ]
        );
        deployment["spec"]["strategy"] = json!({"type": "Recreate", "rollingUpdate": {}});
        deployment["spec"]["progressDeadlineSeconds"] = json!(600);
        assert_eq!(
            messages(&validate_create(deployments, &deployment)),
            [
                "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ]
        );
    }

    #[test]
    fn names_must_be_subdomains_and_namespaces_labels() {
        assert!(subdomain_errors("f", "a.b-c").is_empty());
        assert!(!subdomain_errors("f", "A").is_empty());
        assert!(label_name_errors("f", "abc-1").is_empty());
        assert_eq!(
            label_name_errors("f", "a.b")[0].body(),
            "Invalid value: \"a.b\": must not contain dots"
        );
        let pods = find("", "v1", "pods").expect("served");
        let found = messages(&validate_create(
            pods,
            &json!({"metadata": {"name": "Bad", "namespace": "n"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        ));
        assert!(
            found[0].starts_with(
                "metadata.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain"
            ),
            "{found:?}"
        );
    }
}
