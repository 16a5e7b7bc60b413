//! `yaml11` reads YAML exactly as PyYAML's `yaml.safe_load` does (YAML 1.1), and keeps source
//! spans on every node.
//!
//! # Why it exists
//!
//! Toolforge's `jobs.yaml` files have always been read by PyYAML, so their meaning is YAML
//! 1.1's: `yes` and `on` are booleans, `010` is 8, `1:30` is 90, `1e3` is a string, and
//! `2024-01-01` is a date. No Rust crate reproduces those scalar rules (`serde_yaml` is
//! archived, its forks and `serde-saphyr` follow YAML 1.2 or differ in details; see
//! `rust-stack.md` §2.4 in the project's references). This crate takes the event stream of
//! `granit-parser` (the parser under `serde-saphyr`) and re-implements, on top of it, PyYAML's
//! composer, implicit resolvers and `SafeConstructor`, keeping a [`Span`] on every [`Node`] so
//! callers can point at the text a value came from.
//!
//! It is not a serializer and has no serde support: callers walk the [`Node`] tree.
//!
//! # Where to start
//!
//! [`load`] returns the document's root [`Node`]. Its [`Value`] is what `safe_load` would
//! return, in Rust shapes; [`Value::python_str`] gives Python's `str()` of a scalar, which is
//! what Toolforge code sees when it formats a value.
//!
//! ```
//! let source = "continuous: yes\nschedule: 0 0 * * *\nmode: 010\n";
//! let root = yaml11::load(source, &yaml11::Limits::default())?.expect("one document");
//! let jobs = root.value.as_map().expect("a mapping");
//! assert_eq!(jobs.get("continuous").map(|node| &node.value), Some(&yaml11::Value::Bool(true)));
//! assert_eq!(jobs.get("mode").and_then(|node| node.value.python_str()).as_deref(), Some("8"));
//! assert_eq!(jobs.get("schedule").map(|node| node.span.start.line), Some(2));
//! # Ok::<(), yaml11::Error>(())
//! ```
//!
//! # Safety limits
//!
//! [`Limits`] bound the input size, the nesting depth and the number of nodes after alias
//! expansion, so hostile documents (billion laughs, deep nesting) fail fast with
//! [`ErrorKind::LimitExceeded`]. The defaults accept a realistic file of tens of thousands of
//! jobs.
//!
//! # Known divergences from PyYAML
//!
//! Values, and the positions of composition and construction errors, match PyYAML on every
//! document of the differential test (`tests/differential.rs`). Differences remain where
//! granit-parser's YAML 1.2 grammar and PyYAML's 1.1 scanner part ways; they were found by
//! fuzzing both with the same token soup and only concern unusual or malformed text:
//!
//! - Syntax error messages and positions are granit-parser's. When a document has both a
//!   syntax error and a composition error (say an undefined alias just before a stray `]`),
//!   the two libraries may report different ones.
//! - `\u{85}`, `\u{2028}` and `\u{2029}` are line breaks in YAML 1.1 only; documents
//!   containing them are refused rather than read differently.
//! - PyYAML lets a comment follow a quoted scalar without a space (`"a"# c`); granit-parser
//!   refuses it. PyYAML reads `,`, `[` and `]` right after a tag as part of the tag; this crate
//!   does too, but where that breaks PyYAML's parse of the flow collection around it
//!   (`[!!str]`), the error here is the unknown tag rather than PyYAML's syntax error.
//! - A top-level block scalar whose text starts in the first column is refused (PyYAML reads
//!   an empty string when the rest is comments, and fails otherwise). A byte-order mark at the
//!   start of a later line of the document prefix is skipped (PyYAML keeps it as content).
//!   A few other malformed documents that PyYAML accepts are refused.
//! - A recursive alias (`&a [*a]`) is an error here; PyYAML builds a self-referencing list.
//! - Escaped lone surrogates in double-quoted strings (`"\uD800"`) are an error here; Python
//!   strings can hold them, Rust strings cannot.
//! - Python's own exceptions during construction (`ValueError` from `datetime` or `int()`,
//!   `KeyError` from `!!bool`) become [`ErrorKind::InvalidTaggedValue`] with Python's message
//!   and the node's position.
//! - `!!int` accepts ASCII digits only (Python's `int()` also takes other Unicode digits), and
//!   refuses integers of more than 4300 decimal digits even when written in hexadecimal,
//!   binary or octal (Python builds those but cannot print them), and huge sexagesimal values
//!   with a signed part.
//! - `!!set` keeps its elements in first-seen order (Python orders a set by hash);
//!   `!!omap` and `!!pairs` are sequences of two-element sequences (Python: lists of tuples).
//! - The [`Limits`] refuse what PyYAML would try to load: nesting deeper than
//!   [`Limits::max_depth`] (PyYAML stops at Python's recursion limit), more nodes than
//!   [`Limits::max_nodes`] after alias expansion, more bytes than [`Limits::max_bytes`].

#![deny(missing_docs)]
// `Error` keeps its spans and context inline so callers can match on its public fields; errors
// end a load, so their size never matters for speed.
#![expect(clippy::result_large_err, reason = "see the comment above")]

mod base64;
mod compose;
mod construct;
mod error;
mod float;
mod graph;
mod integer;
mod pyyaml_syntax;
mod resolve;
mod span;
mod timestamp;
mod value;

pub use error::{Error, ErrorKind, Limit, Result};
pub use float::python_repr as python_float_repr;
pub use integer::Integer;
pub use span::{Mark, Span};
pub use timestamp::{TimeOfDay, Timestamp};
pub use value::{Mapping, Node, Style, Tag, Value};

/// Bounds on what [`load`] accepts, against hostile or accidental huge input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Largest accepted source, in bytes.
    pub max_bytes: usize,
    /// Deepest accepted nesting of collections, counted after alias expansion.
    pub max_depth: usize,
    /// Most nodes (scalars and collections) accepted, counted after alias expansion.
    pub max_nodes: usize,
}

impl Default for Limits {
    /// 10 MiB, 256 levels, 2 000 000 nodes. A realistic 10 000-job file has about 200 000
    /// nodes and loads in a fraction of a second; a billion-laughs document or 100 000 nested
    /// brackets are refused within a millisecond. Loading takes about 400 bytes of memory per
    /// node, so the node limit also bounds memory, to under 1 GiB.
    fn default() -> Self {
        Self {
            max_bytes: 10 * 1024 * 1024,
            max_depth: 256,
            max_nodes: 2_000_000,
        }
    }
}

/// Loads the single document in `source` as PyYAML's `yaml.safe_load` would.
///
/// Returns `None` for a stream without a document (empty, or only comments), as PyYAML
/// returns `None`; a document whose content is empty (`---`) is a node with [`Value::Null`].
/// A stream with more than one document is an error, as in `safe_load`.
pub fn load(source: &str, limits: &Limits) -> Result<Option<Node>> {
    let Some(document) = compose::compose(source, limits)? else {
        return Ok(None);
    };
    construct::construct(&document).map(Some)
}
