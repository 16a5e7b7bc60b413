//! Python's `shlex.split` and `shlex.join`, which upstream uses for build-service commands without a shell.
//!
//! Upstream splits the `launcher …` command into an argument vector (so signals reach the process) and joins it
//! back when reading an object. Splitting follows POSIX mode exactly as Python does: single quotes are literal,
//! inside double quotes a backslash escapes only `"` and `\`, elsewhere it escapes any character.

/// Why a command cannot be split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SplitError {
    #[error("no closing quotation")]
    NoClosingQuotation,
    #[error("no escaped character after the final backslash")]
    NoEscapedCharacter,
}

/// Splits `text` into words the way Python's `shlex.split(text)` does.
pub fn split(text: &str) -> Result<Vec<String>, SplitError> {
    let mut words = Vec::new();
    let mut word = String::new();
    // A word exists once something (even an empty pair of quotes) was read for it.
    let mut in_word = false;
    let mut characters = text.chars();
    while let Some(character) = characters.next() {
        match character {
            ' ' | '\t' | '\r' | '\n' => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            '\\' => {
                word.push(characters.next().ok_or(SplitError::NoEscapedCharacter)?);
                in_word = true;
            }
            '\'' => {
                loop {
                    match characters.next() {
                        Some('\'') => break,
                        Some(quoted) => word.push(quoted),
                        None => return Err(SplitError::NoClosingQuotation),
                    }
                }
                in_word = true;
            }
            '"' => {
                loop {
                    match characters.next() {
                        Some('"') => break,
                        Some('\\') => match characters.next() {
                            Some(escaped @ ('"' | '\\')) => word.push(escaped),
                            Some(other) => {
                                word.push('\\');
                                word.push(other);
                            }
                            None => return Err(SplitError::NoClosingQuotation),
                        },
                        Some(quoted) => word.push(quoted),
                        None => return Err(SplitError::NoClosingQuotation),
                    }
                }
                in_word = true;
            }
            other => {
                word.push(other);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    Ok(words)
}

/// Joins words the way Python's `shlex.join` does: each word quoted only when it needs to be.
pub fn join<S: AsRef<str>>(words: &[S]) -> String {
    words
        .iter()
        .map(|word| quote(word.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

fn quote(word: &str) -> String {
    if word.is_empty() {
        return "''".to_owned();
    }
    let safe = word
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./-".contains(&b));
    if safe {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r#"'"'"'"#))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_python_shlex() {
        for (text, words) in [
            (
                "launcher bot --lang en",
                vec!["launcher", "bot", "--lang", "en"],
            ),
            ("  a\t b\n", vec!["a", "b"]),
            (r#"a "b c" 'd e'"#, vec!["a", "b c", "d e"]),
            (r#"a"b"'c' d"#, vec!["abc", "d"]),
            (r#""" x"#, vec!["", "x"]),
            (r"a\ b \$x", vec!["a b", "$x"]),
            (r#""a\"b\\c\d""#, vec![r#"a"b\c\d"#]),
            (r"'a\b'", vec![r"a\b"]),
            ("echo $HOME; ls", vec!["echo", "$HOME;", "ls"]),
            ("", vec![]),
        ] {
            assert_eq!(split(text).unwrap(), words, "{text:?}");
        }
    }

    #[test]
    fn unbalanced_quotes_are_errors() {
        assert_eq!(split("a 'b"), Err(SplitError::NoClosingQuotation));
        assert_eq!(split(r#"a "b\"#), Err(SplitError::NoClosingQuotation));
        assert_eq!(split("a \\"), Err(SplitError::NoEscapedCharacter));
    }

    #[test]
    fn joins_like_python_shlex() {
        assert_eq!(
            join(&["launcher", "bot", "--x=1", "a/b.py"]),
            "launcher bot --x=1 a/b.py"
        );
        assert_eq!(
            join(&["a b", "", "it's", "$HOME"]),
            r#"'a b' '' 'it'"'"'s' '$HOME'"#
        );
    }

    #[test]
    fn join_then_split_gives_the_words_back() {
        let words = vec!["x", "a b", "", "it's", "\"q\"", "tab\there", "ünï"];
        assert_eq!(split(&join(&words)).unwrap(), words);
    }

    proptest::proptest! {
        #[test]
        fn any_words_survive_join_and_split(words in proptest::collection::vec(".*", 0..6)) {
            proptest::prop_assert_eq!(split(&join(&words)).unwrap(), words);
        }

        #[test]
        fn splitting_never_panics(text in ".*") {
            let _ = split(&text);
        }
    }
}
