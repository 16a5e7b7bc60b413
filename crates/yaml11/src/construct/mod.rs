//! Builds values from the composed graph, as PyYAML's `SafeConstructor` does.
//!
//! Each standard tag has the constructor PyYAML registers for it, with the same leniencies
//! (`!!null` accepts any text, `!!bool` any case, `!!int` a second sign) and the same
//! refusals. Merge keys are flattened per mapping exactly as `flatten_mapping` does. An alias
//! is constructed again at each use, which costs at most [`crate::Limits::max_nodes`] nodes
//! because `compose` counted every expansion.

use crate::error::{Error, ErrorKind, Result};
use crate::float::parse_python_float;
mod order;

use crate::graph::{Child, Content, Document, RawNode, RawTag};
use crate::integer::{self, Integer, parse_python_int, python_repr};
use crate::span::Span;
use crate::timestamp;
use crate::value::{Mapping, Node, Tag, Value};

/// Constructs the root node of `document`.
pub(crate) fn construct(document: &Document<'_>) -> Result<Node> {
    let constructor = Constructor {
        nodes: &document.nodes,
    };
    let root = Child {
        node: document.root,
        alias: None,
    };
    constructor.object(root, None).map_err(|error| {
        constructor
            .first_error_in_pyyaml_order(document.root)
            .unwrap_or(error)
    })
}

/// A mapping entry after merging; `alias` is the outermost alias the entry came through.
#[derive(Clone, Copy)]
struct Entry {
    key: Child,
    value: Child,
    alias: Option<Span>,
}

struct Constructor<'document> {
    nodes: &'document [RawNode<'document>],
}

