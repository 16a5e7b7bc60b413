//! `events.k8s.io/v1` Events are another view of the core/v1 Events, sharing their storage, as on a real
//! cluster: an Event recorded through one API group is listed by the other. Objects are stored in the core form
//! and converted on the way in and out (kube-runtime's event `Recorder` writes through `events.k8s.io/v1`).

use serde_json::{Map, Value};

/// Field names that differ: (events.k8s.io/v1, core/v1).
const RENAMES: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Converts between the storage (core) form and the events.k8s.io form of an object.
#[derive(Debug)]
pub(crate) struct View {
    /// The group of the type whose storage holds the objects.
    pub(crate) storage_group: &'static str,
    pub(crate) to_storage: fn(Value) -> Value,
    pub(crate) from_storage: fn(Value) -> Value,
}

pub(crate) static EVENTS: View = View {
    storage_group: "",
    to_storage: to_core,
    from_storage: from_core,
};

fn rename(mut value: Value, api_version: &str, forward: bool) -> Value {
    if let Some(map) = value.as_object_mut() {
        let mut renamed = Map::new();
        for (key, field) in std::mem::take(map) {
            let name = RENAMES
                .iter()
                .find(|(new, old)| if forward { new == &key } else { old == &key })
                .map_or(key.clone(), |(new, old)| {
                    if forward {
                        (*old).to_owned()
                    } else {
                        (*new).to_owned()
                    }
                });
            renamed.insert(name, field);
        }
        renamed.insert("apiVersion".into(), Value::from(api_version));
        *map = renamed;
    }
    value
}

fn to_core(value: Value) -> Value {
    rename(value, "v1", true)
}

fn from_core(value: Value) -> Value {
    rename(value, "events.k8s.io/v1", false)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn events_convert_both_ways() {
        let new = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": {"name": "e"},
            "regarding": {"kind": "Job", "name": "j"}, "note": "hello", "reason": "Started", "reportingController": "me"});
        let core = to_core(new.clone());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["involvedObject"]["name"], "j");
        assert_eq!(core["message"], "hello");
        assert_eq!(core["reportingComponent"], "me");
        assert!(core.get("note").is_none());
        assert_eq!(from_core(core), new);
    }
}
