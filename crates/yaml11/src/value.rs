//! The loaded document: [`Node`]s carrying a [`Value`], a [`Span`] and presentation details.
//!
//! Values are what PyYAML's `safe_load` would build, in Rust shapes: Python's `int` is
//! [`Integer`], `datetime.date`/`datetime` is [`Timestamp`], `bytes` is [`Value::Binary`].
//! Collections PyYAML builds from the other standard tags are sequences; [`Node::tag`] tells
//! them apart:
//! - `!!set` is a sequence of the distinct keys, in first-seen order (Python's set order is
//!   by hash and cannot be reproduced);
//! - `!!omap` and `!!pairs` are sequences of two-element sequences, one per `(key, value)`
//!   tuple Python builds.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::float;
use crate::integer::Integer;
use crate::span::Span;
use crate::timestamp::Timestamp;

/// A node of the document: its value, where it is, and how it was written.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The constructed value.
    pub value: Value,
    /// Where the node's text is; for a node brought in by an alias, the anchored definition.
    pub span: Span,
    /// The `*alias` that brought this node in, if any. Nodes inside an aliased collection carry
    /// the same alias, and when aliases nest, the outermost one (the one in the text that
    /// refers to it) wins, so callers can always point at text the user wrote at this place.
    pub alias: Option<Span>,
    /// How the node was written, so callers can say "quote this value".
    pub style: Style,
    /// The tag the value was constructed from, given explicitly or resolved implicitly.
    pub tag: Tag,
}

/// How a node was written in the source.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    /// An unquoted scalar, the only kind whose type YAML 1.1 guesses from its text.
    Plain,
    /// `'text'`.
    SingleQuoted,
    /// `"text"`.
    DoubleQuoted,
    /// `|` block scalar.
    Literal,
    /// `>` block scalar.
    Folded,
    /// `- item` lines.
    BlockSequence,
    /// `[item, item]`.
    FlowSequence,
    /// `key: value` lines.
    BlockMapping,
    /// `{key: value}`.
    FlowMapping,
}

/// The standard YAML 1.1 tags PyYAML's resolver and `SafeConstructor` know.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tag {
    /// `tag:yaml.org,2002:null`.
    Null,
    /// `tag:yaml.org,2002:bool`.
    Bool,
    /// `tag:yaml.org,2002:int`.
    Int,
    /// `tag:yaml.org,2002:float`.
    Float,
    /// `tag:yaml.org,2002:str`.
    Str,
    /// `tag:yaml.org,2002:binary`.
    Binary,
    /// `tag:yaml.org,2002:timestamp`.
    Timestamp,
    /// `tag:yaml.org,2002:seq`.
    Seq,
    /// `tag:yaml.org,2002:map`.
    Map,
    /// `tag:yaml.org,2002:set`.
    Set,
    /// `tag:yaml.org,2002:omap`.
    Omap,
    /// `tag:yaml.org,2002:pairs`.
    Pairs,
    /// `tag:yaml.org,2002:merge`, the `<<` key; never on a constructed node.
    Merge,
    /// `tag:yaml.org,2002:value`, the `=` key; never on a constructed node.
    Value,
}

const CORE_PREFIX: &str = "tag:yaml.org,2002:";

impl Tag {
    /// The standard tag named by a full tag URI, if it is one `safe_load` constructs or resolves.
    #[must_use]
    pub fn from_uri(uri: &str) -> Option<Self> {
        Some(match uri.strip_prefix(CORE_PREFIX)? {
            "null" => Self::Null,
            "bool" => Self::Bool,
            "int" => Self::Int,
            "float" => Self::Float,
            "str" => Self::Str,
            "binary" => Self::Binary,
            "timestamp" => Self::Timestamp,
            "seq" => Self::Seq,
            "map" => Self::Map,
            "set" => Self::Set,
            "omap" => Self::Omap,
            "pairs" => Self::Pairs,
            "merge" => Self::Merge,
            "value" => Self::Value,
            _ => return None,
        })
    }

    /// The full tag URI, such as `tag:yaml.org,2002:int`.
    #[must_use]
    pub fn uri(self) -> String {
        let name = match self {
            Self::Null => "null",
            Self::Bool => "bool",
            Self::Int => "int",
            Self::Float => "float",
            Self::Str => "str",
            Self::Binary => "binary",
            Self::Timestamp => "timestamp",
            Self::Seq => "seq",
            Self::Map => "map",
            Self::Set => "set",
            Self::Omap => "omap",
            Self::Pairs => "pairs",
            Self::Merge => "merge",
            Self::Value => "value",
        };
        format!("{CORE_PREFIX}{name}")
    }
}

/// A constructed value, as `safe_load` builds it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Python's `None`.
    Null,
    /// Python's `bool`.
    Bool(bool),
    /// Python's `int`.
    Int(Integer),
    /// Python's `float`.
    Float(f64),
    /// Python's `str`.
    Str(String),
    /// Python's `datetime.date` or `datetime.datetime`.
    Timestamp(Timestamp),
    /// Python's `bytes`, from `!!binary`.
    Binary(Vec<u8>),
    /// Python's `list`; also `!!set`, `!!omap` and `!!pairs` (see the module documentation).
    Seq(Vec<Node>),
    /// Python's `dict`, with every entry kept (see [`Mapping`]).
    Map(Mapping),
}