impl Constructor<'_> {
    fn object(&self, child: Child, inherited_alias: Option<Span>) -> Result<Node> {
        let raw = &self.nodes[child.node];
        let alias = inherited_alias.or(child.alias);
        let RawTag::Standard(tag) = raw.tag else {
            return Err(no_constructor(raw));
        };
        let value = match tag {
            Tag::Null => {
                self.scalar_text(child.node)?;
                Value::Null
            }
            Tag::Bool => self.boolean(child.node)?,
            Tag::Int => Value::Int(self.integer(child.node)?),
            Tag::Float => Value::Float(self.float(child.node)?),
            Tag::Str => Value::Str(self.scalar_text(child.node)?.to_owned()),
            Tag::Binary => Value::Binary(self.binary(child.node)?),
            Tag::Timestamp => {
                let text = self.scalar_text(child.node)?;
                Value::Timestamp(
                    timestamp::parse(text)
                        .map_err(|message| invalid(raw, "timestamp", text, &message))?,
                )
            }
            Tag::Seq => Value::Seq(self.sequence(child.node, alias)?),
            Tag::Map => Value::Map(Mapping::from_entries(self.mapping(child.node, alias)?)),
            Tag::Set => Value::Seq(self.set(child.node, alias)?),
            Tag::Omap | Tag::Pairs => Value::Seq(self.pairs(child.node, alias)?),
            Tag::Merge | Tag::Value => return Err(no_constructor(raw)),
        };
        Ok(Node {
            value,
            span: raw.span,
            alias,
            style: raw.style,
            tag,
        })
    }

    /// PyYAML's `construct_scalar`, including its `=` key lookup in mappings.
    fn scalar_text(&self, index: usize) -> Result<&str> {
        let raw = &self.nodes[index];
        match &raw.content {
            Content::Scalar(text) => Ok(text),
            Content::Mapping(pairs) => {
                if let Some((_, value)) = pairs
                    .iter()
                    .find(|(key, _)| self.nodes[key.node].tag == RawTag::Standard(Tag::Value))
                {
                    return self.scalar_text(value.node);
                }
                Err(expected(raw, "a scalar node"))
            }
            Content::Sequence(_) => Err(expected(raw, "a scalar node")),
        }
    }

    fn boolean(&self, index: usize) -> Result<Value> {
        let text = self.scalar_text(index)?;
        match text.to_lowercase().as_str() {
            "yes" | "true" | "on" => Ok(Value::Bool(true)),
            "no" | "false" | "off" => Ok(Value::Bool(false)),
            _ => Err(invalid(
                &self.nodes[index],
                "boolean",
                text,
                "expected yes, no, true, false, on or off",
            )),
        }
    }

    /// PyYAML's `construct_yaml_int`.
    fn integer(&self, index: usize) -> Result<Integer> {
        let text = self.scalar_text(index)?;
        let fail = |message: String| invalid(&self.nodes[index], "integer", text, &message);
        let cleaned = text.replace('_', "");
        let negative = cleaned.starts_with('-');
        let unsigned = cleaned.strip_prefix(['-', '+']).unwrap_or(&cleaned);
        if cleaned.is_empty() {
            return Err(fail("the value is empty".to_owned()));
        }
        let negate = |value: Integer| Ok(if negative { value.negated() } else { value });
        let parsed = if unsigned == "0" {
            Ok(Integer::from(0_i64))
        } else if let Some(digits) = unsigned.strip_prefix("0b") {
            parse_python_int(digits, 2).and_then(negate)
        } else if let Some(digits) = unsigned.strip_prefix("0x") {
            parse_python_int(digits, 16).and_then(negate)
        } else if unsigned.starts_with('0') {
            parse_python_int(unsigned, 8).and_then(negate)
        } else if unsigned.contains(':') {
            unsigned
                .split(':')
                .map(|part| parse_python_int(part, 10))
                .collect::<std::result::Result<Vec<_>, _>>()
                .and_then(|parts| integer::sexagesimal(negative, &parts))
        } else {
            parse_python_int(unsigned, 10).and_then(negate)
        };
        parsed.map_err(|error| fail(error.0))
    }

    /// PyYAML's `construct_yaml_float`.
    fn float(&self, index: usize) -> Result<f64> {
        let text = self.scalar_text(index)?;
        let fail = |message: &str| invalid(&self.nodes[index], "float", text, message);
        let cleaned = text.replace('_', "").to_lowercase();
        if cleaned.is_empty() {
            return Err(fail("the value is empty"));
        }
        let sign = if cleaned.starts_with('-') { -1.0 } else { 1.0 };
        let unsigned = cleaned.strip_prefix(['-', '+']).unwrap_or(&cleaned);
        let python_float = |part: &str| {
            parse_python_float(part).ok_or_else(|| {
                fail(&format!(
                    "could not convert string to float: {}",
                    python_repr(part)
                ))
            })
        };
        if unsigned == ".inf" {
            Ok(sign * f64::INFINITY)
        } else if unsigned == ".nan" {
            Ok(f64::NAN)
        } else if unsigned.contains(':') {
            let mut value = 0.0;
            for part in unsigned.split(':') {
                value = value * 60.0 + python_float(part)?;
            }
            Ok(sign * value)
        } else {
            Ok(sign * python_float(unsigned)?)
        }
    }

    fn binary(&self, index: usize) -> Result<Vec<u8>> {
        let raw = &self.nodes[index];
        let text = self.scalar_text(index)?;
        if let Some(character) = text.chars().find(|character| !character.is_ascii()) {
            return Err(Error::new(
                ErrorKind::InvalidTaggedValue,
                format!(
                    "failed to convert base64 data into ascii: found {}",
                    python_repr(&character.to_string())
                ),
                raw.error_span(),
            ));
        }
        crate::base64::decode_lenient(text.as_bytes()).map_err(|message| {
            Error::new(
                ErrorKind::InvalidTaggedValue,
                format!("failed to decode base64 data: {message}"),
                raw.error_span(),
            )
        })
    }

    fn sequence(&self, index: usize, alias: Option<Span>) -> Result<Vec<Node>> {
        let raw = &self.nodes[index];
        let Content::Sequence(items) = &raw.content else {
            return Err(expected(raw, "a sequence node"));
        };
        // Collecting through `Result` loses the exact size, and regrowing a vector of nodes
        // copies it; large flow sequences made that a third of the loading time.
        let mut nodes = Vec::with_capacity(items.len());
        for item in items {
            nodes.push(self.object(*item, alias)?);
        }
        Ok(nodes)
    }

    /// PyYAML's `construct_mapping`: flatten merges, then build keys and values; keys must be
    /// hashable in Python.
    fn mapping(&self, index: usize, alias: Option<Span>) -> Result<Vec<(Node, Node)>> {
        let raw = &self.nodes[index];
        if !matches!(raw.content, Content::Mapping(_)) {
            return Err(expected(raw, "a mapping node"));
        }
        let flattened = self.flatten(index)?;
        let mut entries = Vec::with_capacity(flattened.len());
        for entry in flattened {
            let entry_alias = alias.or(entry.alias);
            let key_raw = &self.nodes[entry.key.node];
            let key = if key_raw.tag == RawTag::Standard(Tag::Value) {
                // flatten_mapping retags `=` keys as strings.
                let text = self.scalar_text(entry.key.node)?.to_owned();
                Node {
                    value: Value::Str(text),
                    span: key_raw.span,
                    alias: entry_alias.or(entry.key.alias),
                    style: key_raw.style,
                    tag: Tag::Str,
                }
            } else {
                self.object(entry.key, entry_alias)?
            };
            if matches!(key.value, Value::Seq(_) | Value::Map(_)) {
                return Err(unhashable(key_raw, raw));
            }
            let value = self.object(entry.value, entry_alias)?;
            entries.push((key, value));
        }
        Ok(entries)
    }

    /// PyYAML's `flatten_mapping`: entries of merged mappings first, then the explicit ones.
    fn flatten(&self, index: usize) -> Result<Vec<Entry>> {
        let raw = &self.nodes[index];
        let Content::Mapping(pairs) = &raw.content else {
            return Ok(Vec::new());
        };
        let merge_error = |found: &RawNode, message: String| {
            Error::new(ErrorKind::InvalidMerge, message, found.error_span())
                .with_context("while constructing a mapping", Span::point(raw.start))
        };
        let mut merged = Vec::new();
        let mut explicit = Vec::with_capacity(pairs.len());
        for (key, value) in pairs {
            if self.nodes[key.node].tag != RawTag::Standard(Tag::Merge) {
                explicit.push(Entry {
                    key: *key,
                    value: *value,
                    alias: None,
                });
                continue;
            }
            let value_raw = &self.nodes[value.node];
            match &value_raw.content {
                Content::Mapping(_) => merged.extend(self.flatten_merged(*value)?),
                Content::Sequence(items) => {
                    let mut lists = Vec::with_capacity(items.len());
                    for item in items {
                        let item_raw = &self.nodes[item.node];
                        if !matches!(item_raw.content, Content::Mapping(_)) {
                            return Err(merge_error(
                                item_raw,
                                format!(
                                    "expected a mapping for merging, but found {}",
                                    item_raw.kind_name()
                                ),
                            ));
                        }
                        let item = Child {
                            node: item.node,
                            alias: value.alias.or(item.alias),
                        };
                        lists.push(self.flatten_merged(item)?);
                    }
                    // Later mappings go first, so that earlier ones override them in the dict.
                    merged.extend(lists.into_iter().rev().flatten());
                }
                Content::Scalar(_) => {
                    return Err(merge_error(
                        value_raw,
                        "expected a mapping or list of mappings for merging, but found scalar"
                            .to_owned(),
                    ));
                }
            }
        }
        merged.extend(explicit);
        Ok(merged)
    }

    /// The flattened entries of a merged mapping, marked with the alias they came through.
    fn flatten_merged(&self, mapping: Child) -> Result<Vec<Entry>> {
        let mut entries = self.flatten(mapping.node)?;
        if let Some(alias) = mapping.alias {
            for entry in &mut entries {
                entry.alias = Some(alias);
            }
        }
        Ok(entries)
    }

    /// `!!set`: the distinct keys of a mapping, in first-seen order.
    fn set(&self, index: usize, alias: Option<Span>) -> Result<Vec<Node>> {
        let entries = self.mapping(index, alias)?;
        let mut seen = std::collections::HashSet::new();
        Ok(entries
            .into_iter()
            .filter_map(|(key, _)| match key.value.python_key() {
                Some(python_key) => seen.insert(python_key).then_some(key),
                None => Some(key),
            })
            .collect())
    }

    /// The items of an `!!omap` or `!!pairs` node, which must be a sequence.
    fn pair_items(&self, index: usize) -> Result<&[Child]> {
        let raw = &self.nodes[index];
        match &raw.content {
            Content::Sequence(items) => Ok(items),
            _ => Err(self.pair_error(
                index,
                raw,
                format!("expected a sequence, but found {}", raw.kind_name()),
            )),
        }
    }

    /// The key and value of one `!!omap` or `!!pairs` item, which must be a one-entry mapping.
    fn pair_of(&self, index: usize, item: &Child) -> Result<(Child, Child)> {
        let item_raw = &self.nodes[item.node];
        let Content::Mapping(entries) = &item_raw.content else {
            let message = format!(
                "expected a mapping of length 1, but found {}",
                item_raw.kind_name()
            );
            return Err(self.pair_error(index, item_raw, message));
        };
        let [(key, value)] = entries.as_slice() else {
            let message = format!(
                "expected a single mapping item, but found {} items",
                entries.len()
            );
            return Err(self.pair_error(index, item_raw, message));
        };
        Ok((*key, *value))
    }

    fn pair_error(&self, index: usize, found: &RawNode, message: String) -> Error {
        let raw = &self.nodes[index];
        let context = if raw.tag == RawTag::Standard(Tag::Omap) {
            "while constructing an ordered map"
        } else {
            "while constructing pairs"
        };
        Error::new(ErrorKind::InvalidTaggedValue, message, found.error_span())
            .with_context(context, Span::point(raw.start))
    }

    /// `!!omap` and `!!pairs`: a sequence of one-entry mappings, as `(key, value)` pairs.
    fn pairs(&self, index: usize, alias: Option<Span>) -> Result<Vec<Node>> {
        let items = self.pair_items(index)?;
        let mut result = Vec::with_capacity(items.len());
        for item in items {
            let (key, value) = self.pair_of(index, item)?;
            let item_raw = &self.nodes[item.node];
            let item_alias = alias.or(item.alias);
            let pair = vec![
                self.object(key, item_alias)?,
                self.object(value, item_alias)?,
            ];
            result.push(Node {
                value: Value::Seq(pair),
                span: item_raw.span,
                alias: item_alias,
                style: item_raw.style,
                tag: Tag::Seq,
            });
        }
        Ok(result)
    }
}

