//! Decoding a JSON body into its k8s-openapi type the way the API server's Go decoder does, so that what is
//! stored and what is refused match a real cluster:
//!
//! - a value of the wrong JSON type is refused with Go's `encoding/json` message, which names the innermost
//!   struct, the field path and the Go type (`json: cannot unmarshal string into Go struct field
//!   DeploymentSpec.spec.replicas of type int32`); `null` leaves a field's zero value, as in Go;
//! - every `resource.Quantity`, wherever the type has one, takes its canonical form (`0.5Gi` → `512Mi`);
//! - an empty list or map in an optional field is dropped, as Go's `omitempty` drops it when the object is
//!   encoded again (`env: []`, `labels: {}`), while required lists (`containers: []`) are kept;
//! - the fields the type does not know are reported with their paths, for `fieldValidation`.
//!
//! It is a `serde::Deserializer` over the parsed body that keeps the path it is at: the type's own
//! `Deserialize` says what it expects at each step (a struct and its name, a list, an `int32`, a `Quantity`), so
//! no table of field types is needed.

use std::cell::RefCell;
use std::fmt::{self, Write as _};

use serde::Serialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, IntoDeserializer, Visitor};
use serde_json::Value;

use crate::registry::quantity;

/// An object decoded through its type and encoded again, with the paths of the fields the type does not know.
#[derive(Debug)]
pub(crate) struct Typed {
    pub(crate) object: Value,
    pub(crate) unknown: Vec<String>,
}

/// Decodes `value` as a `K` and encodes it again; the error is the message the API server gives.
pub(crate) fn roundtrip<K: DeserializeOwned + Serialize>(value: &Value) -> Result<Typed, String> {
    let found = RefCell::new(Findings::default());
    let root = Path {
        parent: None,
        segment: Segment::Root,
    };
    let typed = K::deserialize(Node {
        value,
        path: &root,
        found: &found,
        container: "",
        optional: false,
    })
    .map_err(|e| e.to_string())?;
    let mut object = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    let found = found.into_inner();
    // Only object keys are removed, so no recorded index goes stale.
    for path in &found.empty {
        remove(&mut object, path);
    }
    Ok(Typed {
        object,
        unknown: found.unknown,
    })
}

/// The list fields that Go encodes even when empty, because their struct tag has no `omitempty`: the required
/// lists of the served types (k8s-openapi decodes required and optional fields alike through an `Option`, so
/// the decoder cannot tell them apart) and the optional lists without `omitempty`.
const KEPT_WHEN_EMPTY: &[(&str, &str)] = &[
    ("PodSpec", "containers"),
    ("LimitRangeSpec", "limits"),
    ("NodeSelector", "nodeSelectorTerms"),
    ("TopologySelectorLabelRequirement", "values"),
    ("RBDVolumeSource", "monitors"),
    ("RBDPersistentVolumeSource", "monitors"),
    ("CephFSVolumeSource", "monitors"),
    ("CephFSPersistentVolumeSource", "monitors"),
    ("PodFailurePolicy", "rules"),
    ("PodFailurePolicyOnExitCodesRequirement", "values"),
    ("SuccessPolicy", "rules"),
    ("PolicyRule", "verbs"),
    ("ClusterRole", "rules"),
    ("Role", "rules"),
    ("CustomResourceDefinitionSpec", "versions"),
    ("CustomResourceDefinitionStatus", "storedVersions"),
    ("WebhookConversion", "conversionReviewVersions"),
];

#[derive(Debug, Default)]
struct Findings {
    unknown: Vec<String>,
    /// Paths of empty optional lists and maps.
    empty: Vec<Vec<Step>>,
}

#[derive(Debug)]
enum Step {
    Key(String),
    Index(usize),
}

