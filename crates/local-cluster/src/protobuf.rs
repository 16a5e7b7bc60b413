//! Decoding the Kubernetes protobuf encoding of request bodies, for the few types kubectl's generator commands
//! send that way (`kubectl create namespace`, `kubectl create configmap`): the `k8s\0` envelope
//! (`runtime.Unknown`) and a hand-written schema of the fields of those types. Other kinds stay unsupported
//! (415), which the caller reports.

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::meta;

/// How a field's value is encoded.
#[derive(Debug, Clone, Copy)]
enum Kind {
    String,
    Int,
    Bool,
    Time,
    Message(&'static [Field]),
    StringMap,
    BytesMap,
}

#[derive(Debug)]
struct Field {
    tag: u64,
    name: &'static str,
    kind: Kind,
    repeated: bool,
}

const fn field(tag: u64, name: &'static str, kind: Kind) -> Field {
    Field {
        tag,
        name,
        kind,
        repeated: false,
    }
}

const fn list(tag: u64, name: &'static str, kind: Kind) -> Field {
    Field {
        tag,
        name,
        kind,
        repeated: true,
    }
}

// Field numbers from the `generated.proto` files of k8s.io/api and k8s.io/apimachinery.
const OWNER_REFERENCE: &[Field] = &[
    field(1, "kind", Kind::String),
    field(3, "name", Kind::String),
    field(4, "uid", Kind::String),
    field(5, "apiVersion", Kind::String),
    field(6, "controller", Kind::Bool),
    field(7, "blockOwnerDeletion", Kind::Bool),
];

const OBJECT_META: &[Field] = &[
    field(1, "name", Kind::String),
    field(2, "generateName", Kind::String),
    field(3, "namespace", Kind::String),
    field(5, "uid", Kind::String),
    field(6, "resourceVersion", Kind::String),
    field(7, "generation", Kind::Int),
    field(8, "creationTimestamp", Kind::Time),
    field(9, "deletionTimestamp", Kind::Time),
    field(10, "deletionGracePeriodSeconds", Kind::Int),
    field(11, "labels", Kind::StringMap),
    field(12, "annotations", Kind::StringMap),
    list(13, "ownerReferences", Kind::Message(OWNER_REFERENCE)),
    list(14, "finalizers", Kind::String),
];

const CONFIG_MAP: &[Field] = &[
    field(1, "metadata", Kind::Message(OBJECT_META)),
    field(2, "data", Kind::StringMap),
    field(3, "binaryData", Kind::BytesMap),
    field(4, "immutable", Kind::Bool),
];

const NAMESPACE_SPEC: &[Field] = &[list(1, "finalizers", Kind::String)];

const NAMESPACE: &[Field] = &[
    field(1, "metadata", Kind::Message(OBJECT_META)),
    field(2, "spec", Kind::Message(NAMESPACE_SPEC)),
];

const TYPE_META: &[Field] = &[
    field(1, "apiVersion", Kind::String),
    field(2, "kind", Kind::String),
];

const TIME: &[Field] = &[field(1, "seconds", Kind::Int), field(2, "nanos", Kind::Int)];

/// The media type of Kubernetes protobuf bodies.
pub(crate) const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Why a protobuf body cannot be decoded.
#[derive(Debug, PartialEq)]
pub(crate) enum ProtobufError {
    /// A kind without a schema here.
    Unsupported(String),
    /// Not valid protobuf.
    Malformed(String),
}

/// Decodes a protobuf request body into the object's JSON form.
pub(crate) fn decode(body: &[u8]) -> Result<Value, ProtobufError> {
    decode_envelope(body)
        .map_err(ProtobufError::Malformed)?
        .map_err(ProtobufError::Unsupported)
}

fn decode_envelope(body: &[u8]) -> Result<Result<Value, String>, String> {
    let unknown = body
        .strip_prefix(b"k8s\0")
        .ok_or("the body lacks the k8s protobuf envelope")?;
    let mut type_meta = Value::Null;
    let mut raw: &[u8] = &[];
    let mut reader = Reader(unknown);
    while let Some((tag, wire)) = reader.key()? {
        match (tag, wire) {
            (1, 2) => type_meta = message(reader.bytes()?, TYPE_META)?,
            (2, 2) => raw = reader.bytes()?,
            _ => reader.skip(wire)?,
        }
    }
    let api_version = meta::str_at(&type_meta, &["apiVersion"]).unwrap_or_default();
    let kind = meta::str_at(&type_meta, &["kind"]).unwrap_or_default();
    let schema = match (api_version, kind) {
        ("v1", "ConfigMap") => CONFIG_MAP,
        ("v1", "Namespace") => NAMESPACE,
        _ => {
            return Ok(Err(format!(
                "protobuf bodies of {api_version} {kind} are not supported; send JSON"
            )));
        }
    };
    let mut object = message(raw, schema)?;
    if let Some(map) = object.as_object_mut() {
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
    }
    Ok(Ok(object))
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut value = 0_u64;
        for shift in (0..64).step_by(7) {
            let (&byte, rest) = self.0.split_first().ok_or("truncated varint")?;
            self.0 = rest;
            value |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("varint too long".to_owned())
    }

    fn key(&mut self) -> Result<Option<(u64, u64)>, String> {
        if self.0.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        Ok(Some((key >> 3, key & 7)))
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let length = usize::try_from(self.varint()?).map_err(|_| "length too large")?;
        if length > self.0.len() {
            return Err("truncated field".to_owned());
        }
        let (value, rest) = self.0.split_at(length);
        self.0 = rest;
        Ok(value)
    }

    fn skip(&mut self, wire: u64) -> Result<(), String> {
        let fixed = |reader: &mut Self, n: usize| {
            reader.0 = reader.0.get(n..).ok_or("truncated field")?;
            Ok::<(), String>(())
        };
        match wire {
            0 => self.varint().map(drop),
            1 => fixed(self, 8),
            2 => self.bytes().map(drop),
            5 => fixed(self, 4),
            other => Err(format!("unsupported wire type {other}")),
        }
    }
}

fn text(bytes: &[u8]) -> Result<String, String> {
    String::from_utf8(bytes.to_vec()).map_err(|_| "a string field is not UTF-8".to_owned())
}

/// Decodes one message; `Int` fields are two's complement varints, as protobuf `int64`/`int32` are.
fn message(bytes: &[u8], schema: &[Field]) -> Result<Value, String> {
    let mut out = Map::new();
    let mut reader = Reader(bytes);
    while let Some((tag, wire)) = reader.key()? {
        let Some(field) = schema.iter().find(|f| f.tag == tag) else {
            reader.skip(wire)?;
            continue;
        };
        #[expect(
            clippy::cast_possible_wrap,
            reason = "protobuf int64 is the two's complement of the varint"
        )]
        let value = match (field.kind, wire) {
            (Kind::Int, 0) => json!(reader.varint()? as i64),
            (Kind::Bool, 0) => json!(reader.varint()? != 0),
            (Kind::String, 2) => json!(text(reader.bytes()?)?),
            (Kind::Message(inner), 2) => message(reader.bytes()?, inner)?,
            (Kind::Time, 2) => {
                let time = message(reader.bytes()?, TIME)?;
                let seconds = time.get("seconds").and_then(Value::as_i64).unwrap_or(0);
                let at = jiff::Timestamp::from_second(seconds).map_err(|e| e.to_string())?;
                json!(meta::format_time(at))
            }
            (Kind::StringMap | Kind::BytesMap, 2) => {
                let entry = reader.bytes()?;
                let mut entry_reader = Reader(entry);
                let (mut key, mut value) = (String::new(), Value::Null);
                while let Some((entry_tag, entry_wire)) = entry_reader.key()? {
                    match (entry_tag, entry_wire, field.kind) {
                        (1, 2, _) => key = text(entry_reader.bytes()?)?,
                        (2, 2, Kind::StringMap) => value = json!(text(entry_reader.bytes()?)?),
                        (2, 2, _) => {
                            value = json!(
                                base64::engine::general_purpose::STANDARD
                                    .encode(entry_reader.bytes()?)
                            );
                        }
                        (_, other, _) => entry_reader.skip(other)?,
                    }
                }
                let map = out.entry(field.name).or_insert_with(|| json!({}));
                if let Some(map) = map.as_object_mut() {
                    map.insert(key, if value.is_null() { json!("") } else { value });
                }
                continue;
            }
            (_, other) => {
                reader.skip(other)?;
                continue;
            }
        };
        // Go writes empty strings and zero numbers of plain fields; its JSON omits them.
        if !field.repeated && (value == json!("") || value == json!(0)) {
            continue;
        }
        if field.repeated {
            if let Some(items) = out
                .entry(field.name)
                .or_insert_with(|| json!([]))
                .as_array_mut()
            {
                items.push(value);
            }
        } else {
            out.insert(field.name.to_owned(), value);
        }
    }
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_bytes(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
        out.push(tag << 3 | 2);
        out.push(u8::try_from(bytes.len()).expect("short test field"));
        out.extend_from_slice(bytes);
    }

    #[test]
    fn decodes_a_configmap_like_kubectl_create_sends_it() {
        let mut type_meta = Vec::new();
        field_bytes(&mut type_meta, 1, b"v1");
        field_bytes(&mut type_meta, 2, b"ConfigMap");
        let mut metadata = Vec::new();
        field_bytes(&mut metadata, 1, b"cfg");
        field_bytes(&mut metadata, 2, b"");
        let mut label = Vec::new();
        field_bytes(&mut label, 1, b"app");
        field_bytes(&mut label, 2, b"web");
        field_bytes(&mut metadata, 11, &label);
        let mut entry = Vec::new();
        field_bytes(&mut entry, 1, b"a");
        field_bytes(&mut entry, 2, b"b");
        let mut raw = Vec::new();
        field_bytes(&mut raw, 1, &metadata);
        field_bytes(&mut raw, 2, &entry);
        let mut body = b"k8s\0".to_vec();
        field_bytes(&mut body, 1, &type_meta);
        field_bytes(&mut body, 2, &raw);
        field_bytes(&mut body, 4, b"");
        let object = decode(&body).expect("decodes");
        assert_eq!(
            object,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "labels": {"app": "web"}}, "data": {"a": "b"}})
        );
    }

    #[test]
    fn refuses_other_kinds_and_broken_bodies() {
        let mut type_meta = Vec::new();
        field_bytes(&mut type_meta, 1, b"batch/v1");
        field_bytes(&mut type_meta, 2, b"Job");
        let mut body = b"k8s\0".to_vec();
        field_bytes(&mut body, 1, &type_meta);
        assert!(
            matches!(decode(&body), Err(ProtobufError::Unsupported(m)) if m.contains("batch/v1 Job"))
        );
        assert!(matches!(decode(b"{}"), Err(ProtobufError::Malformed(_))));
        assert!(matches!(
            decode(b"k8s\0\x0a\xff"),
            Err(ProtobufError::Malformed(_))
        ));
    }
}
