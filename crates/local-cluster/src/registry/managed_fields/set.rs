//! Sets of field paths, the unit of ownership in field management, with their `FieldsV1` encoding
//! (`f:name`, `k:{"name":"c"}`, `v:"value"`, `i:0`, and `.` for a path that is owned itself and has owned
//! children), the set algebra the field manager needs, and the path text of conflict messages
//! (`.spec.template.spec.containers[name="c"].image`), all as structured-merge-diff defines them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

/// One step of a field path. The derived order (fields, then keys, then values, then indexes) is the order
/// structured-merge-diff iterates and reports paths in.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Element {
    /// A field of an object: `f:name`.
    Field(String),
    /// An element of a list with key fields, as the compact JSON of its key fields in name order:
    /// `k:{"name":"c"}`.
    Key(String),
    /// An element of a set-like list, as the compact JSON of the value: `v:"a"`.
    Value(String),
    /// An element of a list without keys, by position: `i:0`.
    Index(usize),
}

impl Element {
    /// The element of a keyed list item: its key fields as a JSON object.
    pub(crate) fn key(fields: Map<String, Value>) -> Self {
        Element::Key(Value::Object(fields).to_string())
    }

    /// The element of a set item.
    pub(crate) fn value(value: &Value) -> Self {
        Element::Value(value.to_string())
    }

    fn encode(&self) -> String {
        match self {
            Element::Field(name) => format!("f:{name}"),
            Element::Key(json) => format!("k:{json}"),
            Element::Value(json) => format!("v:{json}"),
            Element::Index(index) => format!("i:{index}"),
        }
    }

    fn decode(text: &str) -> Result<Self, String> {
        let canonical_json = |json: &str| {
            serde_json::from_str::<Value>(json)
                .map(|value| value.to_string())
                .map_err(|e| format!("invalid JSON in {text}: {e}"))
        };
        if let Some(name) = text.strip_prefix("f:") {
            Ok(Element::Field(name.to_owned()))
        } else if let Some(json) = text.strip_prefix("k:") {
            let key = canonical_json(json)?;
            if !key.starts_with('{') {
                return Err(format!("the key of {text} is not a JSON object"));
            }
            Ok(Element::Key(key))
        } else if let Some(json) = text.strip_prefix("v:") {
            Ok(Element::Value(canonical_json(json)?))
        } else if let Some(index) = text.strip_prefix("i:") {
            index
                .parse()
                .map(Element::Index)
                .map_err(|_| format!("invalid index in {text}"))
        } else {
            Err(format!("unknown path element {text:?}"))
        }
    }
}

/// Writes a value as Go's `value.ToString` does in paths: strings quoted, everything else as is.
fn write_value(f: &mut fmt::Formatter<'_>, value: &Value) -> fmt::Result {
    match value {
        Value::String(text) => write!(f, "{text:?}"),
        other => write!(f, "{other}"),
    }
}

impl fmt::Display for Element {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Element::Field(name) => write!(f, ".{name}"),
            Element::Key(json) => {
                f.write_str("[")?;
                if let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(json) {
                    for (i, (name, value)) in fields.iter().enumerate() {
                        if i > 0 {
                            f.write_str(",")?;
                        }
                        write!(f, "{name}=")?;
                        write_value(f, value)?;
                    }
                }
                f.write_str("]")
            }
            Element::Value(json) => {
                f.write_str("[=")?;
                match serde_json::from_str::<Value>(json) {
                    Ok(value) => write_value(f, &value)?,
                    Err(_) => f.write_str(json)?,
                }
                f.write_str("]")
            }
            Element::Index(index) => write!(f, "[{index}]"),
        }
    }
}

/// A path as conflict messages print it: `.spec.replicas`.
pub(crate) fn path_text(path: &[Element]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of paths, as a tree: the elements owned at this level (`members`) and the sets below elements that
/// have owned descendants (`children`). No child set is ever empty.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct FieldSet {
    members: BTreeSet<Element>,
    children: BTreeMap<Element, FieldSet>,
}

