//! Decoding the Kubernetes protobuf encoding of request bodies, which kubectl's generator commands send
//! (`kubectl create namespace|configmap|job|deployment`, `create job --from=cronjob/...`, `run`), and, from
//! kubectl 1.32 on, `kubectl auth can-i` (an `authorization.k8s.io/v1` `SelfSubjectAccessReview`) and `kubectl
//! auth whoami` (an `authentication.k8s.io` `SelfSubjectReview`: v1, then v1beta1 and v1alpha1 on a 404): the
//! `k8s\0` envelope (`runtime.Unknown`) and the generated field tables of every decoded kind (`schema`).

use base64::Engine;
use serde_json::{Map, Value, json};

use crate::registry::meta;

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
    /// The `ExtraValue` of `UserInfo.extra` and `SubjectAccessReviewSpec.extra`: a message of one repeated string
    /// (field 1), a string array in JSON.
    StringList,
    Message(&'static [Field]),
    MapString,
    MapBytes,
    MapQuantity,
    /// `map<string, ExtraValue>`.
    MapStringList,
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
        (Kind::StringList, 2) => {
            const ITEMS: &[Field] = &[Field {
                tag: 1,
                name: "items",
                kind: Kind::String,
                repeated: true,
            }];
            message(reader.bytes()?, ITEMS)?
                .get("items")
                .cloned()
                .unwrap_or(json!([]))
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
            Kind::MapStringList => Some(Kind::StringList),
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
            let fallback = if matches!(value_kind, Kind::StringList) {
                json!([])
            } else {
                json!("")
            };
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

    fn unhex(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("test hex"))
            .collect()
    }

    // Request bodies captured from kubectl 1.33.1 (`Content-Type: application/vnd.kubernetes.protobuf`).
    const CAN_I_CREATE_JOBS_1_33: &str = "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a65637441636365737352657669657712430a100a0012001a0022002a0032003800420012250a230a06746f6f6c2d6112066372656174651a05626174636822002a046a6f627332003a001a08080012001a0020001a002200";
    const CAN_I_GET_PODS_LOG_1_33: &str = "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a656374416363657373526576696577123f0a100a0012001a0022002a0032003800420012210a1f0a0764656661756c7412036765741a0022002a04706f647332003a036c6f671a08080012001a0020001a002200";
    const CAN_I_GET_PODS_SUBRESOURCE_LOG_1_33: &str = "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a656374416363657373526576696577123e0a100a0012001a0022002a0032003800420012200a1e0a06746f6f6c2d6112036765741a0022002a04706f647332036c6f673a001a08080012001a0020001a002200";
    const CAN_I_GET_HEALTHZ_1_33: &str = "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a656374416363657373526576696577122f0a100a0012001a0022002a003200380042001211120f0a082f6865616c74687a12036765741a08080012001a0020001a002200";
    const WHOAMI_V1_1_33: &str = "6b3873000a2d0a1861757468656e7469636174696f6e2e6b38732e696f2f7631121153656c665375626a656374526576696577121a0a100a0012001a0022002a0032003800420012060a040a0012001a002200";
    const WHOAMI_V1BETA1_1_33: &str = "6b3873000a320a1d61757468656e7469636174696f6e2e6b38732e696f2f76316265746131121153656c665375626a656374526576696577121a0a100a0012001a0022002a0032003800420012060a040a0012001a002200";
    const WHOAMI_V1ALPHA1_1_33: &str = "6b3873000a330a1e61757468656e7469636174696f6e2e6b38732e696f2f7631616c70686131121153656c665375626a656374526576696577121a0a100a0012001a0022002a0032003800420012060a040a0012001a002200";

    #[test]
    fn decodes_the_access_reviews_of_kubectl_1_33_auth_can_i() {
        let review = |spec: Value| {
            json!({
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "metadata": {},
                "spec": spec,
                "status": {"allowed": false, "denied": false},
            })
        };
        let cases = [
            // `kubectl auth can-i create jobs -n tool-a`
            (
                CAN_I_CREATE_JOBS_1_33,
                json!({"resourceAttributes": {"namespace": "tool-a", "verb": "create", "group": "batch", "resource": "jobs"}}),
            ),
            // `kubectl auth can-i get pods/log`: kubectl reads `log` as the name, not the subresource.
            (
                CAN_I_GET_PODS_LOG_1_33,
                json!({"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "pods", "name": "log"}}),
            ),
            // `kubectl auth can-i get pods --subresource=log -n tool-a`
            (
                CAN_I_GET_PODS_SUBRESOURCE_LOG_1_33,
                json!({"resourceAttributes": {"namespace": "tool-a", "verb": "get", "resource": "pods", "subresource": "log"}}),
            ),
            // `kubectl auth can-i get /healthz`
            (
                CAN_I_GET_HEALTHZ_1_33,
                json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}}),
            ),
        ];
        for (body, spec) in cases {
            assert_eq!(decode(&unhex(body)), Ok(review(spec)));
        }
    }

    #[test]
    fn decodes_the_self_subject_reviews_of_kubectl_1_33_auth_whoami() {
        for (body, version) in [
            (WHOAMI_V1_1_33, "v1"),
            (WHOAMI_V1BETA1_1_33, "v1beta1"),
            (WHOAMI_V1ALPHA1_1_33, "v1alpha1"),
        ] {
            assert_eq!(
                decode(&unhex(body)),
                Ok(json!({
                    "apiVersion": format!("authentication.k8s.io/{version}"),
                    "kind": "SelfSubjectReview",
                    "metadata": {},
                    "status": {"userInfo": {}},
                }))
            );
        }
    }

    /// kubectl 1.27 (up to 1.31) sends the same reviews as JSON; the protobuf of 1.33 decodes to the same
    /// apiVersion, kind and spec.
    #[test]
    fn kubectl_1_27_sends_the_same_reviews_as_json() {
        let cases = [
            (
                CAN_I_CREATE_JOBS_1_33,
                r#"{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"resourceAttributes":{"namespace":"tool-a","verb":"create","group":"batch","resource":"jobs"}},"status":{"allowed":false}}"#,
            ),
            (
                CAN_I_GET_PODS_LOG_1_33,
                r#"{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"resourceAttributes":{"namespace":"default","verb":"get","resource":"pods","name":"log"}},"status":{"allowed":false}}"#,
            ),
            (
                CAN_I_GET_PODS_SUBRESOURCE_LOG_1_33,
                r#"{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"resourceAttributes":{"namespace":"tool-a","verb":"get","resource":"pods","subresource":"log"}},"status":{"allowed":false}}"#,
            ),
            (
                CAN_I_GET_HEALTHZ_1_33,
                r#"{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{"creationTimestamp":null},"spec":{"nonResourceAttributes":{"path":"/healthz","verb":"get"}},"status":{"allowed":false}}"#,
            ),
            (
                WHOAMI_V1BETA1_1_33,
                r#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1beta1","metadata":{"creationTimestamp":null},"status":{"userInfo":{}}}"#,
            ),
            (
                WHOAMI_V1ALPHA1_1_33,
                r#"{"kind":"SelfSubjectReview","apiVersion":"authentication.k8s.io/v1alpha1","metadata":{"creationTimestamp":null},"status":{"userInfo":{}}}"#,
            ),
        ];
        for (protobuf_1_33, json_1_27) in cases {
            assert!(matches!(
                decode(json_1_27.as_bytes()),
                Err(ProtobufError::Malformed(_))
            ));
            let sent: Value = serde_json::from_str(json_1_27).expect("kubectl's JSON");
            let decoded = decode(&unhex(protobuf_1_33)).expect("decodes");
            for key in ["apiVersion", "kind", "spec"] {
                assert_eq!(decoded.get(key), sent.get(key), "{key} of {json_1_27}");
            }
        }
    }

    #[test]
    fn decodes_selectors_of_access_reviews_and_extra_of_user_info() {
        let mut requirement = Vec::new();
        field_bytes(&mut requirement, 1, b"spec.nodeName");
        field_bytes(&mut requirement, 2, b"In");
        field_bytes(&mut requirement, 3, b"a");
        field_bytes(&mut requirement, 3, b"b");
        let mut field_selector = Vec::new();
        field_bytes(&mut field_selector, 2, &requirement);
        let mut label_selector = Vec::new();
        field_bytes(&mut label_selector, 1, b"app=web");
        let mut attributes = Vec::new();
        field_bytes(&mut attributes, 2, b"list");
        field_bytes(&mut attributes, 4, b"v1");
        field_bytes(&mut attributes, 5, b"pods");
        field_bytes(&mut attributes, 8, &field_selector);
        field_bytes(&mut attributes, 9, &label_selector);
        let mut spec = Vec::new();
        field_bytes(&mut spec, 1, &attributes);
        let mut raw = Vec::new();
        field_bytes(&mut raw, 2, &spec);
        let mut type_meta = Vec::new();
        field_bytes(&mut type_meta, 1, b"authorization.k8s.io/v1");
        field_bytes(&mut type_meta, 2, b"SelfSubjectAccessReview");
        let mut body = b"k8s\0".to_vec();
        field_bytes(&mut body, 1, &type_meta);
        field_bytes(&mut body, 2, &raw);
        assert_eq!(
            decode(&body).expect("decodes")["spec"],
            json!({"resourceAttributes": {
                "verb": "list", "version": "v1", "resource": "pods",
                "fieldSelector": {"requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["a", "b"]}]},
                "labelSelector": {"rawSelector": "app=web"},
            }})
        );

        let mut values = Vec::new();
        field_bytes(&mut values, 1, b"x");
        field_bytes(&mut values, 1, b"y");
        let mut entry = Vec::new();
        field_bytes(&mut entry, 1, b"scopes");
        field_bytes(&mut entry, 2, &values);
        let mut empty_entry = Vec::new();
        field_bytes(&mut empty_entry, 1, b"none");
        let mut user_info = Vec::new();
        field_bytes(&mut user_info, 1, b"tool-a");
        field_bytes(&mut user_info, 3, b"toolforge");
        field_bytes(&mut user_info, 4, &entry);
        field_bytes(&mut user_info, 4, &empty_entry);
        let mut status = Vec::new();
        field_bytes(&mut status, 1, &user_info);
        let mut raw = Vec::new();
        field_bytes(&mut raw, 2, &status);
        let mut type_meta = Vec::new();
        field_bytes(&mut type_meta, 1, b"authentication.k8s.io/v1");
        field_bytes(&mut type_meta, 2, b"SelfSubjectReview");
        let mut body = b"k8s\0".to_vec();
        field_bytes(&mut body, 1, &type_meta);
        field_bytes(&mut body, 2, &raw);
        assert_eq!(
            decode(&body).expect("decodes")["status"],
            json!({"userInfo": {"username": "tool-a", "groups": ["toolforge"], "extra": {"scopes": ["x", "y"], "none": []}}})
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
