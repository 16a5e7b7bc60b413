//! Differential test: this crate against PyYAML's `yaml.safe_load`, the behaviour it copies.
//!
//! Every corpus entry is loaded by both. PyYAML runs once, in a single `python3` process that
//! reads the corpus as JSON on stdin and prints one canonical line per entry; the same line
//! is rendered here from our `Node`. Errors must match by phase (syntax, composition,
//! construction) and, after parsing, by the position PyYAML reports. The test fails if
//! `python3` or PyYAML is missing: skipping would hide the very regressions it exists to catch.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

use yaml11::{ErrorKind, Limits, Node, Tag, Value, load};

const ORACLE: &str = r#"
import datetime, json, sys, yaml

def render(value):
    if value is None:
        return "null:None"
    if isinstance(value, bool):
        return "bool:" + str(value)
    if isinstance(value, int):
        return "int:" + str(value)
    if isinstance(value, float):
        return "float:" + repr(value)
    if isinstance(value, str):
        return "str:" + json.dumps(value)
    if isinstance(value, bytes):
        return "binary:" + json.dumps(str(value))
    if isinstance(value, (datetime.date, datetime.datetime)):
        return "timestamp:" + str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render(item) for item in value) + "]"
    if isinstance(value, set):
        return "set{" + ", ".join(sorted(render(item) for item in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(render(k) + ": " + render(v) for k, v in value.items()) + "}"
    return "unknown:" + type(value).__name__

def phase(error):
    if isinstance(error, (yaml.scanner.ScannerError, yaml.parser.ParserError, yaml.reader.ReaderError)):
        return "syntax"
    if isinstance(error, yaml.composer.ComposerError):
        return "compose"
    return "construct"

for source in json.load(sys.stdin):
    try:
        line = render(yaml.safe_load(source))
    except Exception as error:
        line = "error:" + phase(error)
        mark = getattr(error, "problem_mark", None)
        if mark is not None and phase(error) != "syntax":
            line += "@%d:%d" % (mark.line + 1, mark.column + 1)
    print(line)
"#;

/// `json.dumps` with its default `ensure_ascii=True`, so both sides escape identically.
fn json_string(text: &str) -> String {
    let mut out = String::from("\"");
    for character in text.chars() {
        match character {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || !c.is_ascii() => {
                let mut units = [0_u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    let _ = write!(out, "\\u{unit:04x}");
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn render(node: &Node) -> String {
    let scalar = |kind: &str| format!("{kind}:{}", node.value.python_str().unwrap_or_default());
    match &node.value {
        Value::Null => scalar("null"),
        Value::Bool(_) => scalar("bool"),
        Value::Int(_) => scalar("int"),
        Value::Float(_) => scalar("float"),
        Value::Timestamp(_) => scalar("timestamp"),
        Value::Str(text) => format!("str:{}", json_string(text)),
        Value::Binary(_) => format!(
            "binary:{}",
            json_string(&node.value.python_str().unwrap_or_default())
        ),
        Value::Seq(items) if node.tag == Tag::Set => {
            let mut rendered: Vec<String> = items.iter().map(render).collect();
            rendered.sort();
            format!("set{{{}}}", rendered.join(", "))
        }
        Value::Seq(items) => format!(
            "[{}]",
            items.iter().map(render).collect::<Vec<_>>().join(", ")
        ),
        Value::Map(mapping) => {
            let entries: Vec<String> = mapping
                .dict_entries()
                .into_iter()
                .map(|(key, value)| format!("{}: {}", render(key), render(value)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        }
    }
}

fn ours(source: &str) -> String {
    match load(source, &Limits::default()) {
        Ok(None) => "null:None".to_owned(),
        Ok(Some(node)) => render(&node),
        Err(error) => {
            let phase = match error.kind {
                ErrorKind::Syntax => "syntax",
                ErrorKind::MultipleDocuments
                | ErrorKind::DuplicateAnchor
                | ErrorKind::UndefinedAlias => "compose",
                _ => "construct",
            };
            if phase == "syntax" {
                format!("error:{phase}")
            } else {
                format!(
                    "error:{phase}@{}:{}",
                    error.span.start.line, error.span.start.column
                )
            }
        }
    }
}

fn pyyaml(corpus: &[String]) -> Vec<String> {
    let input = format!(
        "[{}]",
        corpus
            .iter()
            .map(|source| json_string(source))
            .collect::<Vec<_>>()
            .join(",")
    );
    let mut child = Command::new("python3")
        .args(["-c", ORACLE])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 must be installed: this test compares against PyYAML");
    child
        .stdin
        .take()
        .expect("stdin is piped")
        .write_all(input.as_bytes())
        .expect("python3 reads the corpus");
    let output = child.wait_with_output().expect("python3 runs");
    assert!(
        output.status.success(),
        "the PyYAML oracle failed (is PyYAML installed? `pip install pyyaml`): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<String> = String::from_utf8(output.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(
        lines.len(),
        corpus.len(),
        "one oracle line per corpus entry"
    );
    lines
}

fn assert_same_as_pyyaml(corpus: &[String]) {
    let expected = pyyaml(corpus);
    let mismatches: Vec<String> = corpus
        .iter()
        .zip(&expected)
        .filter_map(|(source, expected)| {
            let mut actual = ours(source);
            // Python's own exceptions (ValueError from datetime, ...) carry no position.
            if actual.starts_with("error:") && !expected.contains('@') {
                actual.truncate(actual.find('@').unwrap_or(actual.len()));
            }
            (&actual != expected)
                .then(|| format!("source {source:?}\n  pyyaml: {expected}\n  yaml11: {actual}"))
        })
        .collect();
    assert!(
        mismatches.is_empty(),
        "{} of {} differ:\n{}",
        mismatches.len(),
        corpus.len(),
        mismatches.join("\n")
    );
}

/// Scalars whose every form PyYAML resolves or constructs in its own way.
const SCALARS: &[&str] = &[
    // integers
    "0",
    "-0",
    "+0",
    "7",
    "-7",
    "+7",
    "1_000",
    "1__0",
    "_1",
    "1_",
    "010",
    "0_7",
    "08",
    "09",
    "0o10",
    "0O10",
    "007",
    "-010",
    "0b1010",
    "-0b1_0",
    "+0b1",
    "0b",
    "0b2",
    "0B1",
    "0x1F",
    "0x_a",
    "-0x1f",
    "0X1F",
    "0x",
    "0xg",
    "1:30",
    "-1:30",
    "190:20:30",
    "1:60",
    "1:5",
    "0:30",
    "1:123",
    "12345678901234567890123456789012345678901234567890",
    "-170141183460469231731687303715884105729",
    "0x7fffffffffffffffffffffffffffffffff",
    "0_",
    // floats
    "1.",
    ".5",
    "1.50",
    "-1.0",
    "+1.5",
    "1e3",
    "1E3",
    "1.0e3",
    "1.0e+3",
    "1.0E-3",
    "1.e+2",
    "1_0.5",
    "1._5",
    "6.8523015e+5",
    "685.230_15e+03",
    "190:20:30.15",
    "-1:30.5",
    ".inf",
    ".Inf",
    ".INF",
    "-.inf",
    "+.inf",
    ".nan",
    ".NaN",
    ".NAN",
    "inf",
    "nan",
    "-.nan",
    ".",
    "-.",
    "0.1",
    "0.0001",
    "0.00001",
    "1e-5",
    "1.0e-5",
    "123456789012345678.0",
    "1234567890123456.0",
    "0.30000000000000004",
    "3.14159",
    "1.7976931348623157e+308",
    "1.0e+400",
    "-0.0",
    "._",
    "1.5.5",
    // timestamps
    "2024-01-01",
    "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5",
    "2001-12-14 21:59:43.10 Z",
    "2001-12-15T02:59:43.1Z",
    "2001-12-15 2:59:43.10",
    "2002-12-14",
    "2024-1-1",
    "2024-02-29",
    "2023-02-29",
    "2024-13-01",
    "0000-01-01",
    "2001-12-14T21:59:43",
    "2001-12-14T21:59:43.1234567+05:30",
    "2001-12-14 21:59:43 +05:0",
    "2001-12-14 25:00:00",
    "2001-12-14 21:59:43.",
    // nulls, merge, value, other
    "~",
    "",
    "<<",
    "=",
    "hello",
    "hello world",
    "0 0 * * *",
    "*/5 * * * *",
    "a:b",
    "- x",
    "!!str",
    "'x'",
    "\"x\"",
    "x # comment",
    "é",
    "日本",
    "😀",
    "true story",
    // quoted and block scalars are always strings
    "'yes'",
    "\"yes\"",
    "'010'",
    "\"1.5\"",
    "'~'",
    "\"null\"",
    "''",
    "\"\"",
    "'2024-01-01'",
    "\"\\t\\u00e9\\x41\"",
    "'it''s'",
    "\"a\\\\b\"",
    "|\n  yes\n",
    ">\n  1.5\n",
    "|-\n  010\n",
    ">+\n  a\n  b\n\n",
    // explicit tags
    "!!str 123",
    "!!str yes",
    "!!str",
    "!!int \"12\"",
    "!!int '0x1F'",
    "!!int --5",
    "!!int 0o17",
    "!!int abc",
    "!!int ''",
    "!!int 1_000",
    "!!int ' 12 '",
    "!!int 1:-30",
    "!!float 1",
    "!!float 1e3",
    "!!float \"1_0.5\"",
    "!!float abc",
    "!!float inf",
    "!!float -Infinity",
    "!!float 1:30",
    "!!bool YeS",
    "!!bool \"off\"",
    "!!bool y",
    "!!null foo",
    "!!null ''",
    "!!binary aGVsbG8=",
    "!!binary 'aGVsbG8'",
    "!!binary \"aGVs\\nbG8=\"",
    "!!binary |\n  aGVs\n  bG8=\n",
    "!!binary w6k=",
    "!!binary 'é'",
    "!!timestamp 2001-1-2",
    "!!timestamp foo",
    "!!timestamp '2024-01-01'",
    "! 123",
    "! '123'",
    "! yes",
    "!foo bar",
    "!!python/tuple [1, 2]",
    "!<tag:yaml.org,2002:int> 42",
    "!<tag:yaml.org,2002:str> 42",
    "!!seq [1]",
    "!!map {a: 1}",
    "!!seq a",
    "!!map a",
    "!!str [1]",
    "!!int {a: 1}",
    "!!str {=: foo}",
    "!!merge a",
    "!!value a",
];

/// Whole documents: structure, merges, anchors, tags on collections, and errors.
const DOCUMENTS: &[&str] = &[
    // Several construction errors: PyYAML reports the first in its breadth-first order.
    "a: !x x\n<<: 5\n",
    "a: [!x x]\nb: !y y\n",
    "- [!a a]\n- !b b\n",
    "a: {b: !x x}\nc: !foo y\n",
    "[1]: a\nb: !x x\n",
    "a: !x x\n[1]: b\n",
    "!!omap [a: !x x, [b]]\n",
    "!!omap [[b], a: !x x]\n",
    "!!omap [a: [!x x], [b]]\n",
    "!!pairs [a: [!x x], {b: 1, c: 2}]\n",
    "!!set {a: 1, [b]: 2}\n",
    "a: !!binary 'é'\n",
    "a: &x [!q q]\nb: *x\nc: !r r\n",
    "a: {<<: [{x: !bad bad}, 3]}\n",
    "- - - !deep deep\n- !shallow shallow\n",
    "{a: [!x x], b: {c: !y y}, d: !z z}\n",
    "a:\n  <<: |  # a | b > c\n\n    text\n",
    "a: !!int >-\n  x\n",
    "x: &a >\n  text\ny:\n  <<: *a\n",
    "- - |2\n     indented\n  - !!float |\n    x\n",
    "[!!str, a]\n",
    "{a: !!str}\n",
    "- !!str\tx\n",
    ": v\n",
    "{: v}\n",
    "[: v]\n",
    "?\n: v\n",
    "a: 1\n: v\n",
    "...\n",
    "# c\n...\n",
    "a\n...\n",
    "key: |\n  text without final newline",
    "key: >\n  folded\n  at end",
    "|\n  top-level block",
    "|\nNo\n",
    "|\n",
    "a: x\u{feff}y\n",
    "x: a b\tc\n",
    "x: a\t\n",
    "x: \"a\tb\"\n",
    "x: \"a\"\t\n",
    "x: |\n  a\tb\n\tc\n",
    "x: |\t\n  a\n",
    "# \tcomment\nx: 1\n",
    "x: 1 #\tc\n",
    "x: \"a\n\tb\"\n",
    "x: a\n\tb\n",
    "\t\nx: 1\n",
    "x: [a,\tb]\n",
    "x: |\n  a\n  \tb\n",
    "x: >\n  a\tb\n   \tc\n",
    "a:\n# c1\n# c2\n  b: 1\n",
    "a: &a {x: 1}\nb: &b {<<: *a, y: 2}\nc: {<<: *b, z: 3}\n",
    "l: &l [{a: 1}, {b: 2}]\nm: {<<: *l}\n",
    "'<<': {a: 1}\n",
    "a: {x: 1, x: 2}\n",
    "~: a\nnull: b\n",
    "{a, b: c}\n",
    "[a: b, c]\n",
    "- ? a\n  : b\n",
    "a:\n  - b\n  -\n  - c\n",
    "a: &x\nb: *x\n",
    "!!map [1]\n",
    "!!seq {a: 1}\n",
    "!!set [a]\n",
    "2024-01-01: a\n2024-01-01: b\n",
    "key: [\n1, 2,\n3\n]\n",
    "a: 1\r\nb: 2\r\n",
    "a:\t1\n",
    "a: b\n  c: d\n",
    "- a\nb: c\n",
    "%TAG !e! tag:example.com,2000:\n--- !e!foo x\n",
    "%YAML 1.1\n---\na: 1\n",
    "%YAML 2.0\n--- a\n",
    "! [1, 2]\n",
    "? |\n  block key\n: v\n",
    "a: \"multi\n  line\"\n",
    "'a\n\n  b'\n",
    "- 'yes'\n- !!bool 'yes'\n",
    "x: .inf\ny: -.inf\nz: .nan\n",
    "&a a: b\n",
    "- &k key\n- {*k : v}\n",
    "[]\n",
    "{}\n",
    "- [a, b]: c\n",
    "a: !!binary aGVsbG8=\nb: !!binary \"\"\n",
    "a: &anchor\n  b: 1\nc: *anchor\nd:\n  <<: *anchor\n  e: 2\n",
    "- !!omap\n  - a: 1\n  - b: 2\n",
    "a: b #comment\n# c\nd: e\n",
    "a: 'single ''quoted'''\nb: \"esc \\\" \\\\ \\u263A\"\n",
    "x: -\n",
    "x: - a\n",
    "- -1\n- - 1\n",
    "a: [b, c]]\n",
    "? - a\n  - b\n: c\n",
    "a: !!str &x 1\nb: *x\n",
    "a: &x !!str 1\nb: *x\n",
    "- !!int &x 0x10\n- *x\n",
    "a: {b: &c [1], d: *c}\n",
    "",
    "# only a comment\n",
    "---\n",
    "---\n...\n",
    "a: 1\nb: [x, y]\nc: {d: e}\n",
    "a:\nb: ~\nc: !!str\n",
    "- 1\n- - 2\n  - 3\n- {a: [b, {c: d}]}\n",
    "base: &base\n  image: python3.11\n  cpu: 1\n  mem: 1Gi\njob:\n  <<: *base\n  cpu: 2\n",
    "a: &a {x: 1, y: 2}\nb: &b {y: 3, z: 4}\nc:\n  <<: [*a, *b]\n  z: 5\n",
    "a: &a {x: 1}\nc:\n  x: 0\n  <<: *a\n",
    "a: &a {x: 1, <<: {w: 0, x: 9}}\nc: {<<: *a, v: 2}\n",
    "<<: 5\n",
    "<<: [{a: 1}, 2]\n",
    "a: {<<: {b: 1}, <<: {b: 2, c: 3}}\n",
    "- &x hello\n- *x\n- *x\n",
    "a: *undefined\n",
    "a: &x 1\nb: &x 2\n",
    "anchor: &a [1, 2]\nalias: *a\n",
    "a: 1\na: 2\n",
    "1: int\n1.0: float\ntrue: bool\n",
    "[1, 2]: a\n",
    "? [1]\n: a\n",
    "? a\n? b\n",
    "!!set {a, b, a}\n",
    "!!set {1, 1.0, true, x}\n",
    "!!omap [a: 1, b: 2]\n",
    "!!pairs [a: 1, a: 2]\n",
    "!!omap [a: 1, {b: 2, c: 3}]\n",
    "!!omap {a: 1}\n",
    "=: value\n",
    "{=: 1}\n",
    "- =\n",
    "- <<\n",
    "--- a\n--- b\n",
    "a: b: c\n",
    "a: \"unterminated\n",
    "key: [1, 2\n",
    "schedule: @daily\n",
    "&a.b x\n",
    "a: '\\x01'\n",
    "a: \"\\x01\"\n",
    "a: 'x'\n\tb: 1\n",
    "a: |\n  line one\n  line two\nb: >\n  folded\n  text\n\n  para\nc: |+\n  keep\n\n",
    "multi: this is\n  a plain\n  scalar\n",
    "flow: [a, 'b', \"c\", {d: e}, [f]]\n",
    "date: 2024-01-01\nwhen: 2001-12-14 21:59:43.10 -5\n",
    "bin: !!binary |\n  R0lGODlhDAAMAIQAAP//9/X17unp5WZmZgAAAOfn515eXvPz7Y6OjuDg4J+fn5\n  OTk6enp56enmlpaWNjY6Ojo4SEhP/++f/++f/++f/++f/++f/++f/++f/++f/+\n",
    "\u{feff}a: bom\n",
    "- !!str\n- !!null\n- !!int 3\n",
    "a: 0 0 * * *\nb: \"02 07 * * *\"\nc: 0 00 * * *\n",
];

/// A realistic jobs.yaml.
const JOBS: &str = "\
# Toolforge jobs
- name: daily-report
  command: ./report.sh --date $(date) --flag=\"a: b\"
  image: python3.11
  schedule: \"@daily\"
  emails: onfailure
  filelog: yes
  no-filelog: off
- name: web-worker
  command: python3 worker.py
  image: tf-php74
  continuous: true
  replicas: 2
  port: 8000
  mem: 1Gi
  cpu: 0.5
  retry: 010
- name: cleanup
  command: >-
    find ~/logs -mtime +7
    -delete
  image: bookworm
  schedule: 0 */6 * * *
  wait: No
- &tmpl
  name: template
  image: python3.11
  command: echo hi
- <<: *tmpl
  name: from-template
  mount: none
  timeout: 1:30
";

fn scalar_corpus() -> Vec<String> {
    let mut scalars: Vec<String> = Vec::new();
    for word in [
        "yes", "no", "true", "false", "on", "off", "y", "n", "null", "none",
    ] {
        let title = format!("{}{}", word[..1].to_uppercase(), &word[1..]);
        let mixed: String = word
            .chars()
            .enumerate()
            .map(|(index, c)| {
                if index % 2 == 1 {
                    c.to_ascii_uppercase()
                } else {
                    c
                }
            })
            .collect();
        scalars.extend([word.to_owned(), title, word.to_uppercase(), mixed]);
    }
    scalars.extend(SCALARS.iter().map(|text| (*text).to_owned()));
    scalars
}

fn document_corpus() -> Vec<String> {
    let mut all: Vec<String> = DOCUMENTS.iter().map(|text| (*text).to_owned()).collect();
    all.push(JOBS.to_owned());
    all
}

#[test]
fn scalars_match_pyyaml() {
    let corpus = scalar_corpus();
    assert!(corpus.len() >= 200, "corpus has {} scalars", corpus.len());
    assert_same_as_pyyaml(&corpus);
}

#[test]
fn scalars_as_mapping_values_match_pyyaml() {
    let corpus: Vec<String> = scalar_corpus()
        .into_iter()
        // A tag right before `]` is a known divergence: PyYAML reads `!!str]` as one tag.
        .filter(|scalar| !scalar.contains('\n') && !scalar.starts_with("- ") && scalar != "!!str")
        .map(|scalar| format!("key: {scalar}\nlist: [{scalar}]\n"))
        .collect();
    assert_same_as_pyyaml(&corpus);
}

#[test]
fn documents_match_pyyaml() {
    let corpus = document_corpus();
    assert!(corpus.len() >= 30, "corpus has {} documents", corpus.len());
    assert_same_as_pyyaml(&corpus);
}
