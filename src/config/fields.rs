//! Reading the values of one job mapping the way upstream does.
//!
//! Upstream turns every key into a `run` command-line option: it calls Python's `str()` on the value and lets
//! argparse parse the text. So `cpu: 1` means "1", `cpu: 0.5` means "0.5", `retry: "2"` is a valid retry, and
//! `retry: 2.0` is not. [`Fields`] reproduces that, and records a [`Problem`] for every value it cannot use
//! instead of stopping at the first.

use std::collections::BTreeMap;
use std::ops::Range;

use yaml11::{Node, Value};

use crate::config::diagnostic::Problem;
use crate::config::keys::{self, Key, Lookup};

/// A value and the byte range it came from.
pub(super) type Located<T> = (T, Range<usize>);

/// The byte range of a node in the file.
pub(super) fn span_of(node: &Node) -> Range<usize> {
    node.span.start.offset..node.span.end.offset
}

/// The entries of one job mapping, by key.
pub(super) struct Fields<'a> {
    entries: BTreeMap<Key, Entry<'a>>,
    /// The whole mapping, for problems about a missing key.
    pub span: Range<usize>,
}

/// One key of the mapping and its value.
#[derive(Clone, Copy)]
pub(super) struct Entry<'a> {
    pub key: &'a Node,
    pub value: &'a Node,
}

impl Entry<'_> {
    pub(super) fn key_range(&self) -> Range<usize> {
        span_of(self.key)
    }

    pub(super) fn value_range(&self) -> Range<usize> {
        span_of(self.value)
    }

    /// From the key to the end of the value: what to underline when the entry as a whole is the problem.
    pub(super) fn range(&self) -> Range<usize> {
        let key = self.key_range();
        key.start..self.value_range().end.max(key.end)
    }
}

/// A value that is a flag upstream (`continuous`, `webservice`, `filelog`, `no-filelog`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Flag {
    Absent,
    Set,
    /// Present but not `true`: upstream ignores it with a warning.
    Ignored,
}

impl<'a> Fields<'a> {
    /// Collects the keys of a job mapping, reporting unknown keys, abbreviations and duplicates.
    pub(super) fn collect(mapping: &'a Node, problems: &mut Vec<Problem>) -> Option<Self> {
        let Value::Map(map) = &mapping.value else {
            return None;
        };
        let mut entries = BTreeMap::new();
        for (key_node, value) in map.entries() {
            let key_span = span_of(key_node);
            let Value::Str(text) = &key_node.value else {
                let shown = key_node
                    .value
                    .python_str()
                    .unwrap_or_else(|| key_node.value.type_name().to_owned());
                let mut problem = Problem::error(
                    "jobs::unknown_key",
                    key_span,
                    format!("`{shown}` is not a job key"),
                )
                .with_label(format!(
                    "YAML 1.1 reads this key as the {} `{shown}`",
                    key_node.value.type_name()
                ));
                if matches!(key_node.value, Value::Bool(_)) {
                    problem = problem.with_help("keys such as `on`, `off`, `yes` and `no` are booleans in YAML 1.1; quote them if you need them as text");
                }
                problems.push(problem);
                continue;
            };
            let key = match keys::lookup(text) {
                Lookup::Exact(key) => key,
                Lookup::Abbreviation(key) => {
                    problems.push(
                        Problem::warning(
                            "jobs::abbreviated_key",
                            key_span.clone(),
                            format!("`{text}` is read as `{key}`"),
                        )
                        .with_label("abbreviated key")
                        .with_help(format!(
                            "upstream accepts abbreviations of its options; write `{key}` in full"
                        )),
                    );
                    key
                }
                Lookup::Unknown { help } => {
                    problems.push(
                        Problem::error(
                            "jobs::unknown_key",
                            key_span,
                            format!("unknown key `{text}`"),
                        )
                        .with_label("not a job key")
                        .with_optional_help(help),
                    );
                    continue;
                }
            };
            let entry = Entry {
                key: key_node,
                value,
            };
            let previous = entries.insert(key, entry);
            // Keys merged in with `<<: *alias` exist to be overridden; only two explicit entries are a mistake.
            if let Some(previous) = previous.filter(|previous| previous.key.alias.is_none()) {
                if key == Key::Name {
                    // Two names in one mapping almost always mean a job lost its `- `, and with it the first
                    // job silently vanishes; upstream loads only the second.
                    problems.push(
                        Problem::error("jobs::duplicate_key", key_span, "this job has two `name` keys")
                            .with_label("second `name`")
                            .with_help(format!(
                                "is a `- ` missing before this line to start a new job? The first `name` is on line {}",
                                previous.key.span.start.line
                            )),
                    );
                    continue;
                }
                // Python dicts keep the last value; we do the same, but say so: it is rarely intended.
                problems.push(
                    Problem::warning(
                        "jobs::duplicate_key",
                        key_span,
                        format!("`{key}` is given more than once; the last value is used"),
                    )
                    .with_label("this value wins")
                    .with_help(format!(
                        "remove one of the two; the other one is on line {}",
                        previous.key.span.start.line
                    )),
                );
            }
        }
        Some(Self {
            entries,
            span: span_of(mapping),
        })
    }

