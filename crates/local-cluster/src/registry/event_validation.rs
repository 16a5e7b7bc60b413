//! Validation of Events (`ValidateEventCreate`/`ValidateEventUpdate` of Kubernetes 1.33). Both API groups share
//! the legacy rules; an Event written through `events.k8s.io/v1` must also have an `eventTime`, a valid `type`,
//! none of the deprecated core fields, and on update may change only its series and metadata. Objects arrive in
//! the core (storage) form; errors name the fields as the group the request used names them.

use serde_json::{Value, json};

use crate::registry::api_error::FieldError;
use crate::registry::meta;
use crate::registry::resources::ResourceType;
use crate::registry::validation;

const REPORTING_INSTANCE_LIMIT: usize = 128;
const ACTION_LIMIT: usize = 128;
const REASON_LIMIT: usize = 128;
const NOTE_LIMIT: usize = 1024;

/// Whether the request came through `events.k8s.io/v1`, whose rules are strict.
fn strict(resource: &ResourceType) -> bool {
    resource.group == "events.k8s.io"
}

fn text<'a>(event: &'a Value, field: &str) -> &'a str {
    meta::str_at(event, &[field]).unwrap_or_default()
}

fn is_set(event: &Value, field: &str) -> bool {
    event.get(field).is_some_and(|v| !v.is_null())
}

/// Errors of a new Event.
pub(crate) fn create(resource: &ResourceType, event: &Value) -> Vec<FieldError> {
    let mut errors = legacy(resource, event);
    if !strict(resource) {
        return errors;
    }
    errors.extend(series(event));
    if !is_set(event, "eventTime") {
        errors.push(FieldError::required("eventTime", ""));
    }
    let kind = text(event, "type");
    if kind != "Normal" && kind != "Warning" {
        errors.push(FieldError::invalid(
            "type",
            &json!(""),
            format!("has invalid value: {kind}"),
        ));
    }
    for (field, set) in [
        ("firstTimestamp", is_set(event, "firstTimestamp")),
        ("lastTimestamp", is_set(event, "lastTimestamp")),
        (
            "count",
            event.get("count").and_then(Value::as_i64).unwrap_or(0) != 0,
        ),
        (
            "source",
            !text(&event["source"], "component").is_empty()
                || !text(&event["source"], "host").is_empty(),
        ),
    ] {
        if set {
            errors.push(FieldError::invalid(field, &json!(""), "needs to be unset"));
        }
    }
    errors
}