/// PyYAML's `construct_undefined`: `safe_load` has no constructor for this tag.
fn no_constructor(raw: &RawNode) -> Error {
    let name = match &raw.tag {
        RawTag::Standard(tag) => tag.uri(),
        RawTag::Other(name) => name.clone(),
    };
    Error::new(
        ErrorKind::UnknownTag,
        format!(
            "could not determine a constructor for the tag {}",
            python_repr(&name)
        ),
        raw.error_span(),
    )
}

fn unhashable(key: &RawNode, mapping: &RawNode) -> Error {
    Error::new(
        ErrorKind::UnhashableKey,
        "found unhashable key",
        key.error_span(),
    )
    .with_context("while constructing a mapping", Span::point(mapping.start))
}

fn expected(raw: &RawNode, what: &str) -> Error {
    Error::new(
        ErrorKind::InvalidTaggedValue,
        format!("expected {what}, but found {}", raw.kind_name()),
        raw.error_span(),
    )
}

fn invalid(raw: &RawNode, what: &str, text: &str, detail: &str) -> Error {
    Error::new(
        ErrorKind::InvalidTaggedValue,
        format!("invalid {what} {}: {detail}", python_repr(text)),
        raw.error_span(),
    )
}

#[cfg(test)]
mod tests {
    use crate::{ErrorKind, Limits, Node, Value, load};

