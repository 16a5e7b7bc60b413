//! Property tests: `load` returns (a value or an error) on any input, without panicking.
//!
//! Arbitrary strings exercise the reader and scanner; "token soup" built from YAML's
//! indicators, tags, anchors and YAML 1.1 scalars reaches the composer and constructor far
//! more often than random text does.

use proptest::prelude::*;
use yaml11::{Limits, Node, Value, load};

const TOKENS: &[&str] = &[
    "- ",
    ": ",
    "? ",
    "[",
    "]",
    "{",
    "}",
    ", ",
    "&a ",
    "*a",
    "&b ",
    "*b ",
    "!!str ",
    "!!int ",
    "!!float ",
    "!!bool ",
    "!!null ",
    "!!binary ",
    "!!timestamp ",
    "!!set ",
    "!!omap ",
    "!!pairs ",
    "!!seq ",
    "!!map ",
    "!foo ",
    "! ",
    "<<",
    "<<: ",
    "=",
    "\n",
    "\n  ",
    "\n    ",
    "  ",
    "\t",
    "|\n",
    ">-\n",
    "'",
    "\"",
    "# c",
    "yes",
    "No",
    "010",
    "08",
    "1_000",
    "1:30",
    "190:20:30.15",
    "2024-01-01",
    "2001-12-14 21:59:43.10 -5",
    ".inf",
    "-.Inf",
    ".nan",
    "0x1F",
    "0b101",
    "1.5",
    "1e3",
    "1.0e+3",
    "~",
    "null",
    "---",
    "...",
    "%YAML 1.1\n",
    "\\",
    "\\u263A",
    "key",
    "value",
    "aGVsbG8=",
    "é",
    "\u{85}",
    "\u{feff}",
    "\r\n",
];

fn token_soup() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(TOKENS), 0..80).prop_map(|tokens| tokens.concat())
}

/// Walks the whole tree, so every value is built and every span is looked at.
fn visit(node: &Node, source: &str) -> usize {
    let _ = node.span.slice(source);
    let _ = node.value.python_str();
    let _ = node.value.type_name();
    1 + match &node.value {
        Value::Seq(items) => items.iter().map(|item| visit(item, source)).sum(),
        Value::Map(mapping) => {
            let _ = mapping.dict_entries();
            mapping
                .entries()
                .iter()
                .map(|(key, value)| visit(key, source) + visit(value, source))
                .sum()
        }
        _ => 0,
    }
}

fn check(source: &str, limits: &Limits) {
    match load(source, limits) {
        Ok(Some(node)) => {
            let _ = visit(&node, source);
        }
        Ok(None) => {}
        Err(error) => {
            let _ = error.to_string();
            assert!(error.span.start.line >= 1 && error.span.start.column >= 1);
            assert!(error.span.start.offset <= source.len());
        }
    }
}

// Number-like prefixes lead the text into the base and sign handling of the constructors.
const NUMBER_PREFIXES: &[&str] = &[
    "",
    "0",
    "0x",
    "0b",
    "-0",
    "+",
    "-",
    "1:",
    "1_",
    ".",
    "2024-01-01 ",
];

const TAGS: &[&str] = &[
    "!!int",
    "!!float",
    "!!bool",
    "!!null",
    "!!str",
    "!!binary",
    "!!timestamp",
    "!",
    "",
];

/// A printable text quoted for YAML, so it reaches the constructor of the tag before it.
fn tagged_scalar() -> impl Strategy<Value = String> {
    // Number-like prefixes lead the text into the base and sign handling of the constructors.
    (
        prop::sample::select(TAGS),
        prop::sample::select(NUMBER_PREFIXES),
        "\\PC{0,20}",
    )
        .prop_map(|(tag, prefix, text)| format!("{tag} '{prefix}{}'", text.replace('\'', "''")))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn arbitrary_text_never_panics(source in any::<String>()) {
        check(&source, &Limits::default());
    }

    #[test]
    fn token_soup_never_panics(source in token_soup()) {
        check(&source, &Limits::default());
    }

    #[test]
    fn tagged_arbitrary_text_never_panics(source in tagged_scalar()) {
        check(&source, &Limits::default());
    }

    #[test]
    fn token_soup_under_tight_limits_never_panics(source in token_soup()) {
        check(&source, &Limits { max_bytes: 200, max_depth: 3, max_nodes: 20 });
    }
}
