//! The YAML 1.1 implicit resolvers of PyYAML's `resolver.py`: which tag a plain scalar gets.
//!
//! PyYAML tries regular expressions in registration order (bool, float, int, merge, null,
//! timestamp, value) among those registered for the scalar's first character. The matchers
//! below are hand-written equivalents of those expressions, so the crate needs no regex engine;
//! each one documents the expression it implements.

use crate::value::Tag;

/// The tag PyYAML's resolver gives a scalar whose implicit resolution is enabled.
pub(crate) fn resolve_plain(text: &str) -> Tag {
    if is_bool(text) {
        Tag::Bool
    } else if is_float(text) {
        Tag::Float
    } else if is_int(text) {
        Tag::Int
    } else if text == "<<" {
        Tag::Merge
    } else if is_null(text) {
        Tag::Null
    } else if is_timestamp(text) {
        Tag::Timestamp
    } else if text == "=" {
        Tag::Value
    } else {
        Tag::Str
    }
}

/// `yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF`
fn is_bool(text: &str) -> bool {
    matches!(
        text,
        "yes"
            | "Yes"
            | "YES"
            | "no"
            | "No"
            | "NO"
            | "true"
            | "True"
            | "TRUE"
            | "false"
            | "False"
            | "FALSE"
            | "on"
            | "On"
            | "ON"
            | "off"
            | "Off"
            | "OFF"
    )
}

/// `~|null|Null|NULL|` (the empty string too).
fn is_null(text: &str) -> bool {
    matches!(text, "" | "~" | "null" | "Null" | "NULL")
}

/// ```text
/// [-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
/// |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
/// |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
/// |[-+]?\.(?:inf|Inf|INF)
/// |\.(?:nan|NaN|NAN)
/// ```
fn is_float(text: &str) -> bool {
    if matches!(text, ".nan" | ".NaN" | ".NAN") {
        return true;
    }
    let unsigned = strip_sign(text);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") {
        return true;
    }
    let bytes = unsigned.as_bytes();
    if let Some(rest) = unsigned.strip_prefix('.') {
        // Only the unsigned form may start with the dot.
        return unsigned.len() == text.len()
            && rest.as_bytes().first().is_some_and(u8::is_ascii_digit)
            && fraction_and_exponent(&rest.as_bytes()[1..]);
    }
    if !bytes.first().is_some_and(u8::is_ascii_digit) {
        return false;
    }
    let integer_end = 1 + count_while(&bytes[1..], |byte| byte.is_ascii_digit() || byte == b'_');
    let rest = &bytes[integer_end..];
    match rest.first() {
        Some(b'.') => fraction_and_exponent(&rest[1..]),
        Some(b':') => {
            let Some(after_groups) = sexagesimal_groups(rest) else {
                return false;
            };
            after_groups.first() == Some(&b'.')
                && after_groups[1..]
                    .iter()
                    .all(|byte| byte.is_ascii_digit() || *byte == b'_')
        }
        _ => false,
    }
}

/// `[0-9_]*(?:[eE][-+][0-9]+)?` to the end of the text.
fn fraction_and_exponent(bytes: &[u8]) -> bool {
    let fraction = count_while(bytes, |byte| byte.is_ascii_digit() || byte == b'_');
    let exponent = &bytes[fraction..];
    match exponent {
        [] => true,
        [b'e' | b'E', b'-' | b'+', digits @ ..] => {
            !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
        }
        _ => false,
    }
}

/// `(?::[0-5]?[0-9])+`: returns what follows the groups, or `None` if there is no valid group.
fn sexagesimal_groups(mut bytes: &[u8]) -> Option<&[u8]> {
    let mut groups = 0;
    while let Some(rest) = bytes.strip_prefix(b":") {
        let digits = count_while(rest, |byte| byte.is_ascii_digit());
        let valid = match digits {
            1 => true,
            2 => (b'0'..=b'5').contains(&rest[0]),
            _ => false,
        };
        if !valid {
            return None;
        }
        bytes = &rest[digits..];
        groups += 1;
    }
    (groups > 0).then_some(bytes)
}

/// ```text
/// [-+]?0b[0-1_]+
/// |[-+]?0[0-7_]+
/// |[-+]?(?:0|[1-9][0-9_]*)
/// |[-+]?0x[0-9a-fA-F_]+
/// |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
/// ```
fn is_int(text: &str) -> bool {
    let bytes = strip_sign(text).as_bytes();
    let all = |rest: &[u8], allowed: fn(u8) -> bool| {
        !rest.is_empty() && rest.iter().all(|byte| allowed(*byte))
    };
    match bytes {
        [b'0'] => true,
        [b'0', b'b', rest @ ..] => all(rest, |byte| matches!(byte, b'0' | b'1' | b'_')),
        [b'0', b'x', rest @ ..] => all(rest, |byte| byte.is_ascii_hexdigit() || byte == b'_'),
        [b'0', rest @ ..] => all(rest, |byte| matches!(byte, b'0'..=b'7' | b'_')),
        [b'1'..=b'9', rest @ ..] => {
            let digits = count_while(rest, |byte| byte.is_ascii_digit() || byte == b'_');
            let after = &rest[digits..];
            after.is_empty() || sexagesimal_groups(after).is_some_and(<[u8]>::is_empty)
        }
        _ => false,
    }
}

/// ```text
/// [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]
/// |[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?
///  (?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?
///  (?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?
/// ```
fn is_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let date_only = bytes.len() == 10
        && bytes.iter().enumerate().all(|(index, byte)| {
            if index == 4 || index == 7 {
                *byte == b'-'
            } else {
                byte.is_ascii_digit()
            }
        });
    date_only || is_datetime(bytes)
}

