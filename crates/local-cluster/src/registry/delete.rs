//! DELETE and DELETE-collection: `DeleteOptions` from the body or the query, per-type default propagation (Job =
//! Orphan), preconditions, finalizers and `deletionTimestamp`, pod graceful deletion, and the outcome that decides
//! the response body (object when deletion is pending, `Status` Success when the object is gone).

use serde_json::{Value, json};

use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::crd::CLEANUP_FINALIZER;
use crate::registry::meta;
use crate::registry::ops::{Filter, list_object};
use crate::registry::resources::{Propagation, ResourceType};
use crate::registry::store::{Inner, ObjectKey, Store};

pub(crate) const ORPHAN: &str = "orphan";
pub(crate) const FOREGROUND: &str = "foregroundDeletion";

/// Parsed `DeleteOptions`.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct DeleteOptions {
    pub(crate) propagation: Option<Propagation>,
    pub(crate) grace_period: Option<i64>,
    pub(crate) precondition_uid: Option<String>,
    pub(crate) precondition_resource_version: Option<String>,
    pub(crate) dry_run: bool,
    /// The deprecated `orphanDependents: false` was sent: a pending deletion answers 202 instead of 200.
    pub(crate) accepted_status: bool,
}

impl DeleteOptions {
    pub(crate) fn with_propagation(propagation: Propagation) -> Self {
        DeleteOptions {
            propagation: Some(propagation),
            ..Self::default()
        }
    }

    /// Reads the options from a JSON body, or from the query when the body is empty.
    pub(crate) fn parse(body: &[u8], query: &[(String, String)]) -> Result<Self, ApiError> {
        let body_value: Value = if body.iter().all(u8::is_ascii_whitespace) {
            let mut map = serde_json::Map::new();
            for (key, value) in query {
                let value = match key.as_str() {
                    "gracePeriodSeconds" => {
                        value.parse::<i64>().map(Value::from).map_err(|_| {
                            ApiError::bad_request(format!("invalid gracePeriodSeconds: {value}"))
                        })?
                    }
                    "orphanDependents" => Value::from(value == "true"),
                    "dryRun" => json!([value]),
                    _ => Value::from(value.as_str()),
                };
                map.insert(key.clone(), value);
            }
            Value::Object(map)
        } else {
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding DeleteOptions: {e}")))?
        };
        let mut options = DeleteOptions::default();
        let mut errors = Vec::new();
        let policy = body_value.get("propagationPolicy").and_then(Value::as_str);
        let orphan = body_value.get("orphanDependents").and_then(Value::as_bool);
        options.accepted_status = orphan == Some(false);
        if policy.is_some() && orphan.is_some() {
            errors.push(FieldError::invalid(
                "propagationPolicy",
                &json!(policy),
                "orphanDependents and deletionPropagation cannot be both set",
            ));
        }
        options.propagation = match (policy, orphan) {
            (Some("Orphan"), _) | (None, Some(true)) => Some(Propagation::Orphan),
            (Some("Background"), _) | (None, Some(false)) => Some(Propagation::Background),
            (Some("Foreground"), _) => Some(Propagation::Foreground),
            (Some(other), _) => {
                errors.push(FieldError::not_supported(
                    "propagationPolicy",
                    &json!(other),
                    &["Foreground", "Background", "Orphan", "nil"],
                ));
                None
            }
            (None, None) => None,
        };
        options.grace_period = body_value.get("gracePeriodSeconds").and_then(Value::as_i64);
        options.precondition_uid =
            meta::str_at(&body_value, &["preconditions", "uid"]).map(str::to_owned);
        options.precondition_resource_version =
            meta::str_at(&body_value, &["preconditions", "resourceVersion"]).map(str::to_owned);
        for value in body_value
            .get("dryRun")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match value.as_str() {
                Some("All") => options.dry_run = true,
                _ => errors.push(FieldError::not_supported("dryRun", value, &["All"])),
            }
        }
        if errors.is_empty() {
            Ok(options)
        } else {
            Err(ApiError::invalid_options("DeleteOptions", &errors))
        }
    }
}

/// What a delete did.
#[derive(Debug)]
pub(crate) enum Deleted {
    /// Removed; the last state.
    Gone(Value),
    /// Still present (finalizers, graceful deletion); the current state.
    Pending(Value),
}

/// DELETE of one object.
pub(crate) fn delete(
    store: &Store,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
    options: &DeleteOptions,
) -> Result<Deleted, ApiError> {
    store.write(|s| {
        delete_in(
            s,
            resource,
            &ObjectKey::new(resource, namespace, name),
            options,
        )
    })
}

/// DELETE of a collection: each matching object with the same options; returns the list of their states.
pub(crate) fn delete_collection(
    store: &Store,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    filter: &Filter,
    options: &DeleteOptions,
) -> Result<Value, ApiError> {
    store.write(|s| {
        let keys: Vec<ObjectKey> = s
            .list(resource, namespace)
            .filter(|o| filter.matches(o))
            .map(|o| ObjectKey::of(resource, &o))
            .collect();
        let mut items = Vec::new();
        for key in keys {
            match delete_in(s, resource, &key, options)? {
                Deleted::Gone(o) | Deleted::Pending(o) => items.push(o),
            }
        }
        Ok(list_object(resource, s.resource_version(), items))
    })
}