fn remove(object: &mut Value, path: &[Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut here = object;
    for step in parents {
        let next = match (step, here) {
            (Step::Key(key), Value::Object(map)) => map.get_mut(key),
            (Step::Index(i), Value::Array(items)) => items.get_mut(*i),
            _ => None,
        };
        match next {
            Some(next) => here = next,
            None => return,
        }
    }
    if let (Step::Key(key), Value::Object(map)) = (last, here) {
        map.remove(key);
    }
}

#[derive(Clone, Copy)]
enum Segment<'p> {
    Root,
    /// A struct field: part of Go's field path in errors.
    Field(&'p str),
    /// A map key: not part of Go's field path.
    Key(&'p str),
    Index(usize),
}

/// Where a value is, as a list linked to its parents (no allocation per field).
#[derive(Clone, Copy)]
struct Path<'p> {
    parent: Option<&'p Path<'p>>,
    segment: Segment<'p>,
}

impl<'p> Path<'p> {
    fn segments(&self) -> Vec<Segment<'p>> {
        let mut out = vec![self.segment];
        let mut here = self.parent;
        while let Some(path) = here {
            out.push(path.segment);
            here = path.parent;
        }
        out.reverse();
        out
    }

    /// Go's field stack: struct field names only, joined with dots.
    fn go_fields(&self) -> String {
        let fields: Vec<&str> = self
            .segments()
            .into_iter()
            .filter_map(|s| match s {
                Segment::Field(name) => Some(name),
                _ => None,
            })
            .collect();
        fields.join(".")
    }

    /// The path Kubernetes' strict decoding names: `spec.containers[0].bar`.
    fn display(&self) -> String {
        let mut out = String::new();
        for segment in self.segments() {
            match segment {
                Segment::Root => {}
                Segment::Field(name) | Segment::Key(name) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(name);
                }
                Segment::Index(i) => {
                    let _ = write!(out, "[{i}]");
                }
            }
        }
        out
    }

    fn steps(&self) -> Vec<Step> {
        self.segments()
            .into_iter()
            .filter_map(|s| match s {
                Segment::Root => None,
                Segment::Field(name) | Segment::Key(name) => Some(Step::Key(name.to_owned())),
                Segment::Index(i) => Some(Step::Index(i)),
            })
            .collect()
    }

    fn field_name(&self) -> Option<&'p str> {
        match self.segment {
            Segment::Field(name) => Some(name),
            _ => None,
        }
    }
}

/// A decoding error: a message for the client, or (internally) the Go type a probe found.
#[derive(Debug)]
enum Error {
    Message(String),
    Probe(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Message(text) | Error::Probe(text) => f.write_str(text),
        }
    }
}

impl std::error::Error for Error {}

impl de::Error for Error {
    fn custom<T: fmt::Display>(message: T) -> Self {
        Error::Message(message.to_string())
    }
}

/// A value of the body at a path, inside the struct named `container`.
struct Node<'de, 'p> {
    value: &'de Value,
    path: &'p Path<'p>,
    found: &'p RefCell<Findings>,
    container: &'static str,
    /// Whether the type holds this value in an `Option`, as k8s-openapi does for every field of a struct.
    optional: bool,
}

/// The JSON kind as Go names it in `cannot unmarshal <kind>`.
fn json_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(_) => "number".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

impl Node<'_, '_> {
    fn mismatch_as(&self, kind: &str, go_type: &str) -> Error {
        let fields = self.path.go_fields();
        Error::Message(if fields.is_empty() {
            format!("json: cannot unmarshal {kind} into Go value of type {go_type}")
        } else {
            format!(
                "json: cannot unmarshal {kind} into Go struct field {}.{fields} of type {go_type}",
                self.container
            )
        })
    }

    fn mismatch(&self, go_type: &str) -> Error {
        self.mismatch_as(&json_kind(self.value), go_type)
    }

    /// Notes an empty list or map that Go's `omitempty` would not encode.
    fn note_if_empty(&self, empty: bool) {
        let kept = self
            .path
            .field_name()
            .is_some_and(|field| KEPT_WHEN_EMPTY.contains(&(self.container, field)));
        if self.optional && empty && !kept {
            self.found.borrow_mut().empty.push(self.path.steps());
        }
    }
}

/// What a visitor says it expects (its `expecting`), which names the type for the types that decode themselves
/// from any JSON (`IntOrString`).
struct Expecting<'v, V>(&'v V);

impl<'de, V: Visitor<'de>> fmt::Display for Expecting<'_, V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.expecting(f)
    }
}

/// The Go type a visitor expects, found by offering it a value of every kind in turn (see [`Probe`]).
fn probe_type<'de, V: Visitor<'de>>(
    decode: impl FnOnce(Probe) -> Result<V::Value, Error>,
) -> String {
    match decode(Probe) {
        Err(Error::Probe(name)) => name,
        _ => "interface {}".into(),
    }
}

macro_rules! integer {
    ($method:ident, $visit:ident, $ty:ty, $go:expr) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.value {
                Value::Null => visitor.$visit(0),
                Value::Number(number) => {
                    let fits = number
                        .as_i64()
                        .and_then(|n| <$ty>::try_from(n).ok())
                        .or_else(|| number.as_u64().and_then(|n| <$ty>::try_from(n).ok()));
                    match fits {
                        Some(n) => visitor.$visit(n),
                        None => Err(self.mismatch_as(&format!("number {number}"), $go)),
                    }
                }
                _ => Err(self.mismatch($go)),
            }
        }
    };
}

