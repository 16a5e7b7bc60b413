//! Arbitrary-precision integers as Python's `int` holds them, and Python's `int(text, base)`.
//!
//! jobs.yaml values are small, so [`Integer`] keeps an `i128` and falls back to the decimal text
//! only for values outside it. Parsing follows `CPython`'s rules, including its limit of 4300
//! decimal digits (Python raises `ValueError` beyond it); values that only power-of-two bases
//! can reach past that limit are refused too, because Python could not print them.

use std::fmt::{self, Write as _};

/// Python's default `sys.get_int_max_str_digits()`.
pub(crate) const MAX_DECIMAL_DIGITS: usize = 4300;

/// An integer of any size, like Python's `int`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Integer(Repr);

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Repr {
    Small(i128),
    /// Invariant: the value is outside the `i128` range; `digits` has no sign or leading zero.
    Big {
        negative: bool,
        digits: String,
    },
}

impl Integer {
    /// The value as an `i64`, if it fits.
    #[must_use]
    pub fn to_i64(&self) -> Option<i64> {
        self.to_i128().and_then(|value| i64::try_from(value).ok())
    }

    /// The value as an `i128`, if it fits.
    #[must_use]
    pub fn to_i128(&self) -> Option<i128> {
        match &self.0 {
            Repr::Small(value) => Some(*value),
            Repr::Big { .. } => None,
        }
    }

    /// Converts to the nearest float, as Python's `float(int)` would (huge values become infinite).
    #[must_use]
    #[expect(clippy::cast_precision_loss, reason = "rounding is what float() does")]
    pub fn to_f64(&self) -> f64 {
        match &self.0 {
            Repr::Small(value) => *value as f64,
            Repr::Big { negative, digits } => {
                let magnitude = digits.parse::<f64>().unwrap_or(f64::INFINITY);
                if *negative { -magnitude } else { magnitude }
            }
        }
    }

    /// The value with the opposite sign.
    pub(crate) fn negated(&self) -> Self {
        match &self.0 {
            Repr::Small(value) => match value.checked_neg() {
                Some(negated) => Self(Repr::Small(negated)),
                None => Self(Repr::Big {
                    negative: false,
                    digits: value.unsigned_abs().to_string(),
                }),
            },
            Repr::Big { negative, digits } => {
                let flipped = if *negative {
                    digits.clone()
                } else {
                    format!("-{digits}")
                };
                // -(i128::MAX + 1) is i128::MIN, the one big value whose negation is small.
                match flipped.parse::<i128>() {
                    Ok(value) => Self(Repr::Small(value)),
                    Err(_) => Self(Repr::Big {
                        negative: !negative,
                        digits: digits.clone(),
                    }),
                }
            }
        }
    }

    fn from_magnitude(negative: bool, magnitude: &BigUnsigned) -> Self {
        let digits = magnitude.to_decimal();
        let signed = if negative {
            format!("-{digits}")
        } else {
            digits.clone()
        };
        match signed.parse::<i128>() {
            Ok(value) => Self(Repr::Small(value)),
            Err(_) => Self(Repr::Big { negative, digits }),
        }
    }
}

impl From<i128> for Integer {
    fn from(value: i128) -> Self {
        Self(Repr::Small(value))
    }
}

impl From<i64> for Integer {
    fn from(value: i64) -> Self {
        Self(Repr::Small(i128::from(value)))
    }
}

impl fmt::Display for Integer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Small(value) => write!(formatter, "{value}"),
            Repr::Big { negative, digits } => {
                write!(formatter, "{}{digits}", if *negative { "-" } else { "" })
            }
        }
    }
}

/// Why Python's `int()` refused a text; the message is Python's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct IntegerError(pub(crate) String);