    fn node(source: &str) -> Node {
        match load(source, &Limits::default()) {
            Ok(Some(node)) => node,
            other => panic!("{source:?} did not load: {other:?}"),
        }
    }

    fn shown(source: &str) -> String {
        match load(source, &Limits::default()) {
            Ok(Some(node)) => node
                .value
                .python_str()
                .unwrap_or_else(|| "<collection>".to_owned()),
            Ok(None) => "<empty>".to_owned(),
            Err(error) => format!("{:?}: {}", error.kind, error.message),
        }
    }

    fn items(source: &str) -> Vec<String> {
        node(source)
            .value
            .as_seq()
            .unwrap_or_default()
            .iter()
            .map(|item| match &item.value {
                Value::Seq(pair) => pair
                    .iter()
                    .map(|part| part.value.python_str().unwrap_or_default())
                    .collect::<Vec<_>>()
                    .join("="),
                value => value.python_str().unwrap_or_default(),
            })
            .collect()
    }

    #[test]
    fn null_accepts_any_scalar_text() {
        assert_eq!(shown("!!null foo"), "None");
        assert_eq!(
            shown("!!null [1]"),
            "InvalidTaggedValue: expected a scalar node, but found sequence"
        );
    }

    #[test]
    fn bool_accepts_any_case_of_the_yaml_1_1_words() {
        assert_eq!(shown("!!bool YeS"), "True");
        assert_eq!(shown("!!bool oFF"), "False");
        assert!(shown("!!bool y").starts_with("InvalidTaggedValue: invalid boolean 'y'"));
    }

    #[test]
    fn int_follows_construct_yaml_int() {
        assert_eq!(shown("!!int '0x_1F'"), "31");
        assert_eq!(shown("!!int '-0b1_01'"), "-5");
        assert_eq!(shown("!!int '0o17'"), "15");
        assert_eq!(shown("!!int '017'"), "15");
        assert_eq!(shown("!!int '--5'"), "5");
        assert_eq!(shown("!!int '-1:30'"), "-90");
        assert_eq!(shown("!!int '1:-30'"), "30");
        assert_eq!(
            shown("-0x8000_0000_0000_0000_0000_0000_0000_0001"),
            "-170141183460469231731687303715884105729"
        );
        assert!(shown("!!int '09'").starts_with(
            "InvalidTaggedValue: invalid integer '09': invalid literal for int() with base 8"
        ));
        assert!(shown("!!int ''").starts_with("InvalidTaggedValue"));
    }

