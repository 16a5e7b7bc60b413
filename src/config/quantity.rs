//! Kubernetes resource quantities (`512Mi`, `0.5`, `100m`, `3G`, `1e3`), parsed exactly.
//!
//! Values are kept as integer nano-units so that `1Gi`, `1024Mi` and `1073741824` compare equal and no float
//! rounding creeps into the canonical job. Formatting into upstream's normalised forms belongs to rendering.

use std::fmt;

/// A parsed quantity: the text as written plus its exact value in nano-units.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quantity {
    text: String,
    nanos: i128,
}

/// Why a text is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("`{0}` is not a quantity")]
    Syntax(String),
    #[error("`{0}` is too large")]
    TooLarge(String),
}

const NANOS_PER_UNIT: i128 = 1_000_000_000;

impl Quantity {
    /// Parses the Kubernetes quantity grammar: a signed decimal number followed by a binary suffix
    /// (`Ki`…`Ei`), a decimal suffix (`n`, `u`, `m`, `k`, `M`…`E`) or an exponent (`e3`, `E-2`).
    pub fn parse(text: &str) -> Result<Self, QuantityError> {
        let syntax = || QuantityError::Syntax(text.to_owned());
        let too_large = || QuantityError::TooLarge(text.to_owned());

        let (negative, unsigned) = match text.as_bytes().first() {
            Some(b'-') => (true, &text[1..]),
            Some(b'+') => (false, &text[1..]),
            _ => (false, text),
        };
        let number_end = unsigned
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(unsigned.len());
        let (number, suffix) = unsigned.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if (whole.is_empty() && fraction.is_empty()) || fraction.contains('.') {
            return Err(syntax());
        }

        let (multiplier, divisor_exponent) = suffix_scale(suffix).ok_or_else(syntax)?;
        // value = (whole.fraction) * multiplier * 10^-divisor_exponent, computed in nano-units.
        let digits = format!("{whole}{fraction}");
        let mut mantissa: i128 = 0;
        for digit in digits.bytes() {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|m| m.checked_add(i128::from(digit - b'0')))
                .ok_or_else(too_large)?;
        }
        let scale = i32::try_from(fraction.len()).map_err(|_| too_large())? + divisor_exponent;
        let mut nanos = mantissa.checked_mul(multiplier).ok_or_else(too_large)?;
        // Bring 10^-scale into nano-units (10^-9): multiply by 10^(9 - scale), truncating sub-nano digits.
        let shift = 9 - scale;
        if shift >= 0 {
            let factor = 10_i128
                .checked_pow(shift.unsigned_abs())
                .ok_or_else(too_large)?;
            nanos = nanos.checked_mul(factor).ok_or_else(too_large)?;
        } else {
            nanos = 10_i128
                .checked_pow(shift.unsigned_abs())
                .map_or(0, |factor| nanos / factor);
        }
        Ok(Self {
            text: text.to_owned(),
            nanos: if negative { -nanos } else { nanos },
        })
    }

    /// The text as the user wrote it.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The exact value in units of 10⁻⁹ (bytes for memory, cores for CPU).
    pub fn nanos(&self) -> i128 {
        self.nanos
    }

    pub fn is_positive(&self) -> bool {
        self.nanos > 0
    }

    /// The value as a float, for upstream's float-based normalisation.
    #[expect(
        clippy::cast_precision_loss,
        reason = "upstream normalises through floats as well"
    )]
    pub fn to_f64(&self) -> f64 {
        self.nanos as f64 / NANOS_PER_UNIT as f64
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The integer multiplier and the power of ten to divide by that a suffix stands for.
fn suffix_scale(suffix: &str) -> Option<(i128, i32)> {
    let binary = |power: u32| Some((1_i128 << (10 * power), 0));
    // `None` for exponents whose power does not fit: such quantities are far beyond any machine anyway.
    let decimal = |exponent: i32| {
        if exponent >= 0 {
            Some((10_i128.checked_pow(exponent.unsigned_abs())?, 0))
        } else {
            Some((1, -exponent))
        }
    };
    match suffix {
        "" => decimal(0),
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        _ => {
            let exponent = suffix.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.len() > 3
            {
                return None;
            }
            decimal(exponent.parse().ok()?)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(text: &str) -> i128 {
        Quantity::parse(text).unwrap().nanos()
    }

    #[test]
    fn binary_suffixes_are_powers_of_1024() {
        assert_eq!(nanos("1Ki"), 1024 * NANOS_PER_UNIT);
        assert_eq!(nanos("512Mi"), 512 * 1024 * 1024 * NANOS_PER_UNIT);
        assert_eq!(nanos("1.5Gi"), 3 * 512 * 1024 * 1024 * NANOS_PER_UNIT);
        assert_eq!(nanos("1Gi"), nanos("1024Mi"));
    }

    #[test]
    fn decimal_suffixes_and_plain_numbers() {
        assert_eq!(nanos("100m"), NANOS_PER_UNIT / 10);
        assert_eq!(nanos("0.1"), nanos("100m"));
        assert_eq!(nanos("1"), NANOS_PER_UNIT);
        assert_eq!(nanos("1.0"), NANOS_PER_UNIT);
        assert_eq!(nanos(".5"), NANOS_PER_UNIT / 2);
        assert_eq!(nanos("3G"), 3_000_000_000 * NANOS_PER_UNIT);
        assert_eq!(nanos("1e3"), 1000 * NANOS_PER_UNIT);
        assert_eq!(nanos("5E-1"), NANOS_PER_UNIT / 2);
        assert_eq!(nanos("250u"), 250_000);
    }

    #[test]
    fn signs_are_kept() {
        assert_eq!(nanos("-1"), -NANOS_PER_UNIT);
        assert!(!Quantity::parse("0").unwrap().is_positive());
        assert!(Quantity::parse("+2").unwrap().is_positive());
    }

    #[test]
    fn rejects_what_kubernetes_rejects() {
        for text in [
            "", "Gi", "1GB", "1 Gi", "one", "1.2.3", "1gi", "0x10", "1e", ".", "1e1000", "--1",
        ] {
            assert!(
                Quantity::parse(text).is_err(),
                "{text:?} should be rejected"
            );
        }
    }

    #[test]
    fn huge_exponents_are_errors_not_panics() {
        for text in ["1e39", "1e400", "1E999", "9e38"] {
            assert!(
                Quantity::parse(text).is_err(),
                "{text:?} should be rejected"
            );
        }
    }

    #[test]
    fn huge_values_are_errors_not_overflows() {
        assert_eq!(
            Quantity::parse("99999999999999999999999999999999999Ei"),
            Err(QuantityError::TooLarge(
                "99999999999999999999999999999999999Ei".into()
            ))
        );
    }
}
