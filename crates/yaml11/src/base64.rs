//! Base64 decoding as Python's `base64.decodebytes` does it, which `!!binary` uses.
//!
//! Python's decoder is lenient: it skips characters outside the alphabet (line breaks,
//! spaces, anything else), stops at the first complete padding, and only fails on a
//! truncated final group.

/// Decodes `text` like `binascii.a2b_base64` in its default, non-strict mode.
pub(crate) fn decode_lenient(text: &[u8]) -> Result<Vec<u8>, String> {
    let mut output = Vec::with_capacity(text.len() / 4 * 3);
    let mut quad_position = 0_u8;
    let mut left = 0_u8;
    let mut pads = 0_u8;
    for &byte in text {
        if byte == b'=' {
            pads += 1;
            if quad_position >= 2 && quad_position + pads >= 4 {
                return Ok(output);
            }
            continue;
        }
        let Some(sextet) = sextet(byte) else {
            continue;
        };
        pads = 0;
        match quad_position {
            0 => {
                left = sextet;
                quad_position = 1;
            }
            1 => {
                output.push((left << 2) | (sextet >> 4));
                left = sextet & 0x0f;
                quad_position = 2;
            }
            2 => {
                output.push((left << 4) | (sextet >> 2));
                left = sextet & 0x03;
                quad_position = 3;
            }
            _ => {
                output.push((left << 6) | sextet);
                quad_position = 0;
            }
        }
    }
    match quad_position {
        0 => Ok(output),
        1 => Err(format!(
            "Invalid base64-encoded string: number of data characters ({}) cannot be 1 more than a multiple of 4",
            output.len() / 3 * 4 + 1
        )),
        _ => Err("Incorrect padding".to_owned()),
    }
}

fn sextet(byte: u8) -> Option<u8> {
    match byte {
        b'A'..=b'Z' => Some(byte - b'A'),
        b'a'..=b'z' => Some(byte - b'a' + 26),
        b'0'..=b'9' => Some(byte - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_like_python() {
        assert_eq!(decode_lenient(b"aGVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(decode_lenient(b"aGVs\n bG8=\n"), Ok(b"hello".to_vec()));
        assert_eq!(decode_lenient(b"aGVsbG8=trailing"), Ok(b"hello".to_vec()));
        assert_eq!(decode_lenient(b"!a@GVsbG8="), Ok(b"hello".to_vec()));
        assert_eq!(decode_lenient(b""), Ok(Vec::new()));
        assert_eq!(
            decode_lenient(b"aGVsbG8"),
            Err("Incorrect padding".to_owned())
        );
        assert!(
            decode_lenient(b"aGVsb").is_err_and(|message| message.contains("cannot be 1 more"))
        );
    }
}
