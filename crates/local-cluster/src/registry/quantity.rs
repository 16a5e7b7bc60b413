//! Resource quantities (`cpu: 500m`, `memory: 1Gi`) are parsed and stored in their canonical form, as the API
//! server does (reference §2.2.1): a client reading an object back gets `512Mi` for `0.5Gi` and `1` for `1000m`.
//! `typed_json` canonicalises every `Quantity` field of a body as it is decoded. Values are kept exactly, in nano units, and rounded up to nano precision. [`Quantity`] adds and compares them
//! for LimitRange and ResourceQuota admission.

use serde_json::Value;

const REGEX: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";
const NANO: i128 = 1_000_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSi,
    BinarySi,
    DecimalExponent,
}

/// A parsed quantity: its exact value in nano units and the format its canonical text uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Quantity {
    nano: i128,
    format: Format,
}

impl Quantity {
    /// Zero, written `0`.
    pub(crate) const ZERO: Quantity = Quantity {
        nano: 0,
        format: Format::DecimalSi,
    };

    /// One object, as quota object counts charge it.
    pub(crate) const ONE: Quantity = Quantity {
        nano: NANO,
        format: Format::DecimalSi,
    };

    /// A quantity from its text (or a JSON number); `None` when invalid.
    pub(crate) fn from_value(value: &Value) -> Option<Quantity> {
        let (nano, format) = match value {
            Value::String(text) => parse(text.trim())?,
            Value::Number(number) => parse(&number.to_string())?,
            _ => return None,
        };
        Some(Quantity { nano, format })
    }

    /// The sum; a zero left side takes the right side's format, as `Quantity.Add` does.
    #[must_use]
    pub(crate) fn add(self, other: Quantity) -> Quantity {
        Quantity {
            nano: self.nano + other.nano,
            format: if self.nano == 0 {
                other.format
            } else {
                self.format
            },
        }
    }

    /// `count` times this quantity (a count of objects charged [`Quantity::ONE`] each).
    #[must_use]
    pub(crate) fn times(self, count: usize) -> Quantity {
        Quantity {
            nano: self.nano * i128::try_from(count).unwrap_or(i128::MAX),
            format: self.format,
        }
    }

    /// The larger of two, keeping the format of the one chosen (`self` on a tie).
    #[must_use]
    pub(crate) fn larger(self, other: Quantity) -> Quantity {
        if other.nano > self.nano { other } else { self }
    }

    /// The value in thousandths, rounded up (`MilliValue`).
    pub(crate) fn milli(self) -> i128 {
        ceil_div(self.nano, 1_000_000)
    }

    /// The value in units, rounded up (`Value`).
    pub(crate) fn units(self) -> i128 {
        ceil_div(self.nano, NANO)
    }
}

fn ceil_div(value: i128, divisor: i128) -> i128 {
    value.div_euclid(divisor) + i128::from(value.rem_euclid(divisor) != 0)
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.nano == other.nano
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.nano.cmp(&other.nano)
    }
}

impl std::fmt::Display for Quantity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&render(self.nano, self.format))
    }
}

/// The canonical text of a quantity, or the error message of an invalid one.
pub(crate) fn canonicalize(text: &str) -> Result<String, String> {
    let invalid = || format!("quantities must match the regular expression '{REGEX}'");
    let (nano, format) = parse(text.trim()).ok_or_else(invalid)?;
    Ok(render(nano, format))
}

