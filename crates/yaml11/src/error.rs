//! The error type of [`crate::load`]: what went wrong, where, and in which construct.
//!
//! Messages follow PyYAML's wording where PyYAML has one (so users searching for it find the
//! same answers), lowercase and without a final period. Positions are spans, so callers can
//! underline the text in a diagnostic.

use std::fmt;

use crate::span::Span;

/// Result type of this crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why a document could not be loaded.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub struct Error {
    /// The category, for callers that react differently to each.
    pub kind: ErrorKind,
    /// A lowercase description, such as "mapping values are not allowed here".
    pub message: String,
    /// Where the problem is.
    pub span: Span,
    /// The enclosing construct, such as ("while constructing a mapping", span of the mapping).
    pub context: Option<(String, Span)>,
}

/// The category of an [`Error`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text is not well-formed YAML, or contains characters YAML does not allow.
    Syntax,
    /// The stream holds more than one document.
    MultipleDocuments,
    /// An anchor name is defined twice in the document (PyYAML refuses this).
    DuplicateAnchor,
    /// An alias names an anchor that is not defined before it.
    UndefinedAlias,
    /// An alias refers to a collection that contains the alias itself.
    RecursiveAlias,
    /// A tag that `safe_load` has no constructor for, such as `!foo` or `!!python/tuple`.
    UnknownTag,
    /// A value that its tag cannot be built from, such as `!!int abc` or the date `2024-02-30`.
    InvalidTaggedValue,
    /// A sequence or mapping used as a mapping key (Python cannot hash it).
    UnhashableKey,
    /// A merge key (`<<`) whose value is not a mapping or a sequence of mappings.
    InvalidMerge,
    /// The document exceeds one of the [`crate::Limits`].
    LimitExceeded(Limit),
}

/// Which of the [`crate::Limits`] a document exceeded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Limit {
    /// [`crate::Limits::max_bytes`].
    Bytes,
    /// [`crate::Limits::max_depth`].
    Depth,
    /// [`crate::Limits::max_nodes`].
    Nodes,
}

impl Error {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>, span: Span) -> Self {
        Self {
            kind,
            message: message.into(),
            span,
            context: None,
        }
    }

    pub(crate) fn with_context(mut self, context: impl Into<String>, span: Span) -> Self {
        self.context = Some((context.into(), span));
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((context, span)) = &self.context {
            write!(formatter, "{context} at {}: ", span.start)?;
        }
        write!(formatter, "{} at {}", self.message, self.span.start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::span::Mark;

    #[test]
    fn is_a_standard_error() {
        fn source_of(error: &dyn std::error::Error) -> Option<&dyn std::error::Error> {
            error.source()
        }
        let error = Error::new(ErrorKind::Syntax, "bad", Span::default());
        assert!(source_of(&error).is_none());
    }

    #[test]
    fn display_shows_context_then_message_with_positions() {
        let at = |line| {
            Span::point(Mark {
                offset: 0,
                line,
                column: 1,
            })
        };
        let error = Error::new(ErrorKind::UnhashableKey, "found unhashable key", at(2))
            .with_context("while constructing a mapping", at(1));
        assert_eq!(
            error.to_string(),
            "while constructing a mapping at line 1, column 1: found unhashable key at line 2, column 1"
        );
    }
}
