//! Decoding the Kubernetes protobuf encoding of request bodies, which kubectl's generator commands send
//! (`kubectl create namespace|configmap|job|deployment`, `create job --from=cronjob/...`, `run`): the `k8s\0`
//! envelope (`runtime.Unknown`) and the generated field tables of every served kind (`schema`).

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::meta;

#[rustfmt::skip]
mod schema;

/// How a field's value is encoded, and how it reads in JSON.
#[derive(Debug, Clone, Copy)]
enum Kind {
    String,
    Bool,
    Int,
    /// `[]byte`, base64 in JSON.
    Bytes,
    /// `metav1.Time`: seconds and nanos, an RFC 3339 string in JSON (null for the zero time).
    Time,
    /// `metav1.MicroTime`: like `Time` with microseconds.
    MicroTime,
    /// `resource.Quantity`: a message holding the string form.
    Quantity,
    /// `intstr.IntOrString`: a number or a string in JSON.
    IntOrString,
    /// `runtime.RawExtension`, `metav1.FieldsV1`: raw JSON bytes.
    RawJson,
    Message(&'static [Field]),
    MapString,
    MapBytes,
    MapQuantity,
}

#[derive(Debug)]
struct Field {
    tag: u64,
    name: &'static str,
    kind: Kind,
    repeated: bool,
}

const TYPE_META: &[Field] = &[
    Field {
        tag: 1,
        name: "apiVersion",
        kind: Kind::String,
        repeated: false,
    },
    Field {
        tag: 2,
        name: "kind",
        kind: Kind::String,
        repeated: false,
    },
];

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
    let Some(schema) = schema::root(api_version, kind) else {
        return Ok(Err(format!(
            "protobuf bodies of {api_version} {kind} are not supported; send JSON"
        )));
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

fn timestamp(bytes: &[u8], micro: bool) -> Result<Value, String> {
    const TIME: &[Field] = &[
        Field {
            tag: 1,
            name: "seconds",
            kind: Kind::Int,
            repeated: false,
        },
        Field {
            tag: 2,
            name: "nanos",
            kind: Kind::Int,
            repeated: false,
        },
    ];
    let time = message(bytes, TIME)?;
    let seconds = time.get("seconds").and_then(Value::as_i64).unwrap_or(0);
    let nanos = time.get("nanos").and_then(Value::as_i64).unwrap_or(0);
    if seconds == 0 && nanos == 0 {
        return Ok(Value::Null);
    }
    let at = jiff::Timestamp::new(seconds, i32::try_from(nanos).unwrap_or(0))
        .map_err(|e| e.to_string())?;
    Ok(if micro {
        json!(at.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string())
    } else {
        json!(meta::format_time(at))
    })
}

/// The value of one field occurrence (map entries are handled by the caller).
fn value(reader: &mut Reader<'_>, kind: Kind, wire: u64) -> Result<Option<Value>, String> {
    #[expect(
        clippy::cast_possible_wrap,
        reason = "protobuf int64/int32 are the two's complement of the varint"
    )]
    let value = match (kind, wire) {
        (Kind::Int, 0) => json!(reader.varint()? as i64),
        (Kind::Bool, 0) => json!(reader.varint()? != 0),
        (Kind::String, 2) => json!(text(reader.bytes()?)?),
        (Kind::Bytes, 2) => {
            json!(base64::engine::general_purpose::STANDARD.encode(reader.bytes()?))
        }
        (Kind::Time, 2) => timestamp(reader.bytes()?, false)?,
        (Kind::MicroTime, 2) => timestamp(reader.bytes()?, true)?,
        (Kind::Quantity, 2) => {
            const QUANTITY: &[Field] = &[Field {
                tag: 1,
                name: "string",
                kind: Kind::String,
                repeated: false,
            }];
            message(reader.bytes()?, QUANTITY)?
                .get("string")
                .cloned()
                .unwrap_or(json!("0"))
        }
        (Kind::IntOrString, 2) => {
            const INT_OR_STRING: &[Field] = &[
                Field {
                    tag: 1,
                    name: "type",
                    kind: Kind::Int,
                    repeated: false,
                },
                Field {
                    tag: 2,
                    name: "intVal",
                    kind: Kind::Int,
                    repeated: false,
                },
                Field {
                    tag: 3,
                    name: "strVal",
                    kind: Kind::String,
                    repeated: false,
                },
            ];
            let parts = message(reader.bytes()?, INT_OR_STRING)?;
            if parts.get("type").and_then(Value::as_i64) == Some(1) {
                parts.get("strVal").cloned().unwrap_or(json!(""))
            } else {
                parts.get("intVal").cloned().unwrap_or(json!(0))
            }
        }
        (Kind::RawJson, 2) => {
            const RAW: &[Field] = &[Field {
                tag: 1,
                name: "raw",
                kind: Kind::Bytes,
                repeated: false,
            }];
            let mut raw_reader = Reader(reader.bytes()?);
            let mut raw: &[u8] = &[];
            while let Some((tag, wire)) = raw_reader.key()? {
                if tag == RAW[0].tag && wire == 2 {
                    raw = raw_reader.bytes()?;
                } else {
                    raw_reader.skip(wire)?;
                }
            }
            serde_json::from_slice(raw).unwrap_or(Value::Null)
        }
        (Kind::Message(inner), 2) => message(reader.bytes()?, inner)?,
        (_, other) => {
            reader.skip(other)?;
            return Ok(None);
        }
    };
    Ok(Some(value))
}

