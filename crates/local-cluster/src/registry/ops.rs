//! The registry operations behind the REST verbs: create, replace, patch (all four flavours), status writes,
//! get and list. Each runs decode → defaults → server-set metadata → validation → store write, in the order a
//! real API server uses, so that the same error wins. Delete lives in [`crate::registry::delete`].

use serde_json::{Map, Value, json};

use crate::registry::admission;
use crate::registry::api_error::{ApiError, FieldError};
use crate::registry::custom;
use crate::registry::decode::{self, FieldValidation};
use crate::registry::defaults;
use crate::registry::managed_fields::{self, Operation};
use crate::registry::meta;
use crate::registry::patch::{self, PatchType};
use crate::registry::resources::{self, ResourceType};
use crate::registry::selector::{FieldSelector, LabelSelector};
use crate::registry::server_side_apply;
use crate::registry::size_limits;
use crate::registry::store::{Inner, ObjectKey, Store};
use crate::registry::stored::Stored;
use crate::registry::validation;

/// Query options shared by the writing verbs.
#[derive(Debug, Clone, Default)]
pub(crate) struct WriteOptions {
    pub(crate) dry_run: bool,
    pub(crate) field_validation: FieldValidation,
    pub(crate) field_manager: Option<String>,
    pub(crate) force: Option<bool>,
    /// The client's `User-Agent`, which names the field manager when `fieldManager` is absent; `None` for
    /// writes from inside the cluster.
    pub(crate) user_agent: Option<String>,
    /// `Apply` for server-side apply, whose managed fields are settled before the write path runs.
    pub(crate) operation: Operation,
}

/// The outcome of a write: the object to return, warnings, and whether it was created (201).
#[derive(Debug)]
pub(crate) struct Written {
    pub(crate) object: Value,
    pub(crate) warnings: Vec<String>,
    pub(crate) created: bool,
}

/// Which part of an object a write targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Part {
    Main,
    Status,
}

/// POST: creates an object in `namespace`.
pub(crate) fn create(
    store: &Store,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    body: Value,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let decoded = decode::decode(resource, body, options.field_validation)?;
    let object = decoded.object;
    store.write(|s| {
        let object = insert_new(s, resource, namespace, object, options)?;
        let mut warnings = decoded.warnings;
        warnings.extend(validation::name_warnings(resource, meta::name(&object)));
        Ok(Written {
            object,
            warnings,
            created: true,
        })
    })
}