impl<'de> Deserializer<'de> for Node<'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Free-form JSON (`JSON`, `RawExtension`) takes anything. Int-or-string refuses what is neither:
        // Go's `IntOrString.UnmarshalJSON` decodes anything but a string into its `int32`, so the error is that
        // of an int32 field.
        let int_or_string = Expecting(&visitor).to_string() == "IntOrString";
        self.value.deserialize_any(visitor).map_err(|error| {
            if !int_or_string {
                return Error::Message(error.to_string());
            }
            match self.value {
                Value::Number(number) => self.mismatch_as(&format!("number {number}"), "int32"),
                _ => self.mismatch("int32"),
            }
        })
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_bool(false),
            Value::Bool(b) => visitor.visit_bool(*b),
            _ => Err(self.mismatch("bool")),
        }
    }

    integer!(deserialize_i8, visit_i8, i8, "int8");
    integer!(deserialize_i16, visit_i16, i16, "int16");
    integer!(deserialize_i32, visit_i32, i32, "int32");
    integer!(deserialize_i64, visit_i64, i64, "int64");
    integer!(deserialize_u8, visit_u8, u8, "uint8");
    integer!(deserialize_u16, visit_u16, u16, "uint16");
    integer!(deserialize_u32, visit_u32, u32, "uint32");
    integer!(deserialize_u64, visit_u64, u64, "uint64");

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_f64(0.0),
            Value::Number(number) => match number.as_f64() {
                Some(n) => visitor.visit_f64(n),
                None => Err(self.mismatch_as(&format!("number {number}"), "float64")),
            },
            _ => Err(self.mismatch("float64")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_borrowed_str(""),
            Value::String(text) => visitor.visit_borrowed_str(text),
            _ => Err(self.mismatch("string")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if self.value.is_null() {
            return visitor.visit_none();
        }
        visitor.visit_some(Node {
            optional: true,
            ..self
        })
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        if name != "Quantity" {
            return visitor.visit_newtype_struct(self);
        }
        // `Quantity.UnmarshalJSON`: a string or a bare number, stored in its canonical form; null is zero.
        let text = match self.value {
            Value::Null => "0".to_owned(),
            Value::String(text) => text.clone(),
            other => other.to_string(),
        };
        let canonical = quantity::canonicalize(&text).map_err(Error::Message)?;
        visitor.visit_newtype_struct(IntoDeserializer::<Error>::into_deserializer(canonical))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_seq(Items {
                remaining: [].iter().enumerate(),
                parent: self.path,
                found: self.found,
                container: self.container,
            }),
            Value::Array(items) => {
                self.note_if_empty(items.is_empty());
                visitor.visit_seq(Items {
                    remaining: items.iter().enumerate(),
                    parent: self.path,
                    found: self.found,
                    container: self.container,
                })
            }
            _ => {
                let element = probe_type::<V>(|probe| probe.deserialize_seq(visitor));
                Err(self.mismatch(&element))
            }
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_map(Entries::empty(&self, false)),
            Value::Object(map) => {
                self.note_if_empty(map.is_empty());
                visitor.visit_map(Entries::new(&self, map, false, self.container))
            }
            _ => {
                let go_type = probe_type::<V>(|probe| probe.deserialize_map(visitor));
                Err(self.mismatch(&go_type))
            }
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Value::Null => visitor.visit_map(Entries::empty(&self, true)),
            Value::Object(map) => visitor.visit_map(Entries::new(&self, map, true, name)),
            _ => Err(self.mismatch(&format!("v1.{name}"))),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.value
            .deserialize_enum(name, variants, visitor)
            .map_err(|e| Error::Message(e.to_string()))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // A type ignores exactly the fields it does not know.
        if !self.value.is_null() {
            self.found.borrow_mut().unknown.push(self.path.display());
        }
        visitor.visit_unit()
    }
}

struct Items<'de, 'p> {
    remaining: std::iter::Enumerate<std::slice::Iter<'de, Value>>,
    parent: &'p Path<'p>,
    found: &'p RefCell<Findings>,
    container: &'static str,
}

impl<'de> de::SeqAccess<'de> for Items<'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some((index, value)) = self.remaining.next() else {
            return Ok(None);
        };
        let path = Path {
            parent: Some(self.parent),
            segment: Segment::Index(index),
        };
        seed.deserialize(Node {
            value,
            path: &path,
            found: self.found,
            container: self.container,
            optional: false,
        })
        .map(Some)
    }
}