fn parse(text: &str) -> Option<(i128, Format)> {
    let (negative, rest) = match text.as_bytes().first()? {
        b'-' => (true, &text[1..]),
        b'+' => (false, &text[1..]),
        _ => (false, text),
    };
    let split = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (number, suffix) = rest.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if (whole.is_empty() && fraction.is_empty())
        || fraction.contains('.')
        || whole.len() + fraction.len() > 30
    {
        return None;
    }
    let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
    let (format, multiplier, exponent): (Format, i128, i32) = match suffix {
        "" => (Format::DecimalSi, 1, 0),
        "n" => (Format::DecimalSi, 1, -9),
        "u" => (Format::DecimalSi, 1, -6),
        "m" => (Format::DecimalSi, 1, -3),
        "k" => (Format::DecimalSi, 1, 3),
        "M" => (Format::DecimalSi, 1, 6),
        "G" => (Format::DecimalSi, 1, 9),
        "T" => (Format::DecimalSi, 1, 12),
        "P" => (Format::DecimalSi, 1, 15),
        "E" => (Format::DecimalSi, 1, 18),
        "Ki" => (Format::BinarySi, 1 << 10, 0),
        "Mi" => (Format::BinarySi, 1 << 20, 0),
        "Gi" => (Format::BinarySi, 1 << 30, 0),
        "Ti" => (Format::BinarySi, 1 << 40, 0),
        "Pi" => (Format::BinarySi, 1 << 50, 0),
        "Ei" => (Format::BinarySi, 1 << 60, 0),
        other => {
            let exponent = other.strip_prefix(['e', 'E'])?;
            (Format::DecimalExponent, 1, exponent.parse().ok()?)
        }
    };
    let fraction_digits = i32::try_from(fraction.len()).ok()?;
    let power = exponent.checked_sub(fraction_digits)?.checked_add(9)?;
    let scaled = digits.checked_mul(multiplier)?;
    let magnitude = if power >= 0 {
        scaled.checked_mul(10_i128.checked_pow(power.unsigned_abs())?)?
    } else {
        let divisor = 10_i128.checked_pow(power.unsigned_abs())?;
        // Rounded up to nano precision, as the API server does.
        scaled.div_euclid(divisor) + i128::from(scaled.rem_euclid(divisor) != 0)
    };
    Some((if negative { -magnitude } else { magnitude }, format))
}

fn render(nano: i128, format: Format) -> String {
    if nano == 0 {
        return "0".to_owned();
    }
    if format == Format::BinarySi && nano % NANO == 0 && (nano / NANO).abs() >= 1024 {
        let mut value = nano / NANO;
        let mut power = 0;
        while power < 6 && value % 1024 == 0 {
            value /= 1024;
            power += 1;
        }
        return format!("{value}{}", ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power]);
    }
    let mut exponent: i32 = -9;
    let mut mantissa = nano;
    while exponent < 18 && mantissa % 1000 == 0 {
        mantissa /= 1000;
        exponent += 3;
    }
    let suffix = match (format, exponent) {
        (Format::DecimalExponent, 0) => String::new(),
        (Format::DecimalExponent, e) => format!("e{e}"),
        (_, e) => match e {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            0 => "",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            _ => "E",
        }
        .to_owned(),
    };
    format!("{mantissa}{suffix}")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn quantities_take_their_canonical_form() {
        let cases = [
            ("0.5Gi", "512Mi"),
            ("1.5Gi", "1536Mi"),
            ("1Gi", "1Gi"),
            ("1024Mi", "1Gi"),
            ("1.5Ki", "1536"),
            ("0.1", "100m"),
            ("0.5", "500m"),
            ("1.0", "1"),
            ("1000m", "1"),
            ("1500m", "1500m"),
            ("1.5", "1500m"),
            ("2000", "2k"),
            ("536870912.0", "536870912"),
            ("1500017328.128", "1500017328128m"),
            ("0", "0"),
            ("0.0001n", "1n"),
            ("100Mi", "100Mi"),
            ("250m", "250m"),
            ("1e3", "1e3"),
            ("1.5e3", "1500"),
            ("-1", "-1"),
        ];
        for (input, canonical) in cases {
            assert_eq!(canonicalize(input).as_deref(), Ok(canonical), "{input}");
        }
        for invalid in ["", "abc", "1..2", "1Xi", "--1", "1.2.3"] {
            assert!(canonicalize(invalid).is_err(), "{invalid}");
        }
    }

    #[test]
    fn sums_take_the_format_of_the_first_non_zero_term_and_compare_by_value() {
        let q = |text: &str| Quantity::from_value(&Value::from(text)).expect("valid");
        assert_eq!(
            Quantity::ZERO.add(q("512Mi")).add(q("512Mi")).to_string(),
            "1Gi"
        );
        assert_eq!(q("1").add(q("500m")).to_string(), "1500m");
        assert_eq!(q("100M").add(q("1Mi")).to_string(), "101048576");
        assert!(q("1Gi") > q("1G"));
        assert_eq!(q("1000m"), q("1"));
        assert_eq!(q("1n").milli(), 1, "rounded up");
        assert_eq!(q("1500m").units(), 2);
        assert_eq!(
            Quantity::from_value(&json!(2)).map(|q| q.to_string()),
            Some("2".into())
        );
    }
}
