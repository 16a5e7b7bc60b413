//! The composed document: a graph of raw nodes that `compose` builds and `construct` reads.
//!
//! Nodes live in an arena and aliases are indices into it, as PyYAML's composer shares node
//! objects; tags are already resolved, values not yet built.

use std::borrow::Cow;

use crate::span::{Mark, Span};
use crate::value::{Style, Tag};

/// A composed document: nodes in an arena, aliases as shared indices.
#[derive(Debug)]
pub(crate) struct Document<'source> {
    pub(crate) nodes: Vec<RawNode<'source>>,
    pub(crate) root: usize,
}

#[derive(Debug)]
pub(crate) struct RawNode<'source> {
    pub(crate) content: Content<'source>,
    /// Where the node's text is (quotes and brackets included, tag and anchor excluded).
    pub(crate) span: Span,
    /// Where the node starts including its tag and anchor, which is where PyYAML points.
    pub(crate) start: Mark,
    pub(crate) tag: RawTag,
    pub(crate) style: Style,
    /// Nodes in the subtree after alias expansion.
    pub(crate) size: usize,
    /// Collections nested in the subtree after alias expansion (0 for a scalar).
    pub(crate) height: usize,
    /// Whether the collection is still being composed, to refuse recursive aliases.
    pub(crate) open: bool,
}

impl RawNode<'_> {
    /// The span PyYAML would report for this node: from its tag or anchor to its end.
    pub(crate) fn error_span(&self) -> Span {
        Span::new(self.start, self.span.end)
    }

    /// PyYAML's `node.id`: "scalar", "sequence" or "mapping".
    pub(crate) fn kind_name(&self) -> &'static str {
        match self.content {
            Content::Scalar(_) => "scalar",
            Content::Sequence(_) => "sequence",
            Content::Mapping(_) => "mapping",
        }
    }
}

/// A resolved tag: a standard one, or any other (which `safe_load` cannot construct).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum RawTag {
    Standard(Tag),
    Other(String),
}

#[derive(Debug)]
pub(crate) enum Content<'source> {
    /// Borrowed from the source when the text is written there as is (most plain and quoted scalars), so
    /// composing allocates only for escaped or folded text.
    Scalar(Cow<'source, str>),
    Sequence(Vec<Child>),
    Mapping(Vec<(Child, Child)>),
}

/// A reference from a collection to a node; `alias` is set when the reference is an alias.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Child {
    pub(crate) node: usize,
    pub(crate) alias: Option<Span>,
}