/// Python's `int(text, base)` for bases 2, 8, 10 and 16 (ASCII digits only).
pub(crate) fn parse_python_int(text: &str, base: u32) -> Result<Integer, IntegerError> {
    let invalid = || {
        IntegerError(format!(
            "invalid literal for int() with base {base}: {}",
            python_repr(text)
        ))
    };
    let trimmed = text.trim_matches(char::is_whitespace);
    let (negative, unsigned) = match trimmed.as_bytes().first() {
        Some(b'-') => (true, &trimmed[1..]),
        Some(b'+') => (false, &trimmed[1..]),
        _ => (false, trimmed),
    };
    let prefix = match base {
        2 => Some("0b"),
        8 => Some("0o"),
        16 => Some("0x"),
        _ => None,
    };
    let mut body = unsigned;
    let mut after_prefix = false;
    if let Some(prefix) = prefix
        && body.len() >= 2
        && body.as_bytes()[..2].eq_ignore_ascii_case(prefix.as_bytes())
    {
        body = &body[2..];
        after_prefix = true;
    }
    // Python allows single underscores between digits, and one right after a base prefix.
    let mut digits = Vec::with_capacity(body.len());
    let mut previous_underscore = !after_prefix;
    for character in body.chars() {
        if character == '_' {
            if previous_underscore {
                return Err(invalid());
            }
            previous_underscore = true;
            continue;
        }
        let digit = character.to_digit(base).ok_or_else(invalid)?;
        digits.push(u8::try_from(digit).map_err(|_| invalid())?);
        previous_underscore = false;
    }
    if digits.is_empty() || previous_underscore {
        return Err(invalid());
    }
    if base == 10 && digits.len() > MAX_DECIMAL_DIGITS {
        return Err(IntegerError(format!(
            "Exceeds the limit ({MAX_DECIMAL_DIGITS} digits) for integer string conversion: value has {} digits",
            digits.len()
        )));
    }
    // Digits go in by chunks whose value fits a `u32` (base^chunk < 2^32), which keeps long
    // hexadecimal and binary literals linear per limb instead of per digit.
    let chunk = match base {
        2 => 31,
        8 => 10,
        16 => 7,
        _ => 9,
    };
    let mut magnitude = BigUnsigned::default();
    for group in digits.chunks(chunk) {
        let value = group
            .iter()
            .fold(0_u32, |value, digit| value * base + u32::from(*digit));
        let factor = (0..group.len()).fold(1_u32, |factor, _| factor * base);
        magnitude.multiply_add(factor, value);
        if magnitude.exceeds_printable() {
            return Err(too_large());
        }
    }
    Ok(Integer::from_magnitude(negative, &magnitude))
}

/// Combines base-60 parts (`1:30` is 90), as PyYAML's sexagesimal integers do.
pub(crate) fn sexagesimal(negative: bool, parts: &[Integer]) -> Result<Integer, IntegerError> {
    if let Some(small) = parts
        .iter()
        .map(Integer::to_i128)
        .collect::<Option<Vec<_>>>()
        && let Some(value) = small.iter().try_fold(0_i128, |total, part| {
            total.checked_mul(60)?.checked_add(*part)
        })
    {
        return Ok(Integer::from(if negative { -value } else { value }));
    }
    // Large values: only non-negative parts can be combined without signed big arithmetic;
    // a signed part inside a huge sexagesimal number never occurs outside of fuzzing.
    let mut magnitude = BigUnsigned::default();
    for part in parts {
        let digits = part.to_string();
        if digits.starts_with('-') {
            return Err(too_large());
        }
        magnitude.multiply_add(60, 0);
        let mut part_value = BigUnsigned::default();
        for digit in digits.bytes() {
            part_value.multiply_add(10, u32::from(digit.saturating_sub(b'0')));
        }
        magnitude.add(&part_value);
        if magnitude.exceeds_printable() {
            return Err(too_large());
        }
    }
    Ok(Integer::from_magnitude(negative, &magnitude))
}

fn too_large() -> IntegerError {
    IntegerError(format!(
        "integer too large: it has more than {MAX_DECIMAL_DIGITS} decimal digits"
    ))
}

