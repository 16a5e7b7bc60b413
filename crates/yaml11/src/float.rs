//! Python's `float(text)` and `repr(float)`, which `str()` of a float also uses.
//!
//! Rust's `{:e}` formatting already yields the shortest digits that round-trip, as Python's
//! repr does; only the layout differs: Python writes plain decimals for exponents from -4 to
//! 15 (`0.0001`, `1e+16`, `1e-05`) and always shows a fractional part (`1.0`).

/// Python's `repr()` of a float: `1.0`, `0.5`, `1e+16`, `1e-05`, `inf`, `-inf`, `nan`.
#[must_use]
pub fn python_repr(value: f64) -> String {
    if value.is_nan() {
        return "nan".to_owned();
    }
    if value.is_infinite() {
        return if value > 0.0 { "inf" } else { "-inf" }.to_owned();
    }
    let scientific = format!("{value:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..16).contains(&exponent) {
        let point = exponent + 1;
        let text = if point <= 0 {
            let zeros = usize::try_from(-point).unwrap_or(0);
            format!("0.{}{digits}", "0".repeat(zeros))
        } else {
            let point = usize::try_from(point).unwrap_or(0);
            if digits.len() <= point {
                format!("{digits}{}.0", "0".repeat(point - digits.len()))
            } else {
                format!("{}.{}", &digits[..point], &digits[point..])
            }
        };
        format!("{sign}{text}")
    } else {
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!("{sign}{mantissa}e{exponent_sign}{:02}", exponent.abs())
    }
}

/// Python's `float(text)`: surrounding whitespace, a sign, `inf`, `infinity` and `nan` in any
/// case, and decimal or exponent notation. PyYAML removes underscores before calling it.
pub(crate) fn parse_python_float(text: &str) -> Option<f64> {
    let trimmed = text.trim_matches(char::is_whitespace);
    // Once whitespace is trimmed, Rust's grammar is Python's: both take signs, "1.", ".5",
    // exponents and the case-insensitive words "inf", "infinity" and "nan".
    trimmed.parse::<f64>().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repr_matches_python() {
        let cases = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (-0.0, "-0.0"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (685_230.15, "685230.15"),
            (1e300 * 10.0, "1e+301"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::INFINITY, "inf"),
            (f64::NEG_INFINITY, "-inf"),
            (f64::NAN, "nan"),
            (-2.5e-5, "-2.5e-05"),
        ];
        for (value, expected) in cases {
            assert_eq!(python_repr(value), expected, "repr of {value:e}");
        }
    }

    #[test]
    fn parses_like_python_float() {
        assert_eq!(parse_python_float(" 1e3 "), Some(1000.0));
        assert_eq!(parse_python_float("1."), Some(1.0));
        assert_eq!(parse_python_float(".5"), Some(0.5));
        assert_eq!(parse_python_float("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(parse_python_float("nan").is_some_and(f64::is_nan));
        assert_eq!(parse_python_float("."), None);
        assert_eq!(parse_python_float("1e"), None);
        assert_eq!(parse_python_float(""), None);
    }
}