/// The delete algorithm under the store lock; also used by the garbage collector.
pub(crate) fn delete_in(
    s: &mut Inner,
    resource: &'static ResourceType,
    key: &ObjectKey,
    options: &DeleteOptions,
) -> Result<Deleted, ApiError> {
    let Some(current) = s.get(key) else {
        return Err(ApiError::not_found(resource, &key.name));
    };
    check_preconditions(resource, key, &current, options)?;
    if meta::is_deleting(&current) {
        return Ok(shorten_grace(s, resource, key, current, options));
    }
    let mut object = current.clone();
    if resource.builtin("namespaces") {
        if matches!(key.name.as_str(), "default" | "kube-system" | "kube-public") {
            let mut error = ApiError::forbidden(format!(
                "namespaces \"{}\" is forbidden: this namespace may not be deleted",
                key.name
            ));
            error.details.insert("name".into(), json!(key.name));
            error.details.insert("kind".into(), json!("namespaces"));
            return Err(error);
        }
        return Ok(Deleted::Pending(start_deletion(
            s,
            resource,
            object,
            options,
            |o| {
                meta::set_at(o, &["status", "phase"], json!("Terminating"));
            },
        )));
    }
    let mut finalizers = meta::finalizers(&object);
    finalizers.retain(|f| f != ORPHAN && f != FOREGROUND);
    match options.propagation.unwrap_or(resource.default_propagation) {
        Propagation::Orphan => finalizers.push(ORPHAN.to_owned()),
        Propagation::Foreground => finalizers.push(FOREGROUND.to_owned()),
        Propagation::Background => {}
    }
    let definition = resource.builtin("customresourcedefinitions");
    if definition && !finalizers.iter().any(|f| f == CLEANUP_FINALIZER) {
        finalizers.push(CLEANUP_FINALIZER.to_owned());
    }
    meta::set_finalizers(&mut object, &finalizers);
    if let Some(grace) = pod_grace_period(resource, &object, options) {
        let clock = s.clock();
        return Ok(Deleted::Pending(start_deletion(
            s,
            resource,
            object,
            options,
            |o| {
                let now = clock.now();
                // A grace period beyond the representable time is as good as "far in the future".
                let at = now
                    .checked_add(jiff::SignedDuration::from_secs(grace))
                    .unwrap_or(jiff::Timestamp::MAX);
                meta::set_at(
                    o,
                    &["metadata", "deletionTimestamp"],
                    json!(meta::format_time(at)),
                );
                meta::set_at(o, &["metadata", "deletionGracePeriodSeconds"], json!(grace));
            },
        )));
    }
    if !finalizers.is_empty() {
        let now = meta::now(s.clock());
        return Ok(Deleted::Pending(start_deletion(
            s,
            resource,
            object,
            options,
            |o| {
                if definition {
                    crate::registry::crd::mark_terminating(o, &now);
                }
            },
        )));
    }
    if options.dry_run {
        return Ok(Deleted::Gone(current));
    }
    s.remove(resource, key)
        .map(Deleted::Gone)
        .ok_or_else(|| ApiError::not_found(resource, &key.name))
}

/// A second delete of a terminating object changes nothing, except that a pod's grace period can be shortened;
/// at 0 (the kubelet's final delete, or `--force`) a pod without finalizers is removed.
fn shorten_grace(
    s: &mut Inner,
    resource: &'static ResourceType,
    key: &ObjectKey,
    mut current: Value,
    options: &DeleteOptions,
) -> Deleted {
    let remaining =
        meta::at(&current, &["metadata", "deletionGracePeriodSeconds"]).and_then(Value::as_i64);
    let Some(grace) = options
        .grace_period
        .filter(|g| resource.builtin("pods") && remaining.is_some_and(|r| *g < r))
    else {
        return Deleted::Pending(current);
    };
    let grace = grace.max(0);
    let at = s
        .clock()
        .now()
        .checked_add(jiff::SignedDuration::from_secs(grace))
        .unwrap_or(jiff::Timestamp::MAX);
    meta::set_at(
        &mut current,
        &["metadata", "deletionTimestamp"],
        json!(meta::format_time(at)),
    );
    meta::set_at(
        &mut current,
        &["metadata", "deletionGracePeriodSeconds"],
        json!(grace),
    );
    if options.dry_run {
        return Deleted::Pending(current);
    }
    if grace == 0 && meta::finalizers(&current).is_empty() {
        return match s.remove_as(resource, key, Some(current.clone())) {
            Some(gone) => Deleted::Gone(gone),
            None => Deleted::Pending(current),
        };
    }
    Deleted::Pending(s.update(resource, current))
}