fn is_datetime(bytes: &[u8]) -> bool {
    let mut rest = bytes;
    let take_digits = |rest: &mut &[u8], minimum: usize, maximum: usize| {
        let count = count_while(rest, |byte| byte.is_ascii_digit()).min(maximum);
        *rest = &rest[count..];
        count >= minimum
    };
    let take = |rest: &mut &[u8], byte: u8| {
        let found = rest.first() == Some(&byte);
        if found {
            *rest = &rest[1..];
        }
        found
    };
    if !(take_digits(&mut rest, 4, 4)
        && take(&mut rest, b'-')
        && take_digits(&mut rest, 1, 2)
        && take(&mut rest, b'-')
        && take_digits(&mut rest, 1, 2))
    {
        return false;
    }
    let blanks = count_while(rest, |byte| byte == b' ' || byte == b'\t');
    if blanks > 0 {
        rest = &rest[blanks..];
    } else if !(take(&mut rest, b'T') || take(&mut rest, b't')) {
        return false;
    }
    if !(take_digits(&mut rest, 1, 2)
        && take(&mut rest, b':')
        && take_digits(&mut rest, 2, 2)
        && take(&mut rest, b':')
        && take_digits(&mut rest, 2, 2))
    {
        return false;
    }
    if take(&mut rest, b'.') {
        rest = &rest[count_while(rest, |byte| byte.is_ascii_digit())..];
    }
    rest = &rest[count_while(rest, |byte| byte == b' ' || byte == b'\t')..];
    match rest {
        [] | [b'Z'] => true,
        [b'-' | b'+', zone @ ..] => {
            let mut zone = zone;
            take_digits(&mut zone, 1, 2)
                && (zone.is_empty()
                    || (take(&mut zone, b':') && take_digits(&mut zone, 2, 2) && zone.is_empty()))
        }
        _ => false,
    }
}

fn strip_sign(text: &str) -> &str {
    text.strip_prefix(['-', '+']).unwrap_or(text)
}

fn count_while(bytes: &[u8], predicate: impl Fn(u8) -> bool) -> usize {
    bytes.iter().take_while(|byte| predicate(**byte)).count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tags(texts: &[&str]) -> Vec<Tag> {
        texts.iter().map(|text| resolve_plain(text)).collect()
    }

    #[test]
    fn resolves_yaml_1_1_booleans_but_not_y_and_n() {
        for text in [
            "yes", "Yes", "YES", "no", "NO", "on", "On", "OFF", "true", "False", "TRUE",
        ] {
            assert_eq!(resolve_plain(text), Tag::Bool, "{text}");
        }
        for text in ["y", "n", "Y", "N", "yES", "tRUE", "oN"] {
            assert_eq!(resolve_plain(text), Tag::Str, "{text}");
        }
    }

    #[test]
    fn resolves_nulls() {
        assert_eq!(tags(&["", "~", "null", "Null", "NULL"]), vec![Tag::Null; 5]);
        assert_eq!(tags(&["nULL", "none", "None"]), vec![Tag::Str; 3]);
    }

    #[test]
    fn resolves_integers_in_every_base() {
        let ints = [
            "0",
            "-0",
            "+12",
            "1_000",
            "010",
            "0_7",
            "0b1010",
            "-0b1_0",
            "0x1F",
            "0x_a",
            "1:30",
            "-190:20:30",
            "0_",
        ];
        for text in ints {
            assert_eq!(resolve_plain(text), Tag::Int, "{text}");
        }
        let strings = [
            "08", "0o10", "0B1", "0X1", "1:60", "0:30", "1:3:", "_1", "+", "1e3", "0b", "1:123",
        ];
        for text in strings {
            assert_eq!(resolve_plain(text), Tag::Str, "{text}");
        }
    }

    #[test]
    fn resolves_floats_with_a_dot_and_signed_exponent_only() {
        let floats = [
            "1.",
            ".5",
            "1.50",
            "-1.0",
            "+1.0e+3",
            "1_0.5",
            "6.8523015e+5",
            "190:20:30.15",
            ".inf",
            "-.Inf",
            "+.INF",
            ".nan",
            ".NaN",
            "1.e-2",
            "1._",
        ];
        for text in floats {
            assert_eq!(resolve_plain(text), Tag::Float, "{text}");
        }
        let strings = [
            "1e3", "1.0e3", "1.0E+", ".", "-.5", "._5", "-.nan", ".Nan", "inf", "1.5.5",
        ];
        for text in strings {
            assert_ne!(resolve_plain(text), Tag::Float, "{text}");
        }
        assert_eq!(resolve_plain("1:30."), Tag::Float);
    }

    #[test]
    fn resolves_timestamps() {
        let stamps = [
            "2024-01-01",
            "2001-12-14t21:59:43.10-05:00",
            "2001-12-14 21:59:43.10 Z",
            "2001-1-1 1:00:00",
            "2001-12-14T21:59:43+5",
            "2001-12-14\t21:59:43",
        ];
        for text in stamps {
            assert_eq!(resolve_plain(text), Tag::Timestamp, "{text}");
        }
        let strings = [
            "2024-1-01",
            "2024-01-01T",
            "2001-12-14 21:59",
            "2001-12-14 21:59:43 +05:0",
            "20240-01-01",
        ];
        for text in strings {
            assert_eq!(resolve_plain(text), Tag::Str, "{text}");
        }
    }

    #[test]
    fn resolves_merge_and_value_indicators() {
        assert_eq!(
            tags(&["<<", "=", "<", "=="]),
            vec![Tag::Merge, Tag::Value, Tag::Str, Tag::Str]
        );
    }
}