impl FieldSet {
    pub(crate) fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.is_empty()
    }

    /// Owns `element` itself at this level.
    pub(crate) fn insert_member(&mut self, element: Element) {
        self.members.insert(element);
    }

    /// Adds `child` as the set below `element`, merging with what is there.
    pub(crate) fn insert_child(&mut self, element: Element, child: FieldSet) {
        if child.is_empty() {
            return;
        }
        match self.children.get_mut(&element) {
            Some(existing) => existing.union(&child),
            None => {
                self.children.insert(element, child);
            }
        }
    }

    /// Adds a path.
    pub(crate) fn insert(&mut self, path: &[Element]) {
        let Some((last, parents)) = path.split_last() else {
            return;
        };
        let mut set = self;
        for element in parents {
            set = set.children.entry(element.clone()).or_default();
        }
        set.members.insert(last.clone());
    }

    pub(crate) fn has_member(&self, element: &Element) -> bool {
        self.members.contains(element)
    }

    pub(crate) fn child(&self, element: &Element) -> Option<&FieldSet> {
        self.children.get(element)
    }

    pub(crate) fn members(&self) -> impl Iterator<Item = &Element> {
        self.members.iter()
    }

    pub(crate) fn children(&self) -> impl Iterator<Item = (&Element, &FieldSet)> {
        self.children.iter()
    }

    pub(crate) fn union(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (element, child) in &other.children {
            self.insert_child(element.clone(), child.clone());
        }
    }

    /// Removes the paths of `other` (only those paths: descendants stay).
    pub(crate) fn difference(&mut self, other: &FieldSet) {
        self.members.retain(|m| !other.members.contains(m));
        for (element, below) in &other.children {
            if let Some(child) = self.children.get_mut(element) {
                child.difference(below);
                if child.is_empty() {
                    self.children.remove(element);
                }
            }
        }
    }

    /// Removes the paths of `other` and everything below its members.
    pub(crate) fn recursive_difference(&mut self, other: &FieldSet) {
        self.members.retain(|m| !other.members.contains(m));
        self.children.retain(|element, child| {
            if other.members.contains(element) {
                return false;
            }
            if let Some(below) = other.children.get(element) {
                child.recursive_difference(below);
            }
            !child.is_empty()
        });
    }

    /// Keeps only the subtrees under `element` (the set a write to one part of an object may own).
    pub(crate) fn only_under(&self, element: &Element) -> FieldSet {
        let mut kept = FieldSet::default();
        if self.members.contains(element) {
            kept.members.insert(element.clone());
        }
        if let Some(child) = self.children.get(element) {
            kept.children.insert(element.clone(), child.clone());
        }
        kept
    }

    pub(crate) fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut both = FieldSet {
            members: self.members.intersection(&other.members).cloned().collect(),
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(theirs) = other.children.get(element) {
                both.insert_child(element.clone(), child.intersection(theirs));
            }
        }
        both
    }

    /// Every path, in structured-merge-diff's order: the members of a level before the paths below it.
    pub(crate) fn paths(&self) -> Vec<Vec<Element>> {
        let mut out = Vec::new();
        self.collect_paths(&mut Vec::new(), &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<Element>, out: &mut Vec<Vec<Element>>) {
        for member in &self.members {
            let mut path = prefix.clone();
            path.push(member.clone());
            out.push(path);
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The `fieldsV1` encoding.
    pub(crate) fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        for member in &self.members {
            if !self.children.contains_key(member) {
                map.insert(member.encode(), Value::Object(Map::new()));
            }
        }
        for (element, child) in &self.children {
            let mut encoded = child.to_fields_v1();
            if self.members.contains(element)
                && let Value::Object(inner) = &mut encoded
            {
                inner.insert(".".into(), Value::Object(Map::new()));
            }
            map.insert(element.encode(), encoded);
        }
        Value::Object(map)
    }

    /// Reads a `fieldsV1` value, or says what is wrong with it.
    pub(crate) fn from_fields_v1(value: &Value) -> Result<FieldSet, String> {
        let Some(map) = value.as_object() else {
            return Err("fieldsV1 must be a JSON object".into());
        };
        let mut set = FieldSet::default();
        for (key, below) in map {
            if key == "." {
                continue;
            }
            let element = Element::decode(key)?;
            let Some(inner) = below.as_object() else {
                return Err(format!("the value of {key} is not a JSON object"));
            };
            if inner.is_empty() || inner.contains_key(".") {
                set.members.insert(element.clone());
            }
            set.insert_child(element, FieldSet::from_fields_v1(below)?);
        }
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn field(name: &str) -> Element {
        Element::Field(name.into())
    }

    #[test]
    fn fields_v1_round_trips_members_children_and_the_dot_of_a_path_owned_with_its_children() {
        let encoded = json!({
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {"f:replicas": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}},
            "f:finalizers": {"v:\"a\"": {}}
        });
        let set = FieldSet::from_fields_v1(&encoded).expect("valid");
        assert_eq!(set.to_fields_v1(), encoded);
        let texts: Vec<String> = set.paths().iter().map(|p| path_text(p)).collect();
        assert_eq!(
            texts,
            [
                ".finalizers[=\"a\"]",
                ".metadata.labels",
                ".metadata.labels.app",
                ".spec.replicas",
                ".spec.template.spec.containers[name=\"c\"]",
                ".spec.template.spec.containers[name=\"c\"].image",
                ".spec.template.spec.containers[name=\"c\"].name",
            ]
        );
    }

    #[test]
    fn keys_print_every_key_field_and_reject_garbage() {
        let port = Element::decode(r#"k:{"protocol": "TCP", "containerPort": 80}"#).expect("key");
        assert_eq!(port.to_string(), r#"[containerPort=80,protocol="TCP"]"#);
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:[1]": {}})).is_err());
    }

    #[test]
    fn difference_keeps_descendants_and_recursive_difference_drops_them() {
        let mut owned = FieldSet::default();
        owned.insert(&[field("spec")]);
        owned.insert(&[field("spec"), field("replicas")]);
        owned.insert(&[field("status"), field("phase")]);
        let mut spec = FieldSet::default();
        spec.insert(&[field("spec")]);
        let mut plain = owned.clone();
        plain.difference(&spec);
        assert!(plain.child(&field("spec")).is_some());
        assert!(!plain.has_member(&field("spec")));
        owned.recursive_difference(&spec);
        assert_eq!(owned.paths(), vec![vec![field("status"), field("phase")]]);
    }
}
