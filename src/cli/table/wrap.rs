//! Python's `textwrap.fill(text)` (width 70, its defaults), which upstream's `show` applies to "Hints:": the
//! same line breaks, so that the grid is the same.
//!
//! The text is cut into chunks as `TextWrapper.wordsep_re` cuts it: runs of whitespace, em-dashes (`--`) between
//! words, and words, a word also ending after a hyphen between letters (`one-` `off`). Lines are then filled
//! greedily, whitespace dropped at line ends, and a chunk longer than a line broken after its last hyphen that
//! fits, else at the width.

/// Upstream's width, textwrap's default.
const WIDTH: usize = 70;

/// Python's whitespace for textwrap: each of these becomes one space.
fn is_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0b' | '\x0c' | '\r' | ' ')
}

/// `\w` without digits: what textwrap calls a letter.
fn is_letter(c: char) -> bool {
    (c.is_alphanumeric() || c == '_') && !c.is_numeric()
}

/// textwrap's `word_punct`: `[\w!"'&.,?]`.
fn is_word_punct(c: char) -> bool {
    c.is_alphanumeric() || "_!\"'&.,?".contains(c)
}

/// The text as textwrap sees it: tabs expanded to the next multiple of 8, every whitespace character a space.
fn munge(text: &str) -> Vec<char> {
    let mut chars = Vec::new();
    let mut column = 0;
    for c in text.chars() {
        match c {
            '\t' => {
                let spaces = 8 - column % 8;
                chars.extend(std::iter::repeat_n(' ', spaces));
                column += spaces;
            }
            '\n' | '\r' => {
                chars.push(' ');
                column = 0;
            }
            c if is_space(c) => {
                chars.push(' ');
                column += 1;
            }
            c => {
                chars.push(c);
                column += 1;
            }
        }
    }
    chars
}

/// Whether a word may end after the hyphen at `at`: two letters before it (or letter, hyphen, letter), and a
/// letter, maybe a hyphen, and a letter after it.
fn breaks_after_hyphen(text: &[char], at: usize) -> bool {
    let letter = |index: Option<usize>| {
        index
            .and_then(|index| text.get(index))
            .is_some_and(|c| is_letter(*c))
    };
    let hyphen = |index: Option<usize>| index.and_then(|index| text.get(index)) == Some(&'-');
    let before = letter(at.checked_sub(1))
        && (letter(at.checked_sub(2)) || (hyphen(at.checked_sub(2)) && letter(at.checked_sub(3))));
    let after = letter(Some(at + 1))
        && (letter(Some(at + 2)) || (hyphen(Some(at + 2)) && letter(Some(at + 3))));
    before && after
}

/// The length of the run of hyphens at `at` when it is an em-dash: two or more, after a word character, before
/// a word character.
fn em_dash(text: &[char], at: usize) -> Option<usize> {
    let run = text[at..].iter().take_while(|c| **c == '-').count();
    let follows_word = at
        .checked_sub(1)
        .is_some_and(|index| is_word_punct(text[index]));
    let precedes_word = text
        .get(at + run)
        .is_some_and(|c| c.is_alphanumeric() || *c == '_');
    (run >= 2 && follows_word && precedes_word).then_some(run)
}

/// The chunks of `text`, as `wordsep_re.split` gives them.
fn chunks(text: &[char]) -> Vec<String> {
    let mut chunks = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let end = if text[start] == ' ' {
            start + text[start..].iter().take_while(|c| **c == ' ').count()
        } else if let Some(run) = em_dash(text, start) {
            start + run
        } else {
            word_end(text, start)
        };
        chunks.push(text[start..end].iter().collect());
        start = end;
    }
    chunks
}

/// Where the word starting at `start` ends: at whitespace or the end, after a hyphen it may break at, or before
/// an em-dash.
fn word_end(text: &[char], start: usize) -> usize {
    let mut end = start + 1;
    while end < text.len() && text[end] != ' ' {
        if text[end - 1] == '-' && breaks_after_hyphen(text, end - 1) {
            break;
        }
        if text[end] == '-' && em_dash(text, end).is_some() {
            break;
        }
        end += 1;
    }
    end
}

