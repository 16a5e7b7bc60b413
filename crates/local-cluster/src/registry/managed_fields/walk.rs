//! Walks over objects that field management needs: the set of fields an applied configuration sets, the
//! comparison of two versions of an object (added, modified, removed paths), and the removal of owned paths
//! from an object. They follow structured-merge-diff's `ToFieldSet`, `Compare` and `RemoveItems`.

use serde_json::{Map, Value};

use crate::registry::managed_fields::schema::{Shape, Types, shape};
use crate::registry::managed_fields::set::{Element, FieldSet};

/// The fields a configuration sets: its leaves (scalars, atomic values, empty objects, nulls) and its list
/// elements. Objects with fields are not owned themselves.
pub(crate) fn field_set(types: Types, value: &Value) -> FieldSet {
    match shape(types, None, value) {
        Shape::Object(map) => object_fields(types, map),
        _ => FieldSet::default(),
    }
}

fn object_fields(types: Types, map: &Map<String, Value>) -> FieldSet {
    let mut set = FieldSet::default();
    for (name, value) in map {
        let element = Element::Field(name.clone());
        match shape(types, Some(name), value) {
            Shape::Atomic => set.insert_member(element),
            Shape::Object(inner) => {
                if inner.is_empty() {
                    set.insert_member(element.clone());
                }
                set.insert_child(element, object_fields(types, inner));
            }
            Shape::List(items) => set.insert_child(element, list_fields(types, &items)),
        }
    }
    set
}

fn list_fields(types: Types, items: &[(Element, &Value)]) -> FieldSet {
    let mut set = FieldSet::default();
    for (element, item) in items {
        set.insert_member(element.clone());
        if let Shape::Object(inner) = shape(types, None, item) {
            set.insert_child(element.clone(), object_fields(types, inner));
        }
    }
    set
}

/// Everything below a value that appeared or disappeared as a whole: every field and element, owned itself
/// (what an update that adds an object owns: the object's fields and the object too).
fn every_item(types: Types, field: Option<&str>, value: &Value) -> FieldSet {
    let mut set = FieldSet::default();
    match shape(types, field, value) {
        Shape::Atomic => {}
        Shape::Object(map) => {
            for (name, inner) in map {
                let element = Element::Field(name.clone());
                set.insert_member(element.clone());
                set.insert_child(element, every_item(types, Some(name), inner));
            }
        }
        Shape::List(items) => {
            for (element, item) in items {
                set.insert_member(element.clone());
                set.insert_child(element, every_item(types, None, item));
            }
        }
    }
    set
}

/// How a new version of an object differs from the old one, as paths.
#[derive(Debug, Default)]
pub(crate) struct Comparison {
    pub(crate) added: FieldSet,
    pub(crate) modified: FieldSet,
    pub(crate) removed: FieldSet,
}

impl Comparison {
    fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }

    fn nest(&mut self, element: &Element, below: Comparison) {
        self.added.insert_child(element.clone(), below.added);
        self.modified.insert_child(element.clone(), below.modified);
        self.removed.insert_child(element.clone(), below.removed);
    }

    /// Paths added or changed: what an update takes ownership of.
    pub(crate) fn changed(&self) -> FieldSet {
        let mut changed = self.added.clone();
        changed.union(&self.modified);
        changed
    }
}

/// Compares two versions of an object.
pub(crate) fn compare(types: Types, old: &Value, new: &Value) -> Comparison {
    compare_at(types, None, old, new)
}

fn compare_at(types: Types, field: Option<&str>, old: &Value, new: &Value) -> Comparison {
    let mut comparison = Comparison::default();
    match (shape(types, field, old), shape(types, field, new)) {
        (Shape::Object(old_map), Shape::Object(new_map)) => {
            for (name, new_value) in new_map {
                let element = Element::Field(name.clone());
                compare_item(
                    types,
                    Some(name),
                    &element,
                    old_map.get(name),
                    Some(new_value),
                    &mut comparison,
                );
            }
            for (name, old_value) in old_map {
                if !new_map.contains_key(name) {
                    let element = Element::Field(name.clone());
                    compare_item(
                        types,
                        Some(name),
                        &element,
                        Some(old_value),
                        None,
                        &mut comparison,
                    );
                }
            }
        }
        (Shape::List(old_items), Shape::List(new_items)) => {
            for (element, new_item) in &new_items {
                let old_item = old_items
                    .iter()
                    .find(|(e, _)| e == element)
                    .map(|(_, i)| *i);
                compare_item(
                    types,
                    None,
                    element,
                    old_item,
                    Some(new_item),
                    &mut comparison,
                );
            }
            for (element, old_item) in &old_items {
                if !new_items.iter().any(|(e, _)| e == element) {
                    compare_item(types, None, element, Some(old_item), None, &mut comparison);
                }
            }
        }
        _ => {}
    }
    comparison
}