/// Errors of an update from `old` to `new`.
pub(crate) fn update(resource: &ResourceType, old: &Value, new: &Value) -> Vec<FieldError> {
    let mut errors = legacy(resource, new);
    if !strict(resource) {
        return errors;
    }
    errors.extend(series(new));
    for (field, stored) in [
        ("involvedObject", "involvedObject"),
        ("reason", "reason"),
        ("message", "message"),
        ("source", "source"),
        ("firstTimestamp", "firstTimestamp"),
        ("lastTimestamp", "lastTimestamp"),
        ("count", "count"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingController", "reportingComponent"),
        ("reportingInstance", "reportingInstance"),
    ] {
        let after = new.get(stored).filter(|v| !v.is_null());
        if old.get(stored).filter(|v| !v.is_null()) != after {
            errors.push(FieldError::invalid(
                field,
                after.unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
    }
    errors
}

/// `legacyValidateEvent`: what every Event must satisfy, through either group.
fn legacy(resource: &ResourceType, event: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let namespace = meta::namespace(event);
    let involved_namespace =
        meta::str_at(event, &["involvedObject", "namespace"]).unwrap_or_default();
    let mismatch = || {
        FieldError::invalid(
            "involvedObject.namespace",
            &json!(involved_namespace),
            "does not match event.namespace",
        )
    };
    if !is_set(event, "eventTime") {
        let matches = if involved_namespace.is_empty() {
            namespace.is_empty() || namespace == "default"
        } else {
            namespace == involved_namespace
        };
        if !matches {
            errors.push(mismatch());
        }
        return errors;
    }
    if involved_namespace.is_empty() && namespace != "default" && namespace != "kube-system" {
        errors.push(mismatch());
    }
    let controller_field = if strict(resource) {
        "reportingController"
    } else {
        "reportingComponent"
    };
    let controller = text(event, "reportingComponent");
    if controller.is_empty() {
        errors.push(FieldError::required(controller_field, ""));
    }
    errors.extend(validation::qualified_name_errors(
        controller_field,
        controller,
    ));
    for (field, limit) in [
        ("reportingInstance", REPORTING_INSTANCE_LIMIT),
        ("action", ACTION_LIMIT),
        ("reason", REASON_LIMIT),
    ] {
        let value = text(event, field);
        if value.is_empty() {
            errors.push(FieldError::required(field, ""));
        }
        if value.len() > limit {
            errors.push(FieldError::invalid(
                field,
                &json!(""),
                format!("can have at most {limit} characters"),
            ));
        }
    }
    if text(event, "message").len() > NOTE_LIMIT {
        errors.push(FieldError::invalid(
            "message",
            &json!(""),
            format!("can have at most {NOTE_LIMIT} characters"),
        ));
    }
    errors
}

/// `validateV1EventSeries`.
fn series(event: &Value) -> Vec<FieldError> {
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errors = Vec::new();
    if series.get("count").and_then(Value::as_i64).unwrap_or(0) < 2 {
        errors.push(FieldError::invalid(
            "series.count",
            &json!(""),
            "should be at least 2",
        ));
    }
    if !is_set(series, "lastObservedTime") {
        errors.push(FieldError::required("series.lastObservedTime", ""));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::resources::find;

    fn events_v1() -> &'static ResourceType {
        find("events.k8s.io", "v1", "events").expect("served")
    }

    fn rendered(errors: &[FieldError]) -> Vec<String> {
        errors
            .iter()
            .map(|e| format!("{}: {}", e.field, e.body()))
            .collect()
    }

    /// A valid events.k8s.io/v1 Event in the core (storage) form.
    fn valid() -> Value {
        json!({"metadata": {"name": "e", "namespace": "tool"}, "eventTime": "2026-01-01T00:00:00.000000Z",
            "involvedObject": {"kind": "Job", "namespace": "tool", "name": "j"}, "type": "Normal",
            "reason": "Started", "action": "Run", "reportingComponent": "toolforge.org/jobs",
            "reportingInstance": "jobs-1"})
    }

    #[test]
    fn a_complete_event_is_valid_and_each_missing_part_is_named() {
        assert!(create(events_v1(), &valid()).is_empty());
        let mut event = valid();
        for field in ["eventTime", "action", "reportingInstance"] {
            event.as_object_mut().expect("object").remove(field);
        }
        event["type"] = json!("Info");
        event["count"] = json!(3);
        let errors = rendered(&create(events_v1(), &event));
        assert_eq!(
            errors,
            vec![
                "eventTime: Required value".to_owned(),
                "type: Invalid value: \"\": has invalid value: Info".into(),
                "count: Invalid value: \"\": needs to be unset".into(),
            ]
        );
        let mut event = valid();
        event
            .as_object_mut()
            .expect("object")
            .remove("reportingComponent");
        event["reason"] = json!("x".repeat(129));
        let errors = rendered(&create(events_v1(), &event));
        assert_eq!(errors[0], "reportingController: Required value");
        assert!(
            errors.contains(
                &"reason: Invalid value: \"\": can have at most 128 characters".to_owned()
            )
        );
    }

    #[test]
    fn core_events_keep_the_lenient_rules() {
        let core = find("", "v1", "events").expect("served");
        let event = json!({"metadata": {"name": "e", "namespace": "tool"}, "reason": "Started",
            "involvedObject": {"kind": "Job", "namespace": "tool", "name": "j"}, "count": 1});
        assert!(create(core, &event).is_empty());
    }

    #[test]
    fn a_v1_update_may_change_the_series_but_not_the_note() {
        let old = valid();
        let mut new = valid();
        new["series"] = json!({"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z"});
        assert!(update(events_v1(), &old, &new).is_empty());
        new["message"] = json!("changed");
        assert_eq!(
            rendered(&update(events_v1(), &old, &new)),
            vec!["message: Invalid value: \"changed\": field is immutable".to_owned()]
        );
    }
}
