//! What PyYAML's reader and scanner refuse but granit-parser (YAML 1.2) accepts.
//!
//! `compose` runs these checks around the parser so that such text fails as it does under
//! PyYAML, with PyYAML's messages: special characters, YAML 1.1 line breaks, a leading `...`,
//! tabs between tokens, and anchor names outside PyYAML's alphabet.

use crate::error::{Error, ErrorKind, Result};
use crate::span::{Span, mark_at};

/// PyYAML's reader refuses these characters anywhere in the stream, before parsing.
fn is_printable(character: char) -> bool {
    matches!(character,
        '\u{9}' | '\u{A}' | '\u{D}' | '\u{20}'..='\u{7E}' | '\u{85}' | '\u{A0}'..='\u{D7FF}'
        | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..='\u{10FFFF}')
}

pub(crate) fn check_printable(source: &str) -> Result<()> {
    let Some((offset, character)) = source
        .char_indices()
        .find(|(_, character)| !is_printable(*character))
    else {
        return Ok(());
    };
    let start = mark_at(source, offset);
    let end = mark_at(source, offset + character.len_utf8());
    Err(Error::new(
        ErrorKind::Syntax,
        format!(
            "unacceptable character #x{:04x}: special characters are not allowed",
            u32::from(character)
        ),
        Span::new(start, end),
    ))
}

/// YAML 1.1 also breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR; granit-parser
/// (YAML 1.2) reads them as ordinary characters, so the same text would silently load to
/// different values. Refusing them is the honest choice; they do not occur in real files.
pub(crate) fn check_line_breaks(source: &str) -> Result<()> {
    let Some((offset, character)) = source
        .char_indices()
        .find(|(_, character)| matches!(character, '\u{85}' | '\u{2028}' | '\u{2029}'))
    else {
        return Ok(());
    };
    let start = mark_at(source, offset);
    let end = mark_at(source, offset + character.len_utf8());
    Err(Error::new(
        ErrorKind::Syntax,
        format!(
            "unsupported line break character #x{:04x}: YAML 1.1 reads it as a line break, use a plain line feed instead",
            u32::from(character)
        ),
        Span::new(start, end),
    ))
}

/// PyYAML only skips `...` markers between documents; one before the first document is an
/// error there, while granit reads it as an empty stream.
pub(crate) fn check_leading_document_end(source: &str) -> Result<()> {
    let mut offset = usize::from(source.starts_with('\u{feff}')) * '\u{feff}'.len_utf8();
    for line in source[offset..].split_inclusive('\n') {
        let content = line.trim_start_matches(' ');
        let is_blank_or_comment = content.trim_end().is_empty() || content.starts_with('#');
        if !is_blank_or_comment {
            let is_document_end =
                line.starts_with("...") && line[3..].chars().next().is_none_or(char::is_whitespace);
            if !is_document_end {
                return Ok(());
            }
            let start = mark_at(source, offset);
            let end = mark_at(source, offset + 3);
            return Err(Error::new(
                ErrorKind::Syntax,
                "expected the node content, but found a document end marker",
                Span::new(start, end),
            ));
        }
        offset += line.len();
    }
    Ok(())
}

/// Whether PyYAML's scanner accepts `character` in an anchor or alias name.
fn is_anchor_character(character: char) -> bool {
    character.is_ascii_alphanumeric() || character == '-' || character == '_'
}

/// A byte range in which tabs are content; in block scalars only past the indentation.
pub(crate) struct TabRegion {
    pub(crate) range: std::ops::Range<usize>,
    pub(crate) block_indent: Option<usize>,
}

/// PyYAML's scanner only skips spaces between tokens and ends plain scalars at a tab, so a
/// tab anywhere but in a comment or a quoted or block scalar is an error; YAML 1.2 (and
/// granit) accept many of those tabs.
pub(crate) fn check_tabs(source: &str, regions: &mut [TabRegion]) -> Result<()> {
    regions.sort_by_key(|region| region.range.start);
    let mut regions = regions.iter().peekable();
    for (offset, _) in source.match_indices('\t') {
        while regions
            .next_if(|region| region.range.end <= offset)
            .is_some()
        {}
        let allowed = regions.peek().is_some_and(|region| {
            region.range.contains(&offset)
                && region.block_indent.is_none_or(|indent| {
                    let line_start = source[..offset]
                        .rfind('\n')
                        .map_or(0, |newline| newline + 1);
                    let spaces = source[line_start..offset]
                        .bytes()
                        .take_while(|byte| *byte == b' ')
                        .count();
                    spaces >= indent
                })
        });
        if !allowed {
            let start = mark_at(source, offset);
            let end = mark_at(source, offset + 1);
            return Err(Error::new(
                ErrorKind::Syntax,
                "found character '\\t' that cannot start any token",
                Span::new(start, end),
            )
            .with_context("while scanning for the next token", Span::point(start)));
        }
    }
    Ok(())
}

