//! Records core/v1 Events for controllers and the kubelet the way client-go's event recorder does (reference
//! §3.7): named `<object>.<hex nanoseconds>`, and a repeat of the same (object, reason, message, type, source)
//! bumps `count` and `lastTimestamp` of the existing Event instead of creating another.
//!
//! It does not collapse *similar* events (`(combined from similar events): …`); the reference allows that.

use serde_json::{Value, json};

use crate::registry::api_error::ApiError;
use crate::registry::meta;
use crate::registry::ops::{self, Part, WriteOptions};
use crate::registry::resources::{self, ResourceType};
use crate::registry::stored::Stored;

/// An Event to record about one object.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Event {
    /// `involvedObject`.
    pub(crate) involved: Value,
    /// `Normal` or `Warning`.
    pub(crate) kind: &'static str,
    pub(crate) reason: String,
    pub(crate) message: String,
    /// `source.component`, e.g. `job-controller`, `kubelet`.
    pub(crate) component: &'static str,
}

impl Event {
    /// An Event about `object` (of type `resource`); `field_path` names a container for kubelet events.
    pub(crate) fn about(
        resource: &ResourceType,
        object: &Value,
        field_path: Option<String>,
        kind: &'static str,
        reason: &str,
        message: String,
        component: &'static str,
    ) -> Self {
        let mut involved = json!({
            "kind": resource.kind,
            "namespace": meta::namespace(object),
            "name": meta::name(object),
            "uid": meta::uid(object),
            "apiVersion": resource.api_version(),
            "resourceVersion": meta::resource_version(object).unwrap_or_default(),
        });
        if let Some(path) = field_path {
            meta::set_at(&mut involved, &["fieldPath"], json!(path));
        }
        Event {
            involved,
            kind,
            reason: reason.to_owned(),
            message,
            component,
        }
    }
}

pub(crate) fn events() -> &'static ResourceType {
    // Invariant: core/v1 events are in the static registry.
    resources::find("", "v1", "events").expect("events are served")
}

fn same(stored: &Value, event: &Event) -> bool {
    let involved = |v: &Value, field: &str| v.get(field).cloned();
    stored.get("reason").and_then(Value::as_str) == Some(event.reason.as_str())
        && stored.get("message").and_then(Value::as_str) == Some(event.message.as_str())
        && stored.get("type").and_then(Value::as_str) == Some(event.kind)
        && meta::str_at(stored, &["source", "component"]) == Some(event.component)
        && ["uid", "fieldPath"].iter().all(|field| {
            stored
                .get("involvedObject")
                .and_then(|o| involved(o, field))
                == involved(&event.involved, field)
        })
}

/// Creates the Event, or counts a repeat on the existing one.
pub(crate) fn record(store: &crate::registry::store::Store, event: &Event) -> Result<(), ApiError> {
    let resource = events();
    let namespace = meta::str_at(&event.involved, &["namespace"])
        .unwrap_or("default")
        .to_owned();
    let now = meta::now(store.clock());
    // Only an event naming the involved object's uid can be the same one: the others are not parsed.
    let uid = [meta::str_at(&event.involved, &["uid"]).unwrap_or_default()];
    let existing = store.read(|s| {
        s.list_mentioning(resource, Some(&namespace), &uid)
            .map(Stored::value)
            .find(|stored| same(stored, event))
    });
    let options = WriteOptions::default();
    if let Some(mut stored) = existing {
        let count = stored.get("count").and_then(Value::as_i64).unwrap_or(1);
        meta::set_at(&mut stored, &["count"], json!(count + 1));
        meta::set_at(&mut stored, &["lastTimestamp"], json!(now));
        let name = meta::name(&stored).to_owned();
        ops::replace(
            store,
            resource,
            &namespace,
            &name,
            stored,
            Part::Main,
            &options,
        )?;
        return Ok(());
    }
    // The kubelet says which node it is, as a real one does; controllers leave both empty.
    let (source, instance) = if event.component == "kubelet" {
        (
            json!({"component": event.component, "host": crate::bootstrap::NODE_NAME}),
            crate::bootstrap::NODE_NAME,
        )
    } else {
        (json!({"component": event.component}), "")
    };
    let nanos = store.clock().now().as_nanosecond();
    let name = format!(
        "{}.{nanos:x}",
        meta::str_at(&event.involved, &["name"]).unwrap_or_default()
    );
    let body = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": event.involved,
        "reason": event.reason,
        "message": event.message,
        "type": event.kind,
        "source": source,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
        "reportingComponent": event.component,
        "reportingInstance": instance,
        "eventTime": null,
    });
    ops::create(store, resource, Some(&namespace), body, &options)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeat_counts_on_the_existing_event_and_a_new_message_is_a_new_event() {
        let store = ops::store_with_namespace("default");
        let pods = resources::find("", "v1", "pods").expect("served");
        let pod = json!({"metadata": {"name": "p", "namespace": "default", "uid": "u1", "resourceVersion": "5"}});
        let event_about = |pod: &Value, message: &str| {
            Event::about(
                pods,
                pod,
                Some("spec.containers{main}".into()),
                "Normal",
                "Pulling",
                message.to_owned(),
                "kubelet",
            )
        };
        let event = |message: &str| event_about(&pod, message);
        record(&store, &event("Pulling image \"a\"")).expect("recorded");
        record(&store, &event("Pulling image \"a\"")).expect("recorded");
        record(&store, &event("Pulling image \"b\"")).expect("recorded");
        let stored = store.list(events());
        assert_eq!(stored.len(), 2);
        assert_eq!(stored[0]["count"], 2);
        assert_eq!(
            stored[0]["involvedObject"]["fieldPath"],
            "spec.containers{main}"
        );
        assert_eq!(stored[0]["source"]["component"], "kubelet");
        assert!(meta::name(&stored[0]).starts_with("p."));
        assert_eq!(stored[1]["count"], 1);

        // The same words about another pod (another uid, even under the same name) are its own event.
        let recreated = json!({"metadata": {"name": "p", "namespace": "default", "uid": "u2"}});
        record(&store, &event_about(&recreated, "Pulling image \"a\"")).expect("recorded");
        let stored = store.list(events());
        assert_eq!(stored.len(), 3);
        assert_eq!(stored[0]["count"], 2);
        assert_eq!(stored[2]["involvedObject"]["uid"], "u2");
        assert_eq!(stored[2]["count"], 1);
    }
}
