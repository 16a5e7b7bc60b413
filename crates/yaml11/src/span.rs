//! Positions in the source text: [`Mark`] and [`Span`].
//!
//! Lines and columns are 1-based, as editors and PyYAML's messages show them; columns count
//! characters, not bytes, so they stay right for non-ASCII text. Byte offsets index the `&str`
//! given to [`crate::load`], for slicing and for diagnostic crates such as miette.

use std::fmt;
use std::ops::Range;

/// A position in the source text.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mark {
    /// Byte offset from the start of the source.
    pub offset: usize,
    /// Line number, starting at 1.
    pub line: usize,
    /// Column number, starting at 1, counted in characters.
    pub column: usize,
}

impl fmt::Display for Mark {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "line {}, column {}", self.line, self.column)
    }
}

/// A range of the source text, from `start` (inclusive) to `end` (exclusive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Span {
    /// First position of the range.
    pub start: Mark,
    /// Position just after the range.
    pub end: Mark,
}

impl Span {
    /// A span from `start` to `end`.
    #[must_use]
    pub fn new(start: Mark, end: Mark) -> Self {
        Self { start, end }
    }

    /// An empty span at `mark`.
    #[must_use]
    pub fn point(mark: Mark) -> Self {
        Self {
            start: mark,
            end: mark,
        }
    }

    /// The byte range of the span, for slicing the source.
    #[must_use]
    pub fn byte_range(&self) -> Range<usize> {
        self.start.offset..self.end.offset.max(self.start.offset)
    }

    /// Length of the span in bytes.
    #[must_use]
    pub fn len(&self) -> usize {
        self.end.offset.saturating_sub(self.start.offset)
    }

    /// Whether the span covers no text (an empty value, or a position).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The text the span covers, or `None` if it does not fit `source`.
    #[must_use]
    pub fn slice<'source>(&self, source: &'source str) -> Option<&'source str> {
        source.get(self.byte_range())
    }
}

/// Computes the [`Mark`] of a byte offset, for positions the parser does not report itself.
pub(crate) fn mark_at(source: &str, offset: usize) -> Mark {
    let offset = offset.min(source.len());
    let before = source.get(..offset).unwrap_or(source);
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    Mark {
        offset,
        line: before.matches('\n').count() + 1,
        column: before
            .get(line_start..)
            .map_or(0, |line| line.chars().count())
            + 1,
    }
}

/// Computes the [`Mark`] of `offset`, an earlier position than `known`, in time proportional
/// to the distance between them rather than to the whole source.
pub(crate) fn mark_before(source: &str, known: Mark, offset: usize) -> Mark {
    let offset = offset.min(known.offset);
    let Some(between) = source.get(offset..known.offset) else {
        return mark_at(source, offset);
    };
    let before = source.get(..offset).unwrap_or_default();
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    Mark {
        offset,
        line: known.line.saturating_sub(between.matches('\n').count()),
        column: before
            .get(line_start..)
            .map_or(0, |line| line.chars().count())
            + 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_at_counts_lines_and_characters() {
        let source = "a: é\nbé: c";
        let mark = mark_at(source, source.find('c').unwrap_or_default());
        assert_eq!((mark.line, mark.column), (2, 5));
        assert_eq!(
            mark_at(source, 0),
            Mark {
                offset: 0,
                line: 1,
                column: 1
            }
        );
    }

    #[test]
    fn mark_before_agrees_with_mark_at() {
        let source = "a: |\n\n  é text\n";
        let known = mark_at(source, source.find("text").unwrap_or_default());
        for offset in [0, 3, 4, 5, 6, 8] {
            assert_eq!(
                mark_before(source, known, offset),
                mark_at(source, offset),
                "offset {offset}"
            );
        }
    }

    #[test]
    fn byte_range_slices_the_source() {
        let source = "key: value";
        let span = Span::new(mark_at(source, 5), mark_at(source, 10));
        assert_eq!(span.slice(source), Some("value"));
        assert_eq!(span.len(), 5);
        assert!(!span.is_empty());
    }
}
