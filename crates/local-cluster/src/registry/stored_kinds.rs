//! Defaults and the essentials of validation for the kinds the local cluster stores but runs no controller for
//! (`Secret`, `Endpoints`, `PersistentVolume` and `PersistentVolumeClaim`, `ReplicationController`, `DaemonSet`,
//! `StatefulSet`, `Ingress`, `HorizontalPodAutoscaler`): they are served so that `kubectl apply --prune` with its
//! default allowlist works and manifests holding them apply as on Kubernetes, with Kubernetes' defaults (what
//! `kubectl get -o yaml` shows back) and the checks a manifest most often fails.

use serde_json::{Map, Value, json};

use crate::registry::api_error::FieldError;
use crate::registry::meta;
use crate::registry::selector::LabelSelector;

fn map_at<'a>(object: &'a mut Value, key: &str) -> &'a mut Map<String, Value> {
    if !object.get(key).is_some_and(Value::is_object) {
        object[key] = json!({});
    }
    // Invariant: the key was just made an object.
    object[key].as_object_mut().expect("an object")
}

fn map_at_root(object: &mut Value) -> &mut Map<String, Value> {
    if !object.is_object() {
        *object = json!({});
    }
    // Invariant: the value was just made an object.
    object.as_object_mut().expect("an object")
}

fn default(map: &mut Map<String, Value>, key: &str, value: Value) {
    if map.get(key).is_none_or(Value::is_null) {
        map.insert(key.to_owned(), value);
    }
}

/// Applies the defaults of Kubernetes' `SetDefaults_*` for the stored-only kind `plural`.
pub(crate) fn apply_defaults(plural: &str, object: &mut Value) {
    if !object.is_object() {
        return;
    }
    match plural {
        "secrets" => {
            let secret = map_at_root(object);
            default(secret, "type", json!("Opaque"));
            string_data_into_data(secret);
        }
        "persistentvolumeclaims" => {
            default(map_at(object, "spec"), "volumeMode", json!("Filesystem"));
        }
        "persistentvolumes" => {
            let spec = map_at(object, "spec");
            default(spec, "persistentVolumeReclaimPolicy", json!("Retain"));
            default(spec, "volumeMode", json!("Filesystem"));
        }
        "replicationcontrollers" => {
            let labels = meta::at(object, &["spec", "template", "metadata", "labels"]).cloned();
            let spec = map_at(object, "spec");
            default(spec, "replicas", json!(1));
            if let Some(labels) = labels {
                default(spec, "selector", labels.clone());
                default(map_at(object, "metadata"), "labels", labels);
            }
        }
        "daemonsets" => {
            let spec = map_at(object, "spec");
            default(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}}),
            );
            default(spec, "revisionHistoryLimit", json!(10));
        }
        "statefulsets" => {
            let spec = map_at(object, "spec");
            default(spec, "replicas", json!(1));
            default(spec, "podManagementPolicy", json!("OrderedReady"));
            default(
                spec,
                "updateStrategy",
                json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}),
            );
            default(spec, "revisionHistoryLimit", json!(10));
            default(
                spec,
                "persistentVolumeClaimRetentionPolicy",
                json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
            );
        }
        "horizontalpodautoscalers" => default(map_at(object, "spec"), "minReplicas", json!(1)),
        _ => {}
    }
}

/// `stringData` is write-only: its entries are base64-encoded into `data` (overriding the same keys there) and
/// it is dropped, as the Secret's conversion does on every write.
fn string_data_into_data(secret: &mut Map<String, Value>) {
    use base64::Engine;
    let Some(Value::Object(strings)) = secret.remove("stringData") else {
        return;
    };
    if !secret.get("data").is_some_and(Value::is_object) {
        secret.insert("data".into(), json!({}));
    }
    if let Some(data) = secret.get_mut("data").and_then(Value::as_object_mut) {
        for (key, value) in strings {
            let text = value.as_str().unwrap_or_default();
            let encoded = base64::engine::general_purpose::STANDARD.encode(text);
            data.insert(key, Value::from(encoded));
        }
    }
}