/// The entries of a struct (keys are fields) or of a map (keys are not).
struct Entries<'de, 'p> {
    remaining: Option<serde_json::map::Iter<'de>>,
    pending: Option<(&'de str, &'de Value)>,
    parent: &'p Path<'p>,
    found: &'p RefCell<Findings>,
    container: &'static str,
    is_struct: bool,
}

impl<'de, 'p> Entries<'de, 'p> {
    fn new(
        node: &Node<'de, 'p>,
        map: &'de serde_json::Map<String, Value>,
        is_struct: bool,
        container: &'static str,
    ) -> Self {
        Entries {
            remaining: Some(map.iter()),
            pending: None,
            parent: node.path,
            found: node.found,
            container,
            is_struct,
        }
    }

    fn empty(node: &Node<'de, 'p>, is_struct: bool) -> Self {
        Entries {
            remaining: None,
            pending: None,
            parent: node.path,
            found: node.found,
            container: node.container,
            is_struct,
        }
    }
}

impl<'de> de::MapAccess<'de> for Entries<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.remaining.as_mut().and_then(Iterator::next) else {
            return Ok(None);
        };
        self.pending = Some((key.as_str(), value));
        seed.deserialize(BorrowedStrDeserializer::new(key.as_str()))
            .map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let Some((key, value)) = self.pending.take() else {
            return Err(Error::Message(
                "a map value was asked for before its key".into(),
            ));
        };
        let path = Path {
            parent: Some(self.parent),
            segment: if self.is_struct {
                Segment::Field(key)
            } else {
                Segment::Key(key)
            },
        };
        seed.deserialize(Node {
            value,
            path: &path,
            found: self.found,
            container: self.container,
            optional: false,
        })
    }
}

/// Answers every request with the Go name of the type asked for, to name the element type of a list or map in
/// an error (`[]v1.Container`) without a table of types.
struct Probe;

fn probed<T>(name: impl Into<String>) -> Result<T, Error> {
    Err(Error::Probe(name.into()))
}

macro_rules! probe {
    ($($method:ident => $go:expr),* $(,)?) => {
        $(fn $method<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Error> {
            probed($go)
        })*
    };
}

impl<'de> Deserializer<'de> for Probe {
    type Error = Error;