/// Decodes one message into its JSON object.
fn message(bytes: &[u8], schema: &[Field]) -> Result<Value, String> {
    let mut out = Map::new();
    let mut reader = Reader(bytes);
    while let Some((tag, wire)) = reader.key()? {
        let Some(field) = schema.iter().find(|f| f.tag == tag) else {
            reader.skip(wire)?;
            continue;
        };
        let map_value = match field.kind {
            Kind::MapString => Some(Kind::String),
            Kind::MapBytes => Some(Kind::Bytes),
            Kind::MapQuantity => Some(Kind::Quantity),
            _ => None,
        };
        if let (Some(value_kind), 2) = (map_value, wire) {
            let mut entry = Reader(reader.bytes()?);
            let (mut key, mut entry_value) = (String::new(), None);
            while let Some((entry_tag, entry_wire)) = entry.key()? {
                match entry_tag {
                    1 if entry_wire == 2 => key = text(entry.bytes()?)?,
                    2 => entry_value = value(&mut entry, value_kind, entry_wire)?,
                    _ => entry.skip(entry_wire)?,
                }
            }
            let fallback = json!("");
            if let Some(map) = out
                .entry(field.name)
                .or_insert_with(|| json!({}))
                .as_object_mut()
            {
                map.insert(key, entry_value.unwrap_or(fallback));
            }
            continue;
        }
        let Some(value) = value(&mut reader, field.kind, wire)? else {
            continue;
        };
        // Go writes empty strings, zero times and a zero generation of plain fields; its JSON omits them. Other
        // zeros and falses stay: for pointer fields (`replicas: 0`, `enableServiceLinks: false`) they matter.
        let omitted = value == json!("")
            || value.is_null()
            || (field.name == "generation" && value == json!(0));
        if !field.repeated && omitted {
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
        field_bytes(&mut type_meta, 1, b"example.com/v1");
        field_bytes(&mut type_meta, 2, b"Widget");
        let mut body = b"k8s\0".to_vec();
        field_bytes(&mut body, 1, &type_meta);
        assert!(
            matches!(decode(&body), Err(ProtobufError::Unsupported(m)) if m.contains("example.com/v1 Widget"))
        );
        assert!(matches!(decode(b"{}"), Err(ProtobufError::Malformed(_))));
        assert!(matches!(
            decode(b"k8s\0\x0a\xff"),
            Err(ProtobufError::Malformed(_))
        ));
    }
}