impl Value {
    /// Python's `str()` of the value, for scalars: `True`, `None`, `1.0`, `8` for `010`,
    /// `2024-01-01`, `b'...'` for binary. `None` for sequences and mappings.
    #[must_use]
    pub fn python_str(&self) -> Option<String> {
        Some(match self {
            Self::Null => "None".to_owned(),
            Self::Bool(true) => "True".to_owned(),
            Self::Bool(false) => "False".to_owned(),
            Self::Int(integer) => integer.to_string(),
            Self::Float(value) => float::python_repr(*value),
            Self::Str(text) => text.clone(),
            Self::Timestamp(timestamp) => timestamp.to_string(),
            Self::Binary(bytes) => python_bytes_repr(bytes),
            Self::Seq(_) | Self::Map(_) => return None,
        })
    }

    /// A name for messages: "null", "boolean", "integer", "float", "string", "timestamp",
    /// "binary", "sequence" or "mapping".
    #[must_use]
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Null => "null",
            Self::Bool(_) => "boolean",
            Self::Int(_) => "integer",
            Self::Float(_) => "float",
            Self::Str(_) => "string",
            Self::Timestamp(_) => "timestamp",
            Self::Binary(_) => "binary",
            Self::Seq(_) => "sequence",
            Self::Map(_) => "mapping",
        }
    }

    /// The text of a string value.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Self::Str(text) => Some(text),
            _ => None,
        }
    }

    /// The items of a sequence.
    #[must_use]
    pub fn as_seq(&self) -> Option<&[Node]> {
        match self {
            Self::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The mapping, if the value is one.
    #[must_use]
    pub fn as_map(&self) -> Option<&Mapping> {
        match self {
            Self::Map(mapping) => Some(mapping),
            _ => None,
        }
    }

    /// An identity for Python's `==` on hashable values (`1 == 1.0 == True`), used to find
    /// which keys of a mapping a Python `dict` would merge. `None` for unhashable values and
    /// NaN, which equals nothing.
    pub(crate) fn python_key(&self) -> Option<PythonKey> {
        Some(match self {
            Self::Null => PythonKey::None,
            Self::Bool(value) => PythonKey::Number(i32::from(*value).to_string()),
            Self::Int(integer) => PythonKey::Number(integer.to_string()),
            Self::Float(value) if value.is_nan() => return None,
            // Integral floats equal the int of the same value: 1.0 == 1, and -0.0 == 0.
            Self::Float(value) if *value == 0.0 => PythonKey::Number("0".to_owned()),
            Self::Float(value) if value.is_finite() && value.fract() == 0.0 => {
                PythonKey::Number(format!("{value:.0}"))
            }
            Self::Float(value) => PythonKey::Number(float::python_repr(*value)),
            Self::Str(text) => PythonKey::Str(text.clone()),
            Self::Binary(bytes) => PythonKey::Bytes(bytes.clone()),
            Self::Timestamp(timestamp) => match timestamp.time {
                None => PythonKey::Date(timestamp.to_string()),
                Some(time) if time.offset_minutes.is_none() => {
                    PythonKey::NaiveDateTime(timestamp.to_string())
                }
                Some(_) => PythonKey::AwareDateTime(timestamp.instant_micros()),
            },
            Self::Seq(_) | Self::Map(_) => return None,
        })
    }
}

/// See [`Value::python_key`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum PythonKey {
    None,
    Number(String),
    Str(String),
    Bytes(Vec<u8>),
    Date(String),
    NaiveDateTime(String),
    AwareDateTime(i128),
}

/// A mapping with all its entries, in source order.
///
/// Merge keys (`<<`) are already resolved exactly as PyYAML's `flatten_mapping` does: merged
/// entries come first (from the last mapping of a merge list to the first), then the explicit
/// ones. Entries with equal keys are all kept, so callers can warn about duplicates; as in a
/// Python `dict`, the last one is the value ([`Mapping::get`], [`Mapping::dict_entries`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mapping {
    entries: Vec<(Node, Node)>,
}

impl Mapping {
    pub(crate) fn from_entries(entries: Vec<(Node, Node)>) -> Self {
        Self { entries }
    }

    /// Every entry, in source order after merging, duplicates included.
    #[must_use]
    pub fn entries(&self) -> &[(Node, Node)] {
        &self.entries
    }

