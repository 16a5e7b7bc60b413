//! SHA-256 as lowercase hex, the one digest format of our annotations and inventory.

use sha2::{Digest, Sha256};

/// SHA-256 of the concatenation of `parts`, as 64 lowercase hex digits.
pub(crate) fn sha256_hex(parts: &[&[u8]]) -> String {
    hex(&sha256(parts))
}

pub(crate) fn sha256(parts: &[&[u8]]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part);
    }
    hasher.finalize().into()
}

/// Base64 with the URL-safe alphabet and no padding (RFC 4648 §5), as the `ApplySet` id needs.
pub(crate) fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let group = u32::from(b[0]) << 16 | u32::from(b[1]) << 8 | u32::from(b[2]);
        // A chunk of n bytes carries n + 1 significant six-bit digits.
        for index in 0..=chunk.len() {
            let digit = (group >> (18 - 6 * index)) & 0x3f;
            text.push(char::from(ALPHABET[digit as usize]));
        }
    }
    text
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_url_matches_rfc_4648_vectors() {
        for (input, encoded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64_url(input.as_bytes()), encoded);
        }
        assert_eq!(base64_url(&[0xfb, 0xff]), "-_8");
    }

    #[test]
    fn matches_the_published_sha256_test_vector() {
        assert_eq!(
            sha256_hex(&[b"ab", b"c"]),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