/// Whether an update leaving `object` (already being deleted) without finalizers removes it: only when no grace
/// period runs, as the API server's `shouldDeleteDuringUpdate` says. A pod in graceful termination that loses its
/// last finalizer stays until the kubelet's final delete, so its containers get their grace period.
pub(crate) fn removed_by_update(object: &Value) -> bool {
    meta::is_deleting(object)
        && meta::finalizers(object).is_empty()
        && meta::at(object, &["metadata", "deletionGracePeriodSeconds"])
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
}

/// Marks an object as being deleted (deletionTimestamp now, grace 0 unless `adjust` says otherwise).
fn start_deletion(
    s: &mut Inner,
    resource: &'static ResourceType,
    mut object: Value,
    options: &DeleteOptions,
    adjust: impl FnOnce(&mut Value),
) -> Value {
    meta::set_at(
        &mut object,
        &["metadata", "deletionTimestamp"],
        json!(meta::now(s.clock())),
    );
    meta::set_at(
        &mut object,
        &["metadata", "deletionGracePeriodSeconds"],
        json!(0),
    );
    if resource.tracks_generation {
        let generation = meta::at(&object, &["metadata", "generation"])
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta::set_at(
            &mut object,
            &["metadata", "generation"],
            json!(generation + 1),
        );
    }
    adjust(&mut object);
    if options.dry_run {
        return object;
    }
    s.update(resource, object)
}

/// The grace period of a pod deletion that must wait for the kubelet, if any.
fn pod_grace_period(resource: &ResourceType, pod: &Value, options: &DeleteOptions) -> Option<i64> {
    if !resource.builtin("pods") {
        return None;
    }
    let scheduled = meta::str_at(pod, &["spec", "nodeName"]).is_some_and(|n| !n.is_empty());
    let terminal = matches!(
        meta::str_at(pod, &["status", "phase"]),
        Some("Succeeded" | "Failed")
    );
    let grace = options
        .grace_period
        .or_else(|| {
            meta::at(pod, &["spec", "terminationGracePeriodSeconds"]).and_then(Value::as_i64)
        })
        .unwrap_or(30);
    (scheduled && !terminal && grace > 0).then_some(grace)
}

/// 409 for a failed uid or resourceVersion precondition, with the storage error text a real server sends.
pub(crate) fn precondition_failed(
    resource: &ResourceType,
    key: &ObjectKey,
    what: &str,
    wanted: &str,
    actual: &str,
) -> ApiError {
    ApiError::conflict(
        resource,
        &key.name,
        &format!(
            "StorageError: invalid object, Code: 4, Key: /registry/{}/{}/{}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {actual}",
            resource.plural, key.namespace, key.name
        ),
    )
}

fn check_preconditions(
    resource: &ResourceType,
    key: &ObjectKey,
    current: &Value,
    options: &DeleteOptions,
) -> Result<(), ApiError> {
    if let Some(uid) = &options.precondition_uid
        && uid != meta::uid(current)
    {
        return Err(precondition_failed(
            resource,
            key,
            "UID",
            uid,
            meta::uid(current),
        ));
    }
    if let Some(rv) = &options.precondition_resource_version
        && Some(rv.as_str()) != meta::resource_version(current)
    {
        let actual = meta::resource_version(current).unwrap_or_default();
        return Err(precondition_failed(
            resource,
            key,
            "ResourceVersion",
            rv,
            actual,
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_come_from_the_body_or_the_query() {
        let body = DeleteOptions::parse(
            br#"{"propagationPolicy":"Foreground","preconditions":{"uid":"u"}}"#,
            &[],
        )
        .expect("parses");
        assert_eq!(body.propagation, Some(Propagation::Foreground));
        assert_eq!(body.precondition_uid.as_deref(), Some("u"));
        let query = DeleteOptions::parse(
            b"",
            &[
                ("propagationPolicy".into(), "Orphan".into()),
                ("dryRun".into(), "All".into()),
            ],
        )
        .expect("parses");
        assert_eq!(query.propagation, Some(Propagation::Orphan));
        assert!(query.dry_run);
        let deprecated =
            DeleteOptions::parse(br#"{"orphanDependents":false}"#, &[]).expect("parses");
        assert_eq!(deprecated.propagation, Some(Propagation::Background));
        assert!(deprecated.accepted_status);
        assert_eq!(
            DeleteOptions::parse(b"{}", &[]).expect("parses"),
            DeleteOptions::default()
        );
    }

    #[test]
    fn conflicting_or_unknown_policies_are_invalid() {
        let both = DeleteOptions::parse(
            br#"{"propagationPolicy":"Orphan","orphanDependents":true}"#,
            &[],
        )
        .expect_err("invalid");
        assert_eq!(both.code, 422);
        assert!(both.message.starts_with(
            "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Invalid value"
        ));
        let unknown =
            DeleteOptions::parse(br#"{"propagationPolicy":"Sideways"}"#, &[]).expect_err("invalid");
        assert_eq!(
            unknown.details["causes"][0]["reason"],
            "FieldValueNotSupported"
        );
    }
}
