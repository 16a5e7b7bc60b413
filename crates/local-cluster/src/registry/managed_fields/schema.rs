//! How field management sees the shape of a value: which lists are maps keyed by some of their elements'
//! fields, which are sets, which are atomic, and which objects are owned as a whole. Kubernetes reads this from
//! the types' OpenAPI (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`, falling
//! back to the strategic-merge patch tags); without schemas this server decides by field name, with the same
//! merge keys strategic merge patch uses, which is unambiguous for the served built-in types. Custom resources
//! get the deduced schema of an object without list-type markers: every list atomic, every object granular.

use serde_json::{Map, Value};

use crate::registry::managed_fields::set::Element;
use crate::registry::patch;

/// Which kind of object the values belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Types {
    BuiltIn,
    Custom,
}

/// The shape of one value for field management.
pub(crate) enum Shape<'a> {
    /// Owned as a whole: scalars, null, atomic lists and atomic objects.
    Atomic,
    /// An object whose fields are owned one by one.
    Object(&'a Map<String, Value>),
    /// A list whose elements are owned one by one, each by its path element.
    List(Vec<(Element, &'a Value)>),
}

/// Objects the built-in types mark atomic (`+structType=atomic`, `+mapType=atomic`): label selectors, node
/// selectors, references to one key of a ConfigMap or Secret.
fn is_atomic_object(field: &str) -> bool {
    matches!(
        field,
        "selector"
            | "labelSelector"
            | "namespaceSelector"
            | "nodeSelector"
            | "configMapKeyRef"
            | "secretKeyRef"
            | "fieldRef"
            | "resourceFieldRef"
    )
}

/// The second key field of lists keyed by two (`+listMapKey`), with its schema default, if any: ports are
/// keyed by port and protocol (TCP unless said otherwise).
fn second_key(field: &str) -> Option<(&'static str, Option<&'static str>)> {
    match field {
        "ports" => Some(("protocol", Some("TCP"))),
        "topologySpreadConstraints" => Some(("whenUnsatisfiable", None)),
        _ => None,
    }
}

/// The path element of a keyed list item, or `None` when it lacks a key field (the list is then atomic).
fn key_element(item: &Value, first: &str, second: Option<(&str, Option<&str>)>) -> Option<Element> {
    let mut fields = Map::new();
    fields.insert(first.to_owned(), item.get(first)?.clone());
    if let Some((name, default)) = second {
        let value = match item.get(name) {
            Some(value) => value.clone(),
            None => Value::from(default?),
        };
        fields.insert(name.to_owned(), value);
    }
    Some(Element::key(fields))
}

/// The shape of `value`, found at field `field` (`None` for list elements and the root).
pub(crate) fn shape<'a>(types: Types, field: Option<&str>, value: &'a Value) -> Shape<'a> {
    match value {
        Value::Object(map) => {
            if types == Types::BuiltIn && field.is_some_and(is_atomic_object) {
                Shape::Atomic
            } else {
                Shape::Object(map)
            }
        }
        Value::Array(items) if types == Types::BuiltIn => {
            let Some(field) = field else {
                return Shape::Atomic;
            };
            if patch::is_merged_primitive_list(field) {
                return Shape::List(items.iter().map(|i| (Element::value(i), i)).collect());
            }
            let Some(first) = patch::merge_key(field, items) else {
                return Shape::Atomic;
            };
            let second = second_key(field);
            items
                .iter()
                .map(|item| key_element(item, first, second).map(|element| (element, item)))
                .collect::<Option<Vec<_>>>()
                .map_or(Shape::Atomic, Shape::List)
        }
        _ => Shape::Atomic,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn elements(shape: Shape<'_>) -> Vec<String> {
        match shape {
            Shape::List(items) => items.iter().map(|(e, _)| e.to_string()).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn container_ports_are_keyed_by_port_and_protocol_with_tcp_by_default() {
        let ports = json!([{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]);
        assert_eq!(
            elements(shape(Types::BuiltIn, Some("ports"), &ports)),
            [
                r#"[containerPort=80,protocol="TCP"]"#,
                r#"[containerPort=53,protocol="UDP"]"#
            ]
        );
    }

    #[test]
    fn selectors_and_unkeyed_lists_are_atomic_and_custom_resources_have_no_keyed_lists() {
        let selector = json!({"matchLabels": {"a": "b"}});
        assert!(matches!(
            shape(Types::BuiltIn, Some("selector"), &selector),
            Shape::Atomic
        ));
        let args = json!(["a"]);
        assert!(matches!(
            shape(Types::BuiltIn, Some("args"), &args),
            Shape::Atomic
        ));
        let containers = json!([{"name": "c"}]);
        assert_eq!(
            elements(shape(Types::BuiltIn, Some("containers"), &containers)),
            [r#"[name="c"]"#]
        );
        assert!(matches!(
            shape(Types::Custom, Some("containers"), &containers),
            Shape::Atomic
        ));
        let unnamed = json!([{"image": "x"}]);
        assert!(matches!(
            shape(Types::BuiltIn, Some("containers"), &unnamed),
            Shape::Atomic
        ));
    }
}