pub(crate) fn insert_new(
    s: &mut Inner,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    mut object: Value,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    if resource.namespaced {
        let url_namespace = namespace.unwrap_or_default();
        let body_namespace = meta::namespace(&object);
        if !body_namespace.is_empty() && body_namespace != url_namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        meta::set_at(
            &mut object,
            &["metadata", "namespace"],
            Value::from(url_namespace),
        );
    } else {
        meta::remove_at(&mut object, &["metadata", "namespace"]);
    }
    if meta::resource_version(&object).is_some() {
        return Err(ApiError::internal(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    defaults::apply(resource, &mut object);
    managed_fields::record_write(resource, None, &mut object, Part::Main, options, s.clock());
    admission::mutate(s, resource, &mut object);
    for field in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
        "selfLink",
    ] {
        meta::remove_at(&mut object, &["metadata", field]);
    }
    meta::set_at(
        &mut object,
        &["metadata", "uid"],
        Value::from(meta::new_uid()),
    );
    meta::set_at(
        &mut object,
        &["metadata", "creationTimestamp"],
        Value::from(meta::now(s.clock())),
    );
    if resource.tracks_generation {
        meta::set_at(&mut object, &["metadata", "generation"], json!(1));
    } else {
        meta::remove_at(&mut object, &["metadata", "generation"]);
    }
    let generate = meta::str_at(&object, &["metadata", "generateName"])
        .unwrap_or_default()
        .to_owned();
    let generated = meta::name(&object).is_empty() && !generate.is_empty();
    if generated {
        // The API server retries a clashing generated name up to 8 times (1.31+).
        let mut name = meta::generate_name(&generate);
        for _ in 0..8 {
            if !s.contains(&ObjectKey::new(resource, meta::namespace(&object), &name)) {
                break;
            }
            name = meta::generate_name(&generate);
        }
        meta::set_at(&mut object, &["metadata", "name"], Value::from(name));
    }
    defaults::prepare_create(resource, &mut object);
    let name = meta::name(&object).to_owned();
    let errors = validation::validate_create(resource, &object);
    if !errors.is_empty() {
        return Err(ApiError::invalid(resource, &name, &errors));
    }
    if resource.namespaced {
        check_namespace(s, resource, meta::namespace(&object), &name)?;
    }
    admission::validate(s, resource, &object)?;
    if let Some(existing) = s.peek(&ObjectKey::of(resource, &object)) {
        let mut error = ApiError::already_exists(resource, &name, meta::is_deleting(&existing));
        if generated {
            error
                .message
                .push_str(", the server was not able to generate a unique name for the object");
            error.details.insert("retryAfterSeconds".into(), json!(1));
        }
        return Err(error);
    }
    if let Some(custom) = resource.custom
        && s.peek(&ObjectKey::new(resources::crds(), "", custom.definition))
            .is_some_and(|definition| meta::is_deleting(&definition))
    {
        let mut error = ApiError::method_not_allowed("create", resource);
        error.message = "create not allowed while custom resource definition is terminating".into();
        return Err(error);
    }
    size_limits::check(resource, &object, options.dry_run)?;
    if options.dry_run {
        return Ok(object);
    }
    custom::to_storage(resource, &mut object);
    Ok(s.create(resource, object))
}

fn check_namespace(
    s: &Inner,
    resource: &ResourceType,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let namespaces = namespaces();
    match s.peek(&ObjectKey::new(namespaces, "", namespace)) {
        None => Err(ApiError::not_found(namespaces, namespace)),
        Some(ns) if meta::is_deleting(&ns) => {
            let mut error = ApiError::forbidden_object(
                resource,
                name,
                &format!(
                    "unable to create new content in namespace {namespace} because it is being terminated"
                ),
            );
            error.details.insert(
                "causes".into(),
                json!([{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}]),
            );
            Err(error)
        }
        Some(_) => Ok(()),
    }
}

pub(crate) fn services() -> &'static ResourceType {
    // Invariant: services are in the static registry.
    resources::find("", "v1", "services").expect("services are served")
}

pub(crate) fn namespaces() -> &'static ResourceType {
    // Invariant: namespaces are in the static registry.
    resources::find("", "v1", "namespaces").expect("namespaces are served")
}

/// PUT: replaces an object (or its status).
pub(crate) fn replace(
    store: &Store,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
    body: Value,
    part: Part,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    let decoded = decode::decode(resource, body, options.field_validation)?;
    let new = decoded.object;
    let body_name = meta::name(&new);
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let body_namespace = meta::namespace(&new);
    if resource.namespaced && !body_namespace.is_empty() && body_namespace != namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    store.write(|s| {
        let key = ObjectKey::new(resource, namespace, name);
        let Some(old) = s.get(&key) else {
            if part == Part::Main && resource.creates_on_update() {
                return create_on_update(s, resource, &key, new, options).map(|object| Written {
                    object,
                    warnings: decoded.warnings,
                    created: true,
                });
            }
            return Err(ApiError::not_found(resource, name));
        };
        let object = apply_update(s, resource, &old, new, part, options)?;
        Ok(Written {
            object,
            warnings: decoded.warnings,
            created: false,
        })
    })
}

/// A PUT of a missing object of a type whose strategy allows it (`AllowCreateOnUpdate`) creates the object. The
/// body's resourceVersion is ignored, as the storage layer clears it; a uid in the body is still a precondition,
/// which nothing that does not exist can meet.
fn create_on_update(
    s: &mut Inner,
    resource: &'static ResourceType,
    key: &ObjectKey,
    mut new: Value,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    if let Some(sent) = meta::str_at(&new, &["metadata", "uid"]).filter(|u| !u.is_empty()) {
        return Err(crate::registry::delete::precondition_failed(
            resource, key, "UID", sent, "",
        ));
    }
    meta::remove_at(&mut new, &["metadata", "resourceVersion"]);
    insert_new(s, resource, Some(&key.namespace), new, options)
}