    #[test]
    fn float_follows_construct_yaml_float() {
        assert_eq!(shown("!!float '1_0.5'"), "10.5");
        assert_eq!(shown("!!float 1e3"), "1000.0");
        assert_eq!(shown("!!float '-.INF'"), "-inf");
        assert_eq!(shown("!!float '1:30.5'"), "90.5");
        assert_eq!(shown("!!float 7"), "7.0");
        assert!(shown("!!float abc").starts_with("InvalidTaggedValue: invalid float 'abc'"));
    }

    #[test]
    fn str_keeps_the_text() {
        assert_eq!(shown("!!str 010"), "010");
        assert_eq!(shown("!!str {=: inner}"), "inner");
        assert_eq!(
            shown("!!str {a: b}"),
            "InvalidTaggedValue: expected a scalar node, but found mapping"
        );
    }

    #[test]
    fn binary_decodes_base64_leniently() {
        assert_eq!(shown("!!binary |\n  aGVs\n  bG8=\n"), "b'hello'");
        assert_eq!(
            shown("!!binary 'aGVsbG8'"),
            "InvalidTaggedValue: failed to decode base64 data: Incorrect padding"
        );
        assert!(
            shown("!!binary 'é'")
                .starts_with("InvalidTaggedValue: failed to convert base64 data into ascii")
        );
    }

    #[test]
    fn timestamp_builds_dates_and_datetimes() {
        assert_eq!(shown("!!timestamp 2001-1-2"), "2001-01-02");
        assert_eq!(
            shown("2001-12-14t21:59:43.10-05:00"),
            "2001-12-14 21:59:43.100000-05:00"
        );
        assert!(shown("!!timestamp nope").starts_with("InvalidTaggedValue"));
    }

    #[test]
    fn seq_and_map_require_matching_nodes() {
        assert_eq!(items("!!seq [a, 1]"), ["a", "1"]);
        assert_eq!(
            shown("!!seq {a: 1}"),
            "InvalidTaggedValue: expected a sequence node, but found mapping"
        );
        assert_eq!(
            shown("!!map [a]"),
            "InvalidTaggedValue: expected a mapping node, but found sequence"
        );
    }

    #[test]
    fn set_keeps_distinct_keys_in_first_seen_order() {
        assert_eq!(items("!!set {b, a, b, 1, 1.0, true}"), ["b", "a", "1"]);
        assert_eq!(
            load("!!set {[a]: 1}", &Limits::default()).map_err(|error| error.kind),
            Err(ErrorKind::UnhashableKey)
        );
    }

    #[test]
    fn omap_and_pairs_become_sequences_of_pairs() {
        assert_eq!(items("!!omap [a: 1, b: 2]"), ["a=1", "b=2"]);
        assert_eq!(items("!!pairs [a: 1, a: 2]"), ["a=1", "a=2"]);
        assert_eq!(
            shown("!!omap [a: 1, {b: 2, c: 3}]"),
            "InvalidTaggedValue: expected a single mapping item, but found 2 items"
        );
        assert_eq!(
            shown("!!pairs {a: 1}"),
            "InvalidTaggedValue: expected a sequence, but found mapping"
        );
        assert_eq!(
            shown("!!omap [x]"),
            "InvalidTaggedValue: expected a mapping of length 1, but found scalar"
        );
    }

    #[test]
    fn value_keys_are_strings_but_value_nodes_have_no_constructor() {
        let mapping = node("=: 1\n");
        let keys: Vec<_> = mapping
            .value
            .as_map()
            .map(|map| map.entries().len())
            .into_iter()
            .collect();
        assert_eq!(keys, [1]);
        assert_eq!(
            mapping
                .value
                .as_map()
                .and_then(|map| map.get("="))
                .and_then(|value| value.value.python_str())
                .as_deref(),
            Some("1")
        );
        assert_eq!(
            load("- =\n", &Limits::default()).map_err(|error| error.kind),
            Err(ErrorKind::UnknownTag)
        );
        assert_eq!(
            load("- <<\n", &Limits::default()).map_err(|error| error.kind),
            Err(ErrorKind::UnknownTag)
        );
    }
}