    /// The value of the last entry whose key is the string `key`, as a Python `dict` lookup.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node> {
        self.get_entry(key).map(|(_, value)| value)
    }

    /// The last entry whose key is the string `key`.
    #[must_use]
    pub fn get_entry(&self, key: &str) -> Option<&(Node, Node)> {
        self.entries
            .iter()
            .rev()
            .find(|(entry_key, _)| entry_key.value.as_str() == Some(key))
    }

    /// Number of entries, duplicates included.
    #[must_use]
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the mapping has no entries.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries a Python `dict` would hold: each distinct key (by Python's `==`, so `1`,
    /// `1.0` and `true` are one key) once, at its first position, with its last value.
    #[must_use]
    pub fn dict_entries(&self) -> Vec<(&Node, &Node)> {
        let mut positions: HashMap<PythonKey, usize> = HashMap::new();
        let mut result: Vec<(&Node, &Node)> = Vec::with_capacity(self.entries.len());
        for (key, value) in &self.entries {
            let existing = key.value.python_key().and_then(|python_key| {
                let next = result.len();
                let position = *positions.entry(python_key).or_insert(next);
                (position != next).then_some(position)
            });
            match existing {
                Some(position) => result[position].1 = value,
                None => result.push((key, value)),
            }
        }
        result
    }

    /// Iterates over the entries, duplicates included.
    pub fn iter(&self) -> std::slice::Iter<'_, (Node, Node)> {
        self.entries.iter()
    }
}

impl<'mapping> IntoIterator for &'mapping Mapping {
    type Item = &'mapping (Node, Node);
    type IntoIter = std::slice::Iter<'mapping, (Node, Node)>;

    fn into_iter(self) -> Self::IntoIter {
        self.entries.iter()
    }
}

/// Python's `repr()` of `bytes`: `b'...'`, or `b"..."` when only that avoids escaping a quote.
fn python_bytes_repr(bytes: &[u8]) -> String {
    let quote = if bytes.contains(&b'\'') && !bytes.contains(&b'"') {
        b'"'
    } else {
        b'\''
    };
    let mut out = String::with_capacity(bytes.len() + 3);
    out.push('b');
    out.push(char::from(quote));
    for &byte in bytes {
        match byte {
            b'\\' => out.push_str("\\\\"),
            b'\t' => out.push_str("\\t"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            byte if byte == quote => {
                out.push('\\');
                out.push(char::from(byte));
            }
            0x20..=0x7e => out.push(char::from(byte)),
            byte => {
                let _ = write!(out, "\\x{byte:02x}");
            }
        }
    }
    out.push(char::from(quote));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(value: Value) -> Node {
        Node {
            value,
            span: Span::default(),
            alias: None,
            style: Style::Plain,
            tag: Tag::Str,
        }
    }

    #[test]
    fn python_str_of_scalars() {
        assert_eq!(Value::Null.python_str().as_deref(), Some("None"));
        assert_eq!(Value::Bool(true).python_str().as_deref(), Some("True"));
        assert_eq!(Value::Float(1e16).python_str().as_deref(), Some("1e+16"));
        assert_eq!(
            Value::Int(Integer::from(8_i64)).python_str().as_deref(),
            Some("8")
        );
        assert_eq!(Value::Seq(Vec::new()).python_str(), None);
    }

    #[test]
    fn bytes_repr_matches_python() {
        assert_eq!(python_bytes_repr(b"hello"), "b'hello'");
        assert_eq!(python_bytes_repr(b"it's"), "b\"it's\"");
        assert_eq!(python_bytes_repr(b"'\""), "b'\\'\"'");
        assert_eq!(
            python_bytes_repr(&[0, 0x7f, 0xff, b'\n', b'\\']),
            "b'\\x00\\x7f\\xff\\n\\\\'"
        );
    }

    #[test]
    fn get_returns_the_last_duplicate_and_dict_entries_merge_equal_keys() {
        let entries = vec![
            (
                scalar(Value::Str("a".into())),
                scalar(Value::Int(Integer::from(1_i64))),
            ),
            (
                scalar(Value::Int(Integer::from(1_i64))),
                scalar(Value::Str("int".into())),
            ),
            (scalar(Value::Bool(true)), scalar(Value::Str("bool".into()))),
            (
                scalar(Value::Float(1.0)),
                scalar(Value::Str("float".into())),
            ),
            (
                scalar(Value::Str("a".into())),
                scalar(Value::Int(Integer::from(2_i64))),
            ),
        ];
        let mapping = Mapping::from_entries(entries);
        assert_eq!(
            mapping.get("a").map(|node| &node.value),
            Some(&Value::Int(Integer::from(2_i64)))
        );
        assert_eq!(mapping.get("b"), None);
        let dict: Vec<_> = mapping
            .dict_entries()
            .into_iter()
            .map(|(key, value)| (key.value.python_str(), value.value.python_str()))
            .collect();
        assert_eq!(
            dict,
            vec![
                (Some("a".to_owned()), Some("2".to_owned())),
                (Some("1".to_owned()), Some("float".to_owned())),
            ]
        );
    }

    #[test]
    fn tag_uris_round_trip() {
        for tag in [
            Tag::Null,
            Tag::Int,
            Tag::Set,
            Tag::Merge,
            Tag::Value,
            Tag::Timestamp,
        ] {
            assert_eq!(Tag::from_uri(&tag.uri()), Some(tag));
        }
        assert_eq!(Tag::from_uri("tag:yaml.org,2002:python/tuple"), None);
    }
}