/// PATCH: applies a patch of any flavour (server-side apply creates missing objects).
#[expect(
    clippy::too_many_arguments,
    reason = "the parts of one PATCH request, passed straight from the handler"
)]
pub(crate) fn patch(
    store: &Store,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
    patch_type: PatchType,
    body: &[u8],
    part: Part,
    options: &WriteOptions,
) -> Result<Written, ApiError> {
    if patch_type == PatchType::Apply {
        if options.field_manager.as_deref().is_none_or(str::is_empty) {
            return Err(ApiError::invalid_options(
                "PatchOptions",
                &[FieldError::required(
                    "fieldManager",
                    "is required for apply patch",
                )],
            ));
        }
    } else if options.force.is_some() {
        return Err(ApiError::invalid_options(
            "PatchOptions",
            &[FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        ));
    }
    if patch_type == PatchType::Strategic && resource.is_custom() {
        // Custom resources have no Go struct tags to merge lists by, so Kubernetes refuses this patch type.
        return Err(ApiError::unsupported_media_type(&[
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ]));
    }
    let parsed: Option<Value> = match patch_type {
        PatchType::Json => None,
        PatchType::Apply => Some(server_side_apply::parse_body(body)?),
        PatchType::Merge | PatchType::Strategic => Some(
            serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        ),
    };
    let applying;
    let options = if patch_type == PatchType::Apply {
        applying = WriteOptions {
            operation: Operation::Apply,
            ..options.clone()
        };
        &applying
    } else {
        options
    };
    store.write(|s| {
        let key = ObjectKey::new(resource, namespace, name);
        let Some(old) = s.get(&key) else {
            return match (patch_type, &parsed) {
                (PatchType::Apply, Some(applied)) => {
                    server_side_apply::create(s, resource, namespace, name, applied, options)
                }
                _ => Err(ApiError::not_found(resource, name)),
            };
        };
        let mut target = resource.present(old.clone());
        match (patch_type, &parsed) {
            (PatchType::Json, _) => patch::json_patch(&mut target, body)?,
            (PatchType::Merge, Some(p)) => patch::merge_patch(&mut target, p),
            (PatchType::Strategic, Some(p)) => patch::strategic_merge(&mut target, p)?,
            (PatchType::Apply, Some(applied)) => {
                target = server_side_apply::apply(s, resource, &target, applied, part, options)?;
            }
            _ => {}
        }
        let decoded = decode::decode(resource, target, options.field_validation)?;
        let object = apply_update(s, resource, &old, decoded.object, part, options)?;
        Ok(Written {
            object,
            warnings: decoded.warnings,
            created: false,
        })
    })
}

/// The shared update path of PUT and PATCH, given the old and the decoded new object.
fn apply_update(
    s: &mut Inner,
    resource: &'static ResourceType,
    old: &Value,
    mut new: Value,
    part: Part,
    options: &WriteOptions,
) -> Result<Value, ApiError> {
    let name = meta::name(old).to_owned();
    // The API server turns the body's uid into a precondition of the update.
    if let Some(sent) = meta::str_at(&new, &["metadata", "uid"]).filter(|u| !u.is_empty())
        && sent != meta::uid(old)
    {
        let key = ObjectKey::of(resource, old);
        return Err(crate::registry::delete::precondition_failed(
            resource,
            &key,
            "UID",
            sent,
            meta::uid(old),
        ));
    }
    if let Some(sent) = meta::resource_version(&new)
        && Some(sent) != meta::resource_version(old)
    {
        return Err(ApiError::stale(resource, &name));
    }
    match part {
        Part::Status => {
            let status = new.get("status").cloned();
            new = old.clone();
            match status {
                Some(status) => meta::set_at(&mut new, &["status"], status),
                None => {
                    meta::remove_at(&mut new, &["status"]);
                }
            }
        }
        Part::Main => {
            if resource.has_status {
                match old.get("status") {
                    Some(status) => meta::set_at(&mut new, &["status"], status.clone()),
                    None => {
                        meta::remove_at(&mut new, &["status"]);
                    }
                }
            }
            defaults::apply(resource, &mut new);
        }
    }
    let mut errors = Vec::new();
    for field in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "resourceVersion",
        "namespace",
        "name",
        // A server-managed field clients echo back from a GET; this server keeps none.
        "selfLink",
    ] {
        match meta::at(old, &["metadata", field]) {
            Some(value) => meta::set_at(&mut new, &["metadata", field], value.clone()),
            None => {
                meta::remove_at(&mut new, &["metadata", field]);
            }
        }
    }
    managed_fields::record_write(resource, Some(old), &mut new, part, options, s.clock());
    if meta::at(&new, &["metadata", "uid"]).is_none_or(|u| u.as_str() == Some("")) {
        meta::set_at(&mut new, &["metadata", "uid"], Value::from(meta::uid(old)));
    }
    if meta::is_deleting(old) {
        let before = meta::finalizers(old);
        let added: Vec<String> = meta::finalizers(&new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            errors.push(FieldError::forbidden(
                "metadata.finalizers",
                format!("no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"),
            ));
        }
    }
    errors.extend(validation::validate_update(resource, old, &new));
    if !errors.is_empty() {
        return Err(ApiError::invalid(resource, &name, &errors));
    }
    bump_generation(resource, old, &mut new);
    size_limits::check(resource, &new, options.dry_run)?;
    if options.dry_run {
        return Ok(new);
    }
    if crate::registry::delete::removed_by_update(&new) {
        let key = ObjectKey::of(resource, &new);
        return s
            .remove_as(resource, &key, Some(new))
            .ok_or_else(|| ApiError::not_found(resource, &name));
    }
    custom::to_storage(resource, &mut new);
    Ok(s.update(resource, new))
}

