//! Upstream's normalised resource texts: memory as `X.YYYGi`, byte counts and CPU as Python float strings.
//!
//! The jobs-api turns quantities into floats and writes them back with Python's `str()`: `3G` becomes the memory
//! limit `2.794Gi` and the request `1500017328.128`, `500m` CPU becomes `0.5`. We compute the same texts with exact
//! integer arithmetic (nano-units from [`Quantity`]), which agrees with Python's shortest float repr for every value
//! with at most 15 significant digits, i.e. every realistic resource value.

use crate::config::quantity::Quantity;

const NANOS_PER_UNIT: i128 = 1_000_000_000;
const BYTES_PER_GI: i128 = 1 << 30;
/// Nano-bytes per thousandth of a GiB: the unit of the rounded memory value.
const NANOS_PER_MILLI_GI: i128 = BYTES_PER_GI * NANOS_PER_UNIT / 1000;
/// Up to 512Mi the request equals the limit; above it, upstream requests half.
const FULL_REQUEST_MAX_MILLI_GI: i128 = 500;

/// A memory amount rounded, as upstream does, to thousandths of a GiB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Memory {
    milli_gi: i128,
}

impl Memory {
    pub(crate) fn of(quantity: &Quantity) -> Self {
        Self {
            milli_gi: divide_rounding_half_even(quantity.nanos(), NANOS_PER_MILLI_GI),
        }
    }

    /// The limit text and the canonical job's `mem`: `0.5Gi`, `1.0Gi`, `2.794Gi`.
    pub(crate) fn limit_text(self) -> String {
        format!("{}Gi", python_float_text(self.milli_gi, 3))
    }

    /// The request text: bytes as a Python float string, the whole limit up to 512Mi and half of it above.
    pub(crate) fn request_text(self) -> String {
        let milli_bytes = self.milli_gi * BYTES_PER_GI;
        let requested = if self.milli_gi > FULL_REQUEST_MAX_MILLI_GI {
            // `milli_gi * 2^30` is even, so halving is exact.
            milli_bytes / 2
        } else {
            milli_bytes
        };
        python_float_text(requested, 3)
    }
}

/// CPU as upstream writes it: a decimal number of cores, `0.1`, `0.5`, `1.0`.
pub(crate) fn cpu_text(quantity: &Quantity) -> String {
    python_float_text(quantity.nanos(), 9)
}

/// `value / 10^decimals` written like Python's `str(float)`: no trailing zeros, but at least one decimal.
fn python_float_text(value: i128, decimals: u32) -> String {
    let scale = 10_i128.pow(decimals);
    let sign = if value < 0 { "-" } else { "" };
    let magnitude = value.unsigned_abs();
    let scale = scale.unsigned_abs();
    let whole = magnitude / scale;
    let fraction = format!("{:0width$}", magnitude % scale, width = decimals as usize);
    let fraction = fraction.trim_end_matches('0');
    let fraction = if fraction.is_empty() { "0" } else { fraction };
    format!("{sign}{whole}.{fraction}")
}

/// `numerator / denominator` rounded to the nearest integer, ties to even, as Python's `round()`.
fn divide_rounding_half_even(numerator: i128, denominator: i128) -> i128 {
    let quotient = numerator.div_euclid(denominator);
    let twice_remainder = 2 * numerator.rem_euclid(denominator);
    if twice_remainder > denominator || (twice_remainder == denominator && quotient % 2 != 0) {
        quotient + 1
    } else {
        quotient
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(text: &str) -> Memory {
        Memory::of(&Quantity::parse(text).unwrap())
    }

    #[test]
    fn memory_limits_are_gibibytes_with_three_decimals() {
        for (written, limit) in [
            ("512Mi", "0.5Gi"),
            ("1Gi", "1.0Gi"),
            ("1024Mi", "1.0Gi"),
            ("1.5Gi", "1.5Gi"),
            ("3G", "2.794Gi"),
            ("100Mi", "0.098Gi"),
            ("8Gi", "8.0Gi"),
        ] {
            assert_eq!(memory(written).limit_text(), limit, "{written}");
        }
    }

    #[test]
    fn memory_requests_are_bytes_and_halved_above_512_mebibytes() {
        for (written, request) in [
            ("512Mi", "536870912.0"),
            ("256Mi", "268435456.0"),
            ("1Gi", "536870912.0"),
            ("3G", "1500017328.128"),
            ("1.5Gi", "805306368.0"),
        ] {
            assert_eq!(memory(written).request_text(), request, "{written}");
        }
    }

    #[test]
    fn rounding_ties_go_to_even_like_python() {
        // 0.0625Gi is exactly halfway between 0.062 and 0.063.
        assert_eq!(memory("64Mi").limit_text(), "0.062Gi");
        assert_eq!(divide_rounding_half_even(3, 2), 2);
        assert_eq!(divide_rounding_half_even(5, 2), 2);
        assert_eq!(divide_rounding_half_even(7, 4), 2);
    }

    #[test]
    fn cpu_is_a_decimal_number_of_cores() {
        for (written, text) in [
            ("100m", "0.1"),
            ("500m", "0.5"),
            ("1", "1.0"),
            ("1.0", "1.0"),
            ("0.5", "0.5"),
            ("1500m", "1.5"),
            ("2", "2.0"),
            ("1m", "0.001"),
        ] {
            assert_eq!(
                cpu_text(&Quantity::parse(written).unwrap()),
                text,
                "{written}"
            );
        }
    }
}
