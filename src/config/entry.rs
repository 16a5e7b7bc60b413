//! Writing jobs.yaml entries (`run` and the jobs API's requests are checked as one, `dump` prints them): one `key: value` line per key,
//! strings quoted as JSON strings — valid YAML, and no value can change the document's structure — numbers and
//! booleans plain.

use std::fmt::Write as _;

/// A string value, quoted.
pub fn quoted(value: &str) -> String {
    serde_json::Value::from(value).to_string()
}

/// One list item of a jobs file: `- first: …` then the other keys indented.
pub fn entry(pairs: &[(&str, String)]) -> String {
    let mut text = String::new();
    for (index, (key, value)) in pairs.iter().enumerate() {
        let lead = if index == 0 { "- " } else { "  " };
        // Writing to a String cannot fail.
        let _ = writeln!(text, "{lead}{key}: {value}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_quote_strings() {
        let pairs = [("name", quoted("a: b")), ("retry", "2".to_owned())];
        assert_eq!(entry(&pairs), "- name: \"a: b\"\n  retry: 2\n");
    }
}