/// Counts a change of what `metadata.generation` tracks: the spec, or for a custom resource everything but
/// metadata (and status, with a status subresource).
fn bump_generation(resource: &ResourceType, old: &Value, new: &mut Value) {
    let counted_change = if resource.is_custom() {
        custom::changes_generation(resource, old, new)
    } else {
        old.get("spec") != new.get("spec")
    };
    if resource.tracks_generation && counted_change {
        let generation = meta::at(old, &["metadata", "generation"])
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta::set_at(new, &["metadata", "generation"], json!(generation + 1));
    }
}

/// GET of one object.
pub(crate) fn get(
    store: &Store,
    resource: &'static ResourceType,
    namespace: &str,
    name: &str,
) -> Result<Value, ApiError> {
    store
        .get(resource, namespace, name)
        .ok_or_else(|| ApiError::not_found(resource, name))
}

/// The filters of a list or watch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Filter {
    pub(crate) labels: LabelSelector,
    pub(crate) fields: FieldSelector,
}

impl Filter {
    pub(crate) fn matches(&self, object: &Value) -> bool {
        self.labels.matches(object) && self.fields.matches(object)
    }

    /// Pieces of JSON text every matching object's compact JSON contains (both selectors' `required_text`): an
    /// object whose stored text lacks one is ruled out without parsing it.
    pub(crate) fn required_text(&self) -> Vec<String> {
        let mut required = self.labels.required_text();
        required.extend(self.fields.required_text());
        required
    }

    /// Whether the filter lets every object through (no selector), so objects need not be read to apply it.
    fn is_everything(&self) -> bool {
        self.labels == LabelSelector::default() && self.fields == FieldSelector::default()
    }
}

/// GET of a collection: the `{Kind}List` with the store's current version.
pub(crate) fn list(
    store: &Store,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    filter: &Filter,
) -> Value {
    let required = filter.required_text();
    store.read(|s| {
        let items: Vec<Value> = s
            .list_mentioning(resource, namespace, &required)
            .map(Stored::value)
            .filter(|o| filter.matches(o))
            .collect();
        list_object(resource, s.resource_version(), items)
    })
}