    probe!(
        deserialize_any => "interface {}",
        deserialize_bool => "bool",
        deserialize_i8 => "int8",
        deserialize_i16 => "int16",
        deserialize_i32 => "int32",
        deserialize_i64 => "int64",
        deserialize_u8 => "uint8",
        deserialize_u16 => "uint16",
        deserialize_u32 => "uint32",
        deserialize_u64 => "uint64",
        deserialize_f32 => "float32",
        deserialize_f64 => "float64",
        deserialize_char => "string",
        deserialize_str => "string",
        deserialize_string => "string",
        deserialize_identifier => "string",
        deserialize_bytes => "[]uint8",
        deserialize_byte_buf => "[]uint8",
        deserialize_unit => "struct {}",
        deserialize_ignored_any => "interface {}",
    );

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _visitor: V,
    ) -> Result<V::Value, Error> {
        probed(format!("v1.{name}"))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        match name {
            "Quantity" => probed("resource.Quantity"),
            _ => visitor.visit_newtype_struct(self),
        }
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match visitor.visit_seq(ProbeItems) {
            Err(Error::Probe(element)) => probed(format!("[]{element}")),
            _ => probed("[]interface {}"),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match visitor.visit_map(ProbeEntries) {
            Err(Error::Probe(value)) => probed(format!("map[string]{value}")),
            _ => probed("map[string]interface {}"),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        _fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        probed(format!("v1.{name}"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        _variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Error> {
        probed(format!("v1.{name}"))
    }
}

/// A list of one element, the probe.
struct ProbeItems;

impl<'de> de::SeqAccess<'de> for ProbeItems {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        seed.deserialize(Probe).map(Some)
    }
}

/// A map of one entry whose value is the probe.
struct ProbeEntries;

impl<'de> de::MapAccess<'de> for ProbeEntries {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        seed.deserialize(BorrowedStrDeserializer::new("")).map(Some)
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(Probe)
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::{Node as KubeNode, PodSpec, ResourceQuota};
    use serde_json::json;

    use super::*;

    #[test]
    fn quantities_anywhere_in_the_type_take_their_canonical_form() {
        let spec = json!({"containers": [{"name": "c", "resources": {"limits": {"cpu": 2, "memory": "1024Mi"}},
                "env": [{"name": "E", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Ki"}}}]}],
            "overhead": {"cpu": "0.25"},
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": "0.5Gi"}},
                {"name": "w", "ephemeral": {"volumeClaimTemplate": {"spec": {"resources": {"requests": {"storage": "2048Mi"}}}}}}]});
        let typed = roundtrip::<PodSpec>(&spec).expect("decodes");
        let object = typed.object;
        assert_eq!(
            object["containers"][0]["resources"]["limits"],
            json!({"cpu": "2", "memory": "1Gi"})
        );
        assert_eq!(
            object["containers"][0]["env"][0]["valueFrom"]["resourceFieldRef"]["divisor"],
            "1Ki"
        );
        assert_eq!(object["overhead"]["cpu"], "250m");
        assert_eq!(object["volumes"][0]["emptyDir"]["sizeLimit"], "512Mi");
        assert_eq!(
            object["volumes"][1]["ephemeral"]["volumeClaimTemplate"]["spec"]["resources"]["requests"]
                ["storage"],
            "2Gi"
        );
        let quota = json!({"spec": {"hard": {"pods": "10"}}, "status": {"used": {"limits.memory": "0.5Gi"}}});
        let typed = roundtrip::<ResourceQuota>(&quota).expect("decodes");
        assert_eq!(typed.object["status"]["used"]["limits.memory"], "512Mi");
        let node = json!({"status": {"capacity": {"cpu": "4000m"}}});
        let typed = roundtrip::<KubeNode>(&node).expect("decodes");
        assert_eq!(typed.object["status"]["capacity"]["cpu"], "4");
    }

    #[test]
    fn empty_optional_lists_and_maps_go_and_required_ones_stay() {
        let spec = json!({"containers": [], "initContainers": [], "nodeSelector": {}, "securityContext": {},
            "volumes": [{"name": "v", "configMap": {"name": "c", "items": []}}]});
        let object = roundtrip::<PodSpec>(&spec).expect("decodes").object;
        assert_eq!(
            object,
            json!({"containers": [], "securityContext": {}, "volumes": [{"name": "v", "configMap": {"name": "c"}}]}),
            "containers is required, securityContext a struct; the rest is omitempty"
        );
    }

    #[test]
    fn wrong_types_get_go_messages_naming_the_field() {
        let error = |body: Value| roundtrip::<Deployment>(&body).expect_err("refused");
        assert_eq!(
            error(json!({"spec": {"replicas": "two"}})),
            "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        assert_eq!(
            error(json!({"spec": {"replicas": 1.5}})),
            "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
        );
        assert_eq!(
            error(json!({"spec": {"template": {"spec": {"containers": {}}}}})),
            "json: cannot unmarshal object into Go struct field PodSpec.spec.template.spec.containers of type []v1.Container"
        );
        assert_eq!(
            error(json!({"metadata": {"labels": {"a": 1}}})),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
        );
        assert_eq!(
            error(json!({"metadata": {"labels": []}})),
            "json: cannot unmarshal array into Go struct field ObjectMeta.metadata.labels of type map[string]string"
        );
        assert_eq!(
            error(json!({"spec": "x"})),
            "json: cannot unmarshal string into Go struct field Deployment.spec of type v1.DeploymentSpec"
        );
        assert_eq!(
            error(json!([])),
            "json: cannot unmarshal array into Go value of type v1.Deployment"
        );
        assert_eq!(
            error(json!({"metadata": {"creationTimestamp": 5}})),
            "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.creationTimestamp of type string",
            "metav1.Time decodes a string"
        );
        let surge = |value: Value| {
            error(json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": value}}}}))
        };
        assert_eq!(
            surge(json!(true)),
            "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32",
            "int-or-string decodes anything but a string as its int32"
        );
        assert_eq!(
            surge(json!(5_000_000_000_u64)),
            "json: cannot unmarshal number 5000000000 into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge of type int32"
        );
    }

    #[test]
    fn unknown_fields_are_reported_with_their_paths_and_nulls_are_zero_values() {
        let body = json!({"spec": {"foo": 1, "replicas": null, "template": {"spec": {"containers": [{"name": null, "bar": true}]}}}});
        let typed = roundtrip::<Deployment>(&body).expect("decodes");
        assert_eq!(
            typed.unknown,
            vec![
                "spec.foo".to_owned(),
                "spec.template.spec.containers[0].bar".into()
            ]
        );
        assert_eq!(
            typed.object["spec"]["template"]["spec"]["containers"][0]["name"],
            ""
        );
        assert!(typed.object["spec"].get("replicas").is_none());
    }
}
