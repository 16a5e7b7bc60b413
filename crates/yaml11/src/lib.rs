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
//! - Syntax is granit-parser's YAML 1.2 grammar. On well-formed documents the two agree; on
//!   malformed ones the error message and position come from granit-parser, and a few
//!   documents only one of them accepts (for example tab characters in some indentation
//!   positions, or `\x85`, `\u2028` and `\u2029`, which YAML 1.1 treats as line breaks).
//!   Error positions of syntax errors can differ from PyYAML's.
//! - A recursive alias (`&a [*a]`) is an error here; PyYAML builds a self-referencing list.
//! - Escaped lone surrogates in double-quoted strings (`"\uD800"`) are an error here; Python
//!   strings can hold them, Rust strings cannot.
//! - PyYAML builds collections breadth-first (its generator-based constructors), this crate
//!   depth-first, so when a document contains several construction errors the one reported
//!   may differ. Documents with at most one error report the same one.
//! - Python's own errors during construction (`ValueError` from `datetime`, `KeyError` from
//!   `!!bool`) become [`ErrorKind::InvalidTaggedValue`] with Python's message.
//! - `!!int` accepts ASCII digits only (Python's `int()` also takes other Unicode digits), and
//!   refuses integers of more than 4300 decimal digits even in hexadecimal, binary or octal
//!   (Python builds them but cannot print them).
//! - `!!set` keeps its elements in first-seen order (Python orders a set by hash);
//!   `!!omap` and `!!pairs` are sequences of two-element sequences (Python: lists of tuples).
//! - Nesting deeper than [`Limits::max_depth`] is refused; PyYAML only stops at Python's
//!   recursion limit.

// `Error` keeps its spans and context inline so callers can match on its public fields; errors
// end a load, so their size never matters for speed.
#![expect(clippy::result_large_err, reason = "see the comment above")]

mod base64;
mod compose;
mod construct;
mod error;
mod float;
mod integer;
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
    /// 10 MiB, 256 levels, 2 000 000 nodes: a 10 000-job file has about 100 000 nodes.
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