    pub(super) fn get(&self, key: Key) -> Option<Entry<'a>> {
        self.entries.get(&key).copied()
    }

    pub(super) fn has(&self, key: Key) -> bool {
        self.entries.contains_key(&key)
    }

    /// Python's `str()` of a scalar value; a problem for null, sequences and mappings.
    pub(super) fn text(
        &self,
        key: Key,
        problems: &mut Vec<Problem>,
    ) -> Option<(String, Entry<'a>)> {
        let entry = self.get(key)?;
        match &entry.value.value {
            Value::Null => {
                problems.push(
                    Problem::error(
                        "jobs::invalid_value",
                        entry.range(),
                        format!("`{key}` has no value"),
                    )
                    .with_label("empty")
                    .with_help(format!("give `{key}` a value or remove the line")),
                );
                None
            }
            value => {
                let text = value.python_str();
                if text.is_none() {
                    let mut problem = type_mismatch(key, entry, "a single value");
                    if key == Key::Command
                        && let Value::Seq(items) = value
                    {
                        problem = problem.with_help(command_list_help(items));
                    }
                    problems.push(problem);
                }
                text.map(|text| (text, entry))
            }
        }
    }

    /// An integer the way argparse's `type=int` reads `str(value)`.
    pub(super) fn integer(
        &self,
        key: Key,
        problems: &mut Vec<Problem>,
    ) -> Option<(i64, Entry<'a>)> {
        let (text, entry) = self.text(key, problems)?;
        match python_int(&text) {
            Ok(number) => return Some((number, entry)),
            Err(IntError::TooLarge) => {
                problems.push(
                    Problem::error(
                        "jobs::out_of_range",
                        entry.value_range(),
                        format!("`{key}` is far too large: `{text}`"),
                    )
                    .with_label("out of range"),
                );
                return None;
            }
            Err(IntError::NotAnInteger) => {}
        }
        problems.push(
            Problem::error(
                "jobs::invalid_value",
                entry.value_range(),
                format!("`{key}` must be a whole number, not `{text}`"),
            )
            .with_label(format!(
                "read as the {} `{text}`",
                entry.value.value.type_name()
            )),
        );
        None
    }

    /// An integer within `range`, reported with the range when outside.
    pub(super) fn integer_in(
        &self,
        key: Key,
        range: std::ops::RangeInclusive<i64>,
        problems: &mut Vec<Problem>,
    ) -> Option<(i64, Entry<'a>)> {
        let (number, entry) = self.integer(key, problems)?;
        if range.contains(&number) {
            return Some((number, entry));
        }
        let expected = if *range.end() == i64::MAX {
            format!("at least {}", range.start())
        } else {
            format!("from {} to {}", range.start(), range.end())
        };
        problems.push(
            Problem::error(
                "jobs::out_of_range",
                entry.value_range(),
                format!("`{key}` must be {expected}, not {number}"),
            )
            .with_label("out of range"),
        );
        None
    }

    /// One of a fixed set of words (argparse `choices`).
    pub(super) fn choice(
        &self,
        key: Key,
        choices: &[&str],
        problems: &mut Vec<Problem>,
    ) -> Option<(String, Entry<'a>)> {
        let (text, entry) = self.text(key, problems)?;
        if choices.contains(&text.as_str()) {
            return Some((text, entry));
        }
        let listed: Vec<String> = choices.iter().map(|choice| format!("`{choice}`")).collect();
        problems.push(
            Problem::error(
                "jobs::invalid_value",
                entry.value_range(),
                format!("`{key}` must be one of {}, not `{text}`", listed.join(", ")),
            )
            .with_label("not a valid choice"),
        );
        None
    }

    /// A flag: only YAML `true` sets it; `legacy` is the string form old `dump` wrote, accepted with a warning.
    pub(super) fn flag(&self, key: Key, legacy: Option<&str>, problems: &mut Vec<Problem>) -> Flag {
        let Some(entry) = self.get(key) else {
            return Flag::Absent;
        };
        match &entry.value.value {
            Value::Bool(true) => Flag::Set,
            Value::Str(text) if Some(text.as_str()) == legacy => {
                problems.push(
                    Problem::warning(
                        "jobs::legacy_value",
                        entry.value_range(),
                        format!("`{key}: \"{text}\"` is a legacy form"),
                    )
                    .with_label("a string, accepted for compatibility")
                    .with_help(format!("write `{key}: true`")),
                );
                Flag::Set
            }
            value => {
                let shown = match value {
                    Value::Str(text) => format!("\"{text}\""),
                    other => other
                        .python_str()
                        .unwrap_or_else(|| other.type_name().to_owned()),
                };
                let mut problem = Problem::warning(
                    "jobs::ignored_value",
                    entry.range(),
                    format!("`{key}` expects `true` but got `{shown}`; the key is ignored"),
                )
                .with_label("ignored");
                if let Value::Str(text) = value
                    && matches!(text.to_lowercase().as_str(), "true" | "yes" | "on")
                {
                    problem = problem.with_help(format!(
                        "`\"{text}\"` is quoted, so it is text, not a boolean: write `{key}: true`"
                    ));
                } else if matches!(value, Value::Bool(false)) {
                    problem = problem.with_help(format!("remove `{key}: false`; it has no effect"));
                }
                problems.push(problem);
                Flag::Ignored
            }
        }
    }

    /// A list of strings; a single string is taken as a list of one.
    pub(super) fn strings(
        &self,
        key: Key,
        problems: &mut Vec<Problem>,
    ) -> Option<(Vec<Located<String>>, Entry<'a>)> {
        let entry = self.get(key)?;
        match &entry.value.value {
            Value::Str(text) => Some((vec![(text.clone(), entry.value_range())], entry)),
            Value::Seq(items) => {
                let mut strings = Vec::with_capacity(items.len());
                for item in items {
                    if let Value::Str(text) = &item.value {
                        strings.push((text.clone(), span_of(item)));
                    } else {
                        problems.push(
                            Problem::error(
                                "jobs::invalid_type",
                                span_of(item),
                                format!(
                                    "`{key}` must be a list of strings, found a {}",
                                    item.value.type_name()
                                ),
                            )
                            .with_label("not a string"),
                        );
                    }
                }
                Some((strings, entry))
            }
            _ => {
                problems.push(type_mismatch(key, entry, "a list of strings"));
                None
            }
        }
    }
}