/// [`list`] as JSON text, written from the objects' stored text rather than parsed and serialised again: the
/// body of a plain list of a built-in type, which needs no conversion. Objects are parsed only to apply a selector,
/// and only those whose text has what the label selector requires.
pub(crate) fn list_json(
    store: &Store,
    resource: &'static ResourceType,
    namespace: Option<&str>,
    filter: &Filter,
) -> String {
    let required = filter.required_text();
    store.read(|s| {
        let items: Vec<String> = s
            .list_mentioning(resource, namespace, &required)
            .filter(|stored| filter.is_everything() || filter.matches(&stored.value()))
            .map(Stored::item_json)
            .collect();
        // The members in the order serde_json writes the list object of `list_object` (sorted).
        format!(
            "{{\"apiVersion\":{},\"items\":[{}],\"kind\":{},\"metadata\":{{\"resourceVersion\":\"{}\"}}}}",
            Value::from(resource.api_version()),
            items.join(","),
            Value::from(resource.list_kind()),
            s.resource_version()
        )
    })
}

pub(crate) fn list_object(
    resource: &ResourceType,
    resource_version: u64,
    items: Vec<Value>,
) -> Value {
    // Like a real server, list items carry no kind and apiVersion; the list says what they are.
    let items = items
        .into_iter()
        .map(|mut item| {
            if let Some(map) = item.as_object_mut() {
                map.remove("kind");
                map.remove("apiVersion");
            }
            item
        })
        .collect();
    let mut metadata = Map::new();
    metadata.insert(
        "resourceVersion".into(),
        Value::from(resource_version.to_string()),
    );
    json!({
        "kind": resource.list_kind(),
        "apiVersion": resource.api_version(),
        "metadata": metadata,
        "items": Value::Array(items),
    })
}

/// An empty store holding the namespace `name`, for tests that create objects in it.
#[cfg(test)]
pub(crate) fn store_with_namespace(name: &str) -> Store {
    let store = Store::new(100, crate::clock::Clock::default());
    let namespace = json!({"metadata": {"name": name}});
    create(
        &store,
        namespaces(),
        None,
        namespace,
        &WriteOptions::default(),
    )
    .expect("namespace");
    store
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_written_from_the_stored_text_is_the_list_serialised() {
        let store = store_with_namespace("default");
        let configmaps = resources::find("", "v1", "configmaps").expect("served");
        for (name, team) in [("a", "x"), ("b", "y"), ("c", "x")] {
            let map = json!({"metadata": {"name": name, "labels": {"team": team}},
                "data": {"kind": "\"},{[", "apiVersion": "é"}});
            create(
                &store,
                configmaps,
                Some("default"),
                map,
                &WriteOptions::default(),
            )
            .expect("created");
        }
        let team_x = Filter {
            labels: LabelSelector::parse("team=x").expect("parses"),
            ..Filter::default()
        };
        for (namespace, filter) in [(None, Filter::default()), (Some("default"), team_x)] {
            let listed = list(&store, configmaps, namespace, &filter);
            assert_eq!(
                list_json(&store, configmaps, namespace, &filter),
                listed.to_string()
            );
        }
        assert_eq!(
            list(&store, configmaps, None, &Filter::default())["items"]
                .as_array()
                .map(Vec::len),
            Some(3)
        );
    }

    #[test]
    fn content_for_a_terminating_namespace_is_forbidden_with_the_qualified_resource() {
        let store = Store::new(100, crate::clock::Clock::default());
        store
            .write(|s| {
                let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": "gone", "deletionTimestamp": "2026-01-01T00:00:00Z",
                        "finalizers": ["example.org/hold"]}});
                Ok(s.create(namespaces(), namespace))
            })
            .expect("written");
        let jobs = resources::find("batch", "v1", "jobs").expect("served");
        let job = json!({"metadata": {"name": "j"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
        let error = create(&store, jobs, Some("gone"), job, &WriteOptions::default())
            .expect_err("forbidden");
        assert_eq!(
            error.message,
            r#"jobs.batch "j" is forbidden: unable to create new content in namespace gone because it is being terminated"#
        );
        assert_eq!(error.details["group"], "batch");
        assert_eq!(error.details["kind"], "jobs");
        assert_eq!(error.details["causes"][0]["reason"], "NamespaceTerminating");
    }
}