/// Python's `repr()` of a string, for error messages.
pub(crate) fn python_repr(text: &str) -> String {
    let quote = if text.contains('\'') && !text.contains('"') {
        '"'
    } else {
        '\''
    };
    let mut out = String::with_capacity(text.len() + 2);
    out.push(quote);
    for character in text.chars() {
        match character {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

/// A non-negative integer in base 10^9 limbs, least significant first; just enough arithmetic
/// to turn long digit strings into decimal text.
#[derive(Clone, Debug, Default)]
struct BigUnsigned {
    limbs: Vec<u32>,
}

const LIMB_BASE: u64 = 1_000_000_000;

impl BigUnsigned {
    fn multiply_add(&mut self, factor: u32, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.limbs {
            let value = u64::from(*limb) * u64::from(factor) + carry;
            *limb = limb_of(value);
            carry = value / LIMB_BASE;
        }
        while carry > 0 {
            self.limbs.push(limb_of(carry));
            carry /= LIMB_BASE;
        }
    }

    fn add(&mut self, other: &Self) {
        let mut carry = 0_u64;
        for index in 0..self.limbs.len().max(other.limbs.len()) {
            let value = u64::from(self.limbs.get(index).copied().unwrap_or(0))
                + u64::from(other.limbs.get(index).copied().unwrap_or(0))
                + carry;
            if index < self.limbs.len() {
                self.limbs[index] = limb_of(value);
            } else {
                self.limbs.push(limb_of(value));
            }
            carry = value / LIMB_BASE;
        }
        if carry > 0 {
            self.limbs.push(limb_of(carry));
        }
    }

    /// Whether the decimal form would pass Python's printing limit (checked per limb, cheaply).
    fn exceeds_printable(&self) -> bool {
        self.limbs.len() > MAX_DECIMAL_DIGITS / 9 + 1
    }

    fn to_decimal(&self) -> String {
        let Some((most, rest)) = self.limbs.split_last() else {
            return "0".to_owned();
        };
        let mut out = most.to_string();
        for limb in rest.iter().rev() {
            let _ = write!(out, "{limb:09}");
        }
        out
    }
}

/// Keeps the part of `value` below [`LIMB_BASE`], which always fits a `u32`.
fn limb_of(value: u64) -> u32 {
    // The remainder is below 10^9 < 2^32, so the conversion cannot fail.
    u32::try_from(value % LIMB_BASE).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str, base: u32) -> String {
        match parse_python_int(text, base) {
            Ok(value) => value.to_string(),
            Err(IntegerError(message)) => format!("error: {message}"),
        }
    }

    #[test]
    fn parses_like_python_int() {
        assert_eq!(parse("42", 10), "42");
        assert_eq!(parse(" -42\n", 10), "-42");
        assert_eq!(parse("010", 10), "10");
        assert_eq!(parse("0o17", 8), "15");
        assert_eq!(parse("17", 8), "15");
        assert_eq!(parse("1F", 16), "31");
        assert_eq!(parse("0x_1f", 16), "31");
        assert_eq!(parse("101", 2), "5");
        assert_eq!(
            parse("1__0", 10),
            "error: invalid literal for int() with base 10: '1__0'"
        );
        assert_eq!(
            parse("", 2),
            "error: invalid literal for int() with base 2: ''"
        );
        assert_eq!(
            parse("9", 8),
            "error: invalid literal for int() with base 8: '9'"
        );
    }

    #[test]
    fn keeps_values_beyond_i128_as_decimal_text() {
        let huge = "123456789012345678901234567890123456789012345";
        assert_eq!(parse(huge, 10), huge);
        assert_eq!(parse(&format!("-{huge}"), 10), format!("-{huge}"));
        assert_eq!(
            parse("f".repeat(40).as_str(), 16),
            "1461501637330902918203684832716283019655932542975"
        );
        assert_eq!(
            parse_python_int(huge, 10)
                .ok()
                .and_then(|value| value.to_i64()),
            None
        );
        assert_eq!(
            parse_python_int("-7", 10)
                .ok()
                .and_then(|value| value.to_i64()),
            Some(-7)
        );
    }

    #[test]
    fn refuses_more_digits_than_python_prints() {
        assert!(parse(&"1".repeat(4301), 10).starts_with("error: Exceeds the limit"));
        assert!(parse(&"1".repeat(4300), 10).starts_with('1'));
        assert!(parse(&"f".repeat(4000), 16).starts_with("error: integer too large"));
    }

    #[test]
    fn combines_sexagesimal_parts() {
        let parts = |values: &[i64]| {
            values
                .iter()
                .map(|value| Integer::from(*value))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            sexagesimal(false, &parts(&[1, 30])).map(|v| v.to_string()),
            Ok("90".to_owned())
        );
        assert_eq!(
            sexagesimal(true, &parts(&[190, 20, 30])).map(|v| v.to_string()),
            Ok("-685230".to_owned())
        );
        let big = parse_python_int(&format!("1{}", "0".repeat(40)), 10)
            .unwrap_or_else(|_| Integer::from(0_i64));
        let value = sexagesimal(false, &[big, Integer::from(7_i64)]).map(|v| v.to_string());
        assert_eq!(value, Ok(format!("6{}7", "0".repeat(40))));
        let forty_nines = vec![Integer::from(59_i64); 40];
        let sixty_to_the_forty_minus_one = sexagesimal(false, &forty_nines).map(|v| v.to_string());
        assert_eq!(
            sixty_to_the_forty_minus_one,
            Ok(
                "133674945388437340678388459765759999999999999999999999999999999999999999"
                    .to_owned()
            )
        );
    }
}