/// `textwrap.fill(text)`.
pub(crate) fn fill(text: &str) -> String {
    let mut chunks = chunks(&munge(text));
    chunks.reverse();
    let blank = |chunk: &String| chunk.trim().is_empty();
    let mut lines: Vec<String> = Vec::new();
    while !chunks.is_empty() {
        if !lines.is_empty() && chunks.last().is_some_and(blank) {
            chunks.pop();
        }
        let mut line: Vec<String> = Vec::new();
        let mut length = 0;
        while let Some(chunk) = chunks.last() {
            let size = chunk.chars().count();
            if length + size > WIDTH {
                break;
            }
            length += size;
            line.extend(chunks.pop());
        }
        if let Some(chunk) = chunks.last_mut()
            && chunk.chars().count() > WIDTH
        {
            line.push(long_word_head(chunk, WIDTH - length));
        }
        if line.last().is_some_and(blank) {
            line.pop();
        }
        if !line.is_empty() {
            lines.push(line.concat());
        }
    }
    lines.join("\n")
}

/// Takes off `chunk` what fits in `space` (at least one character): up to its last hyphen within it when
/// something other than hyphens comes before that one, else `space` characters.
fn long_word_head(chunk: &mut String, space: usize) -> String {
    let space = space.max(1);
    let chars: Vec<char> = chunk.chars().collect();
    let end = chars[..space.min(chars.len())]
        .iter()
        .rposition(|c| *c == '-')
        .filter(|hyphen| *hyphen > 0 && chars[..*hyphen].iter().any(|c| *c != '-'))
        .map_or(space, |hyphen| hyphen + 1);
    let end = end.min(chars.len());
    *chunk = chars[end..].iter().collect();
    chars[..end].iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden strings from Python 3.11's `textwrap.fill`.
    #[test]
    fn lines_break_where_pythons_textwrap_breaks_them() {
        let cases = [
            ("", ""),
            ("short", "short"),
            (
                "Waiting for scheduled time. Previous: 2026-01-01T12:34:00Z. Next: 2026-01-02T12:34:00Z",
                "Waiting for scheduled time. Previous: 2026-01-01T12:34:00Z. Next:\n2026-01-02T12:34:00Z",
            ),
            (
                "restarted (3). exitcode 1. a very long message that goes on and on and on, with one-off hyphenated words",
                "restarted (3). exitcode 1. a very long message that goes on and on and\non, with one-off hyphenated words",
            ),
            (
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa the-quick-brown-fox-jumps-over",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa the-\nquick-brown-fox-jumps-over",
            ),
            (
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nxxxxxxxxxx",
            ),
            (
                "Unable to start, out of quota for limits.cpu=4,limits.memory=8Gi,requests.cpu=2 -- back-off 5m0s restarting failed container=job pod=x-1-abc_tool-test(1234)",
                "Unable to start, out of quota for\nlimits.cpu=4,limits.memory=8Gi,requests.cpu=2 -- back-off 5m0s\nrestarting failed container=job pod=x-1-abc_tool-test(1234)",
            ),
            (
                "tab\there  and\nnewline   spaces  at  the break point of a line that is long enough to wrap twice ok",
                "tab     here  and newline   spaces  at  the break point of a line that\nis long enough to wrap twice ok",
            ),
            (
                "well-known e-mail a-b-c-d x--y foo --bar 1-2-3 éa-bé über-straßewell-known e-mail a-b-c-d x--y foo --bar 1-2-3 éa-bé über-straße",
                "well-known e-mail a-b-c-d x--y foo --bar 1-2-3 éa-bé über-straßewell-\nknown e-mail a-b-c-d x--y foo --bar 1-2-3 éa-bé über-straße",
            ),
        ];
        for (text, filled) in cases {
            assert_eq!(fill(text), filled, "{text:?}");
        }
    }
}