/// Compares one field or element present on at least one side, recording it in `out` under `element`.
fn compare_item(
    types: Types,
    field: Option<&str>,
    element: &Element,
    old: Option<&Value>,
    new: Option<&Value>,
    out: &mut Comparison,
) {
    match (old, new) {
        (None, Some(new)) => {
            out.added.insert_member(element.clone());
            out.added
                .insert_child(element.clone(), every_item(types, field, new));
        }
        (Some(old), None) => {
            out.removed.insert_member(element.clone());
            out.removed
                .insert_child(element.clone(), every_item(types, field, old));
        }
        (Some(old), Some(new)) => {
            if old == new {
                return;
            }
            let granular = matches!(
                (shape(types, field, old), shape(types, field, new)),
                (Shape::Object(_), Shape::Object(_)) | (Shape::List(_), Shape::List(_))
            );
            if granular {
                let below = compare_at(types, field, old, new);
                if !below.is_empty() {
                    out.nest(element, below);
                }
            } else {
                out.modified.insert_member(element.clone());
            }
        }
        (None, None) => {}
    }
}

/// Removes the members of `set` (with everything below them) from `value`, descending into its children.
pub(crate) fn remove_items(types: Types, value: &mut Value, set: &FieldSet) {
    remove_at(types, None, value, set);
}

fn remove_at(types: Types, field: Option<&str>, value: &mut Value, set: &FieldSet) {
    let elements: Option<Vec<Element>> = match shape(types, field, value) {
        Shape::List(items) => Some(items.into_iter().map(|(element, _)| element).collect()),
        _ => None,
    };
    match (value, elements) {
        (Value::Object(map), None) => {
            map.retain(|name, _| !set.has_member(&Element::Field(name.clone())));
            for (element, below) in set.children() {
                if let Element::Field(name) = element
                    && let Some(inner) = map.get_mut(name)
                {
                    remove_at(types, Some(name), inner, below);
                }
            }
        }
        (Value::Array(items), Some(elements)) => {
            let mut kept = Vec::with_capacity(items.len());
            for (mut item, element) in std::mem::take(items).into_iter().zip(elements) {
                if set.has_member(&element) {
                    continue;
                }
                if let Some(below) = set.child(&element) {
                    remove_at(types, None, &mut item, below);
                }
                kept.push(item);
            }
            *items = kept;
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::managed_fields::set::path_text;

    fn texts(set: &FieldSet) -> Vec<String> {
        set.paths().iter().map(|p| path_text(p)).collect()
    }

    #[test]
    fn an_applied_configuration_owns_leaves_and_list_elements_but_not_the_objects_around_them() {
        let config = json!({"metadata": {"name": "d", "labels": {"app": "x"}},
            "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "x"}}, "template": {"spec": {
                "containers": [{"name": "c", "image": "i", "args": ["a"]}]}}}});
        assert_eq!(
            texts(&field_set(Types::BuiltIn, &config)),
            [
                ".metadata.name",
                ".metadata.labels.app",
                ".spec.replicas",
                ".spec.selector",
                ".spec.template.spec.containers[name=\"c\"]",
                ".spec.template.spec.containers[name=\"c\"].args",
                ".spec.template.spec.containers[name=\"c\"].image",
                ".spec.template.spec.containers[name=\"c\"].name",
            ]
        );
    }

    #[test]
    fn a_comparison_owns_new_objects_with_their_fields_and_reports_changed_leaves_and_lost_elements()
     {
        let old = json!({"metadata": {"labels": {"a": "1"}}, "spec": {"replicas": 1,
            "containers": [{"name": "c", "image": "i"}, {"name": "d"}]}});
        let new = json!({"metadata": {"labels": {"a": "1"}, "annotations": {"n": "v"}},
            "spec": {"replicas": 2, "containers": [{"name": "c", "image": "i"}]}});
        let comparison = compare(Types::BuiltIn, &old, &new);
        assert_eq!(
            texts(&comparison.added),
            [".metadata.annotations", ".metadata.annotations.n"]
        );
        assert_eq!(texts(&comparison.modified), [".spec.replicas"]);
        assert_eq!(
            texts(&comparison.removed),
            [
                ".spec.containers[name=\"d\"]",
                ".spec.containers[name=\"d\"].name"
            ]
        );
    }

    #[test]
    fn removing_items_drops_owned_fields_and_list_elements_with_everything_below() {
        let mut value = json!({"metadata": {"labels": {"a": "1", "b": "2"}},
            "spec": {"containers": [{"name": "c", "image": "i"}, {"name": "d", "image": "j"}]}});
        let mut set = FieldSet::default();
        set.insert(&[
            Element::Field("metadata".into()),
            Element::Field("labels".into()),
            Element::Field("b".into()),
        ]);
        set.insert(&[
            Element::Field("spec".into()),
            Element::Field("containers".into()),
            Element::key(Map::from_iter([("name".to_owned(), json!("d"))])),
        ]);
        remove_items(Types::BuiltIn, &mut value, &set);
        assert_eq!(
            value,
            json!({"metadata": {"labels": {"a": "1"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}})
        );
    }
}