/// Help for `command:` written as a list: the command is one string, which the shell splits into words.
fn command_list_help(items: &[Node]) -> String {
    let words: Option<Vec<String>> = items
        .iter()
        .map(|item| {
            item.value.python_str().filter(|word| {
                !word.is_empty()
                    && !word.contains(|c: char| c.is_whitespace() || "\"'\\".contains(c))
            })
        })
        .collect();
    let example = match words {
        Some(words) if !words.is_empty() => words.join(" "),
        _ => "a b c".to_owned(),
    };
    format!(
        "`command` is one string, which the shell splits into words: write `command: \"{example}\"`, not a list"
    )
}

fn type_mismatch(key: Key, entry: Entry<'_>, expected: &str) -> Problem {
    Problem::error(
        "jobs::invalid_type",
        entry.value_range(),
        format!(
            "`{key}` must be {expected}, found a {}",
            entry.value.value.type_name()
        ),
    )
    .with_label(format!("a {}", entry.value.value.type_name()))
}

/// Why a text is not an `i64` for Python's `int()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum IntError {
    NotAnInteger,
    /// A valid integer, but beyond what any key accepts.
    TooLarge,
}

/// Python's `int(text)` for base-10 text: surrounding white space, a sign, and single underscores between
/// digits are allowed.
pub(super) fn python_int(text: &str) -> Result<i64, IntError> {
    let text = text.trim();
    let (negative, digits) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty()
        || digits.starts_with('_')
        || digits.ends_with('_')
        || digits.contains("__")
        || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'_')
    {
        return Err(IntError::NotAnInteger);
    }
    let value: i64 = digits
        .replace('_', "")
        .parse()
        .map_err(|_| IntError::TooLarge)?;
    Ok(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_int_accepts_what_int_accepts() {
        assert_eq!(python_int("12"), Ok(12));
        assert_eq!(python_int(" 12 "), Ok(12));
        assert_eq!(python_int("+3"), Ok(3));
        assert_eq!(python_int("-3"), Ok(-3));
        assert_eq!(python_int("007"), Ok(7));
        assert_eq!(python_int("1_000"), Ok(1000));
        assert_eq!(python_int("99999999999999999999"), Err(IntError::TooLarge));
    }

    #[test]
    fn python_int_rejects_what_int_rejects() {
        for text in [
            "", "2.0", "True", "1e3", "_1", "1_", "1__0", "0x10", "- 1", "five",
        ] {
            assert_eq!(python_int(text), Err(IntError::NotAnInteger), "{text:?}");
        }
    }
}