/// PyYAML only accepts ASCII letters, digits, `-` and `_` in anchor and alias names.
pub(crate) fn check_anchor_name(source: &str, span: Span, what: &str) -> Result<()> {
    let text = span.slice(source).unwrap_or_default();
    let name = text.get(1..).unwrap_or_default();
    let Some((offset, character)) = name
        .char_indices()
        .find(|(_, character)| !is_anchor_character(*character))
    else {
        if name.is_empty() {
            return Err(Error::new(
                ErrorKind::Syntax,
                "expected alphabetic or numeric character",
                span,
            )
            .with_context(format!("while scanning an {what}"), span));
        }
        return Ok(());
    };
    let start = mark_at(source, span.start.offset + 1 + offset);
    let end = mark_at(source, start.offset + character.len_utf8());
    Err(Error::new(
        ErrorKind::Syntax,
        format!(
            "expected alphabetic or numeric character, but found {}",
            crate::integer::python_repr(&character.to_string())
        ),
        Span::new(start, end),
    )
    .with_context(format!("while scanning an {what}"), span))
}

/// Whether PyYAML's tag scanner (`scan_tag_uri`) takes `byte` as part of a tag.
fn is_tag_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"-;/?:@&=+$,_.!~*'()[]%".contains(&byte)
}

/// PyYAML reads a tag up to the first byte outside the URI alphabet, which takes in `,`, `[`
/// and `]` where granit-parser stops in flow context, and then requires a space or a line
/// break. Returns what PyYAML adds to the tag, if anything; the caller appends it, so the
/// tag is then unknown, as it is to PyYAML.
pub(crate) fn check_tag_end(source: &str, tag: Span) -> Result<Option<String>> {
    let rest = source.get(tag.end.offset..).unwrap_or_default();
    let extra = rest.bytes().take_while(|byte| is_tag_byte(*byte)).count();
    match rest[extra..].chars().next() {
        None | Some(' ' | '\r' | '\n') => Ok((extra > 0).then(|| rest[..extra].to_owned())),
        Some(found) => {
            let at = mark_at(source, tag.end.offset + extra);
            Err(Error::new(
                ErrorKind::Syntax,
                format!(
                    "expected ' ', but found {}",
                    crate::integer::python_repr(&found.to_string())
                ),
                Span::point(at),
            )
            .with_context("while scanning a tag", tag))
        }
    }
}

/// The byte offset of the `|` or `>` header of the block scalar whose text starts at
/// `content`: the last header-like token (`|`, `>-`, `|2+`, ...) on the closest non-blank line
/// above, before any comment. `None` when the text starts on no later line than the header.
pub(crate) fn block_scalar_header(source: &str, content: usize) -> Option<usize> {
    let mut line_end = source.get(..content)?.rfind('\n')?;
    loop {
        let line_start = source[..line_end]
            .rfind('\n')
            .map_or(0, |newline| newline + 1);
        let line = &source[line_start..line_end];
        if !line.trim().is_empty() {
            let mut header = None;
            for (offset, token) in tokens(line) {
                if token.starts_with('#') {
                    break;
                }
                let is_header = token.starts_with(['|', '>'])
                    && token[1..]
                        .bytes()
                        .all(|byte| byte.is_ascii_digit() || byte == b'-' || byte == b'+');
                if is_header {
                    header = Some(line_start + offset);
                }
            }
            return header;
        }
        line_end = line_start.checked_sub(1)?;
    }
}

/// The whitespace-separated tokens of `line`, with their byte offsets.
fn tokens(line: &str) -> impl Iterator<Item = (usize, &str)> {
    line.split([' ', '\t', '\r'])
        .scan(0, |offset, token| {
            let start = *offset;
            *offset += token.len() + 1;
            Some((start, token))
        })
        .filter(|(_, token)| !token.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_block_scalar_header_above_the_text() {
        let source = "key: |+ # a | b\n\n  text\n";
        let content = source.find("text").unwrap_or_default();
        assert_eq!(block_scalar_header(source, content), Some(5));
        let nested = "- - >-2\n     x\n";
        assert_eq!(
            block_scalar_header(nested, nested.find('x').unwrap_or_default()),
            Some(4)
        );
        assert_eq!(block_scalar_header("x", 0), None);
    }

    #[test]
    fn tags_must_end_at_a_space_or_line_break() {
        let tag = |source: &str, end: usize| Span::new(mark_at(source, 0), mark_at(source, end));
        assert_eq!(check_tag_end("!!str x", tag("!!str x", 5)), Ok(None));
        assert_eq!(
            check_tag_end("!!str, x", tag("!!str, x", 5)),
            Ok(Some(",".to_owned()))
        );
        let error = check_tag_end("!!str}", tag("!!str}", 5)).err();
        assert_eq!(
            error.map(|error| error.message),
            Some("expected ' ', but found '}'".to_owned())
        );
    }
}