/// The validation errors of the stored-only kind `plural` (metadata is validated for every kind elsewhere).
pub(crate) fn validate(plural: &str, object: &Value) -> Vec<FieldError> {
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let mut errors = Vec::new();
    match plural {
        "daemonsets" | "statefulsets" => selector_matches_template(spec, &mut errors),
        "replicationcontrollers" => {
            let selector = spec.get("selector").and_then(Value::as_object);
            let labels = meta::at(spec, &["template", "metadata", "labels"]);
            let matches = selector.is_some_and(|selector| {
                !selector.is_empty()
                    && selector
                        .iter()
                        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
            });
            if !matches {
                errors.push(FieldError::invalid(
                    "spec.template.metadata.labels",
                    labels.unwrap_or(&Value::Null),
                    "`selector` does not match template `labels`",
                ));
            }
        }
        "persistentvolumeclaims" => {
            required_list(spec, "accessModes", "spec.accessModes", &mut errors);
            if meta::at(spec, &["resources", "requests", "storage"]).is_none() {
                errors.push(FieldError::required("spec.resources[storage]", ""));
            }
        }
        "persistentvolumes" => {
            required_list(spec, "accessModes", "spec.accessModes", &mut errors);
            if meta::at(spec, &["capacity", "storage"]).is_none() {
                errors.push(FieldError::required("spec.capacity", ""));
            }
        }
        "horizontalpodautoscalers" => hpa(spec, &mut errors),
        _ => {}
    }
    errors
}

fn required_list(spec: &Value, key: &str, field: &str, errors: &mut Vec<FieldError>) {
    if spec
        .get(key)
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        errors.push(FieldError::required(field, ""));
    }
}

fn selector_matches_template(spec: &Value, errors: &mut Vec<FieldError>) {
    let Some(selector) = spec.get("selector").and_then(LabelSelector::from_object) else {
        errors.push(FieldError::required("spec.selector", ""));
        return;
    };
    let template = spec.get("template").unwrap_or(&Value::Null);
    if selector.is_empty() || !selector.matches(template) {
        errors.push(FieldError::invalid(
            "spec.template.metadata.labels",
            meta::at(template, &["metadata", "labels"]).unwrap_or(&Value::Null),
            "`selector` does not match template `labels`",
        ));
    }
}

fn hpa(spec: &Value, errors: &mut Vec<FieldError>) {
    for key in ["kind", "name"] {
        if meta::str_at(spec, &["scaleTargetRef", key]).is_none_or(str::is_empty) {
            errors.push(FieldError::required(
                format!("spec.scaleTargetRef.{key}"),
                "",
            ));
        }
    }
    let min = spec.get("minReplicas").and_then(Value::as_i64).unwrap_or(1);
    let max = spec.get("maxReplicas").and_then(Value::as_i64).unwrap_or(0);
    if min < 1 {
        errors.push(FieldError::invalid(
            "spec.minReplicas",
            &json!(min),
            "must be greater than or equal to 1",
        ));
    }
    if max < min {
        errors.push(FieldError::invalid(
            "spec.maxReplicas",
            &json!(max),
            "must be greater than or equal to `minReplicas`",
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_kubernetes() {
        let mut secret = json!({"metadata": {"name": "s"}, "data": {"a": "eA==", "b": "eQ=="},
            "stringData": {"b": "value"}});
        apply_defaults("secrets", &mut secret);
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(secret["data"], json!({"a": "eA==", "b": "dmFsdWU="}));
        assert!(secret.get("stringData").is_none());
        let mut rc = json!({"spec": {"template": {"metadata": {"labels": {"app": "x"}}}}});
        apply_defaults("replicationcontrollers", &mut rc);
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(rc["spec"]["replicas"], 1);
        assert!(validate("replicationcontrollers", &rc).is_empty());
    }

    #[test]
    fn manifests_missing_the_essentials_are_invalid() {
        let daemonset = json!({"spec": {"selector": {"matchLabels": {"app": "x"}},
            "template": {"metadata": {"labels": {"app": "y"}}}}});
        let errors = validate("daemonsets", &daemonset);
        assert_eq!(errors.len(), 1);
        assert_eq!(errors[0].field, "spec.template.metadata.labels");
        let claim = json!({"spec": {}});
        assert_eq!(validate("persistentvolumeclaims", &claim).len(), 2);
        let hpa = json!({"spec": {"scaleTargetRef": {"kind": "Deployment", "name": "d"}, "minReplicas": 2, "maxReplicas": 1}});
        assert_eq!(
            validate("horizontalpodautoscalers", &hpa)[0].field,
            "spec.maxReplicas"
        );
    }
}
