//! Behaviour of `load` seen from a caller: spans, aliases, merges, errors and limits.

use std::fmt::Write as _;

use yaml11::{Error, ErrorKind, Limit, Limits, Mapping, Node, Style, Tag, Value, load};

fn root(source: &str) -> Node {
    match load(source, &Limits::default()) {
        Ok(Some(node)) => node,
        Ok(None) => panic!("expected a document, got an empty stream"),
        Err(error) => panic!("expected a document, got {error}"),
    }
}

fn map(node: &Node) -> &Mapping {
    node.value.as_map().expect("a mapping")
}

fn load_error(source: &str) -> Error {
    match load(source, &Limits::default()) {
        Err(error) => error,
        Ok(_) => panic!("expected an error from a {}-byte source", source.len()),
    }
}

fn error_with(source: &str, limits: &Limits) -> Error {
    match load(source, limits) {
        Err(error) => error,
        Ok(_) => panic!("expected an error from a {}-byte source", source.len()),
    }
}

fn str_of(node: Option<&Node>) -> Option<String> {
    node.and_then(|node| node.value.python_str())
}

#[test]
fn empty_streams_load_as_none_and_empty_documents_as_null() {
    assert_eq!(load("", &Limits::default()), Ok(None));
    assert_eq!(load("# nothing\n", &Limits::default()), Ok(None));
    assert_eq!(root("---\n").value, Value::Null);
}

#[test]
fn python_str_matches_the_examples_in_the_api() {
    let document = root(
        "a: yes\nb: ~\nc: 1.0\nd: .5\ne: 1e+16\nf: 010\ng: 2024-01-01\nh: 2001-12-14 21:59:43.10 -5\ni: !!binary aGk=\nj: 1.0e+16\n",
    );
    let mapping = map(&document);
    let shown: Vec<_> = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"]
        .iter()
        .map(|key| str_of(mapping.get(key)).unwrap_or_default())
        .collect();
    assert_eq!(
        shown,
        [
            "True",
            "None",
            "1.0",
            "0.5",
            "1e+16",
            "8",
            "2024-01-01",
            "2001-12-14 21:59:43.100000-05:00",
            "b'hi'",
            "1e+16"
        ]
    );
    assert_eq!(
        mapping.get("e").map(|node| node.value.type_name()),
        Some("string")
    );
    assert_eq!(
        mapping.get("j").map(|node| node.value.type_name()),
        Some("float")
    );
}

#[test]
fn spans_are_one_based_and_count_characters() {
    let source = "é: x\nkey: 'quoted'\nlist:\n  - item\n";
    let document = root(source);
    let mapping = map(&document);
    let quoted = mapping.get("key").expect("key");
    assert_eq!((quoted.span.start.line, quoted.span.start.column), (2, 6));
    assert_eq!(quoted.span.slice(source), Some("'quoted'"));
    assert_eq!(quoted.style, Style::SingleQuoted);
    let first_value = mapping.get("é").expect("é");
    assert_eq!(
        (first_value.span.start.line, first_value.span.start.column),
        (1, 4)
    );
    assert_eq!(first_value.span.start.offset, 4, "offsets are bytes");
    let list = mapping.get("list").expect("list");
    assert_eq!(list.style, Style::BlockSequence);
    let item = &list.value.as_seq().expect("sequence")[0];
    assert_eq!(item.span.slice(source), Some("item"));
    assert_eq!((item.span.start.line, item.span.start.column), (4, 5));
}

#[test]
fn aliased_nodes_point_at_the_definition_and_remember_the_outermost_alias() {
    let source = "base: &base {cpu: 1}\nouter: &outer [*base]\nuse: *outer\n";
    let document = root(source);
    let mapping = map(&document);
    let used = mapping.get("use").expect("use");
    assert_eq!(
        used.alias.and_then(|alias| alias.slice(source)),
        Some("*outer")
    );
    assert_eq!(used.span.start.line, 2);
    let inner = &used.value.as_seq().expect("sequence")[0];
    assert_eq!(
        inner.alias.map(|alias| alias.start.line),
        Some(3),
        "outermost alias wins"
    );
    assert_eq!(inner.span.start.line, 1);
    let direct = &mapping
        .get("outer")
        .expect("outer")
        .value
        .as_seq()
        .expect("sequence")[0];
    assert_eq!(
        direct.alias.and_then(|alias| alias.slice(source)),
        Some("*base")
    );
    assert_eq!(mapping.get("base").expect("base").alias, None);
}

#[test]
fn merge_keys_follow_flatten_mapping() {
    let document = root(
        "a: &a {x: a, y: a}\nb: &b {y: b, z: b}\nm:\n  w: explicit\n  <<: [*a, *b]\n  x: explicit\n",
    );
    let merged = map(&document).get("m").expect("m");
    let keys: Vec<_> = map(merged)
        .entries()
        .iter()
        .map(|(key, value)| {
            format!(
                "{}={}",
                str_of(Some(key)).unwrap_or_default(),
                str_of(Some(value)).unwrap_or_default()
            )
        })
        .collect();
    // Later merge sources come first so earlier ones override them; explicit keys come last.
    assert_eq!(
        keys,
        ["y=b", "z=b", "x=a", "y=a", "w=explicit", "x=explicit"]
    );
    assert_eq!(str_of(map(merged).get("y")).as_deref(), Some("a"));
    assert_eq!(str_of(map(merged).get("x")).as_deref(), Some("explicit"));
    let dict: Vec<_> = map(merged)
        .dict_entries()
        .iter()
        .map(|(key, _)| str_of(Some(key)).unwrap_or_default())
        .collect();
    assert_eq!(dict, ["y", "z", "x", "w"]);
    let alias_of_merged = map(merged).entries()[0].1.alias;
    assert_eq!(
        alias_of_merged.map(|alias| (alias.start.line, alias.start.column)),
        Some((5, 12))
    );
}

#[test]
fn merging_a_scalar_is_an_error_at_the_value() {
    let error = load_error("job:\n  <<: 5\n");
    assert_eq!(error.kind, ErrorKind::InvalidMerge);
    assert_eq!(
        error.message,
        "expected a mapping or list of mappings for merging, but found scalar"
    );
    assert_eq!((error.span.start.line, error.span.start.column), (2, 7));
    assert_eq!(
        error
            .context
            .map(|(context, span)| (context, span.start.line)),
        Some(("while constructing a mapping".to_owned(), 2))
    );
    assert_eq!(
        load_error("<<: [{a: 1}, [b]]\n").kind,
        ErrorKind::InvalidMerge
    );
}

#[test]
fn duplicate_keys_are_kept_and_get_returns_the_last() {
    let document = root("a: 1\nb: 2\na: 3\n");
    assert_eq!(map(&document).len(), 3);
    assert_eq!(str_of(map(&document).get("a")).as_deref(), Some("3"));
    assert_eq!(
        map(&document)
            .get_entry("a")
            .map(|(key, _)| key.span.start.line),
        Some(3)
    );
}

#[test]
fn standard_tags_are_reported_on_nodes() {
    let document = root("- !!set {a}\n- !!omap [a: 1]\n- !!str 1\n- 1\n- [x]\n");
    let tags: Vec<Tag> = document
        .value
        .as_seq()
        .expect("sequence")
        .iter()
        .map(|node| node.tag)
        .collect();
    assert_eq!(tags, [Tag::Set, Tag::Omap, Tag::Str, Tag::Int, Tag::Seq]);
}

#[test]
fn undefined_alias_points_at_the_alias() {
    let error = load_error("a: 1\nb: *missing\n");
    assert_eq!(error.kind, ErrorKind::UndefinedAlias);
    assert_eq!(error.message, "found undefined alias 'missing'");
    assert_eq!((error.span.start.line, error.span.start.column), (2, 4));
}

#[test]
fn duplicate_anchor_is_an_error_as_in_pyyaml() {
    let error = load_error("a: &x 1\nb: &x 2\n");
    assert_eq!(error.kind, ErrorKind::DuplicateAnchor);
    assert_eq!((error.span.start.line, error.span.start.column), (2, 4));
    assert_eq!(
        error
            .context
            .map(|(_, span)| (span.start.line, span.start.column)),
        Some((1, 4))
    );
}

#[test]
fn unknown_tags_are_errors_at_the_tag() {
    let error = load_error("job:\n  command: !foo bar\n");
    assert_eq!(error.kind, ErrorKind::UnknownTag);
    assert_eq!(
        error.message,
        "could not determine a constructor for the tag '!foo'"
    );
    assert_eq!((error.span.start.line, error.span.start.column), (2, 12));
    let python = load_error("!!python/object:os.system x\n");
    assert_eq!(
        python.message,
        "could not determine a constructor for the tag 'tag:yaml.org,2002:python/object:os.system'"
    );
    assert_eq!(
        load_error("a: =\n").message,
        "could not determine a constructor for the tag 'tag:yaml.org,2002:value'"
    );
}

#[test]
fn invalid_tagged_values_are_errors() {
    for source in [
        "!!int abc",
        "!!float x",
        "!!bool maybe",
        "!!timestamp 2024-02-30",
        "!!binary aGVsbG8",
        "!!int [1]",
        "!!seq a",
    ] {
        assert_eq!(
            load_error(source).kind,
            ErrorKind::InvalidTaggedValue,
            "{source}"
        );
    }
    assert_eq!(
        load_error("!!int abc").message,
        "invalid integer 'abc': invalid literal for int() with base 10: 'abc'"
    );
    assert_eq!(
        load_error("x: !!timestamp 2024-02-30").message,
        "invalid timestamp '2024-02-30': day is out of range for month"
    );
}

#[test]
fn unhashable_keys_are_errors() {
    let error = load_error("a: 1\n[b]: 2\n");
    assert_eq!(error.kind, ErrorKind::UnhashableKey);
    assert_eq!(error.span.start.line, 2);
}

#[test]
fn syntax_errors_carry_positions() {
    let error = load_error("a: 1\nb: c: d\n");
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(error.span.start.line, 2);
    let unclosed = load_error("a: [1, 2\n");
    assert_eq!(unclosed.kind, ErrorKind::Syntax);
    let reserved = load_error("schedule: @daily\n");
    assert_eq!(
        (
            reserved.kind,
            reserved.span.start.line,
            reserved.span.start.column
        ),
        (ErrorKind::Syntax, 1, 11)
    );
}

#[test]
fn common_syntax_errors_read_as_pyyaml_reports_them() {
    let reserved = load_error("schedule: @daily\n");
    assert_eq!(
        reserved.message,
        "found character '@' that cannot start any token"
    );
    assert_eq!(
        (reserved.span.start.line, reserved.span.start.column),
        (1, 11)
    );
    assert_eq!(
        reserved.context.map(|(context, _)| context).as_deref(),
        Some("while scanning for the next token")
    );
    let nested = load_error("a: b: c\n");
    assert_eq!(nested.message, "mapping values are not allowed here");
    assert_eq!((nested.span.start.line, nested.span.start.column), (1, 5));
    let unclosed = load_error("a: \"open\nb: 2\n");
    assert_eq!(unclosed.message, "found unexpected end of stream");
    assert_eq!(unclosed.span.start.line, 3);
    assert_eq!(
        unclosed
            .context
            .map(|(context, span)| (context, span.start.line, span.start.column)),
        Some(("while scanning a quoted scalar".to_owned(), 1, 4))
    );
}

#[test]
fn tabs_between_tokens_are_refused_like_pyyaml() {
    let error = load_error("a: 1\nb:\t2\n");
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(
        error.message,
        "found character '\\t' that cannot start any token"
    );
    assert_eq!((error.span.start.line, error.span.start.column), (2, 3));
    assert!(load("a: \"x\ty\" # tab\there\n", &Limits::default()).is_ok());
}

#[test]
fn special_characters_are_refused_before_parsing() {
    let error = load_error("a: 1\nb: x\u{7}y\n");
    assert_eq!(error.kind, ErrorKind::Syntax);
    assert_eq!(
        error.message,
        "unacceptable character #x0007: special characters are not allowed"
    );
    assert_eq!((error.span.start.line, error.span.start.column), (2, 5));
}

#[test]
fn yaml_1_1_line_breaks_are_refused_rather_than_misread() {
    for separator in ['\u{85}', '\u{2028}', '\u{2029}'] {
        let error = load_error(&format!("a: 1{separator}b: 2\n"));
        assert_eq!(error.kind, ErrorKind::Syntax);
        assert_eq!((error.span.start.line, error.span.start.column), (1, 5));
        assert!(
            error
                .message
                .starts_with("unsupported line break character")
        );
    }
}

#[test]
fn empty_implicit_keys_are_refused_like_pyyaml() {
    assert_eq!(load_error(": value\n").kind, ErrorKind::Syntax);
    assert_eq!(load_error("{: value}\n").kind, ErrorKind::Syntax);
    let explicit = root("?\n: value\n");
    assert_eq!(map(&explicit).entries()[0].0.value, Value::Null);
}

#[test]
fn more_than_one_document_is_an_error() {
    let error = load_error("a: 1\n---\nb: 2\n");
    assert_eq!(error.kind, ErrorKind::MultipleDocuments);
    assert_eq!(error.span.start.line, 2);
}

#[test]
fn recursive_aliases_are_errors_not_hangs() {
    assert_eq!(load_error("&a [*a]").kind, ErrorKind::RecursiveAlias);
    assert_eq!(
        load_error("a: &a\n  b: *a\n").kind,
        ErrorKind::RecursiveAlias
    );
}

#[test]
fn billion_laughs_is_refused_at_an_alias() {
    let mut source = String::from("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n");
    for level in 1..10 {
        let previous = format!("*a{}", level - 1);
        let items = [previous.as_str(); 9].join(", ");
        let _ = writeln!(source, "a{level}: &a{level} [{items}]");
    }
    let error = load_error(&source);
    assert_eq!(error.kind, ErrorKind::LimitExceeded(Limit::Nodes));
    assert!(
        error
            .span
            .slice(&source)
            .is_some_and(|text| text.starts_with("*a"))
    );
}

#[test]
fn merge_based_laughs_are_refused_too() {
    let mut source = String::from("m0: &m0 {a: 1, b: 2, c: 3, d: 4, e: 5, f: 6, g: 7, h: 8}\n");
    for level in 1..12 {
        let previous = format!("*m{}", level - 1);
        let items = [previous.as_str(); 8].join(", ");
        let _ = writeln!(
            source,
            "m{level}: &m{level} {{<<: [{items}], x{level}: [{items}]}}"
        );
    }
    assert_eq!(
        load_error(&source).kind,
        ErrorKind::LimitExceeded(Limit::Nodes)
    );
}

#[test]
fn deep_nesting_is_refused() {
    let flow = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert_eq!(
        load_error(&flow).kind,
        ErrorKind::LimitExceeded(Limit::Depth)
    );
    let flow_maps = "{a: ".repeat(100_000);
    assert_eq!(
        load_error(&flow_maps).kind,
        ErrorKind::LimitExceeded(Limit::Depth)
    );
    let nested_block: String = (0..2_000).fold(String::new(), |mut text, level| {
        let _ = writeln!(text, "{}k:", " ".repeat(level));
        text
    });
    let nested_sequences = format!("{}x\n", "- ".repeat(100_000));
    assert_eq!(
        load_error(&nested_sequences).kind,
        ErrorKind::LimitExceeded(Limit::Depth)
    );
    assert_eq!(
        load_error(&nested_block).kind,
        ErrorKind::LimitExceeded(Limit::Depth)
    );
}

#[test]
fn depth_counts_alias_expansion() {
    let limits = Limits {
        max_depth: 5,
        ..Limits::default()
    };
    let source = "a: &a [[[1]]]\nb: [[[*a]]]\n";
    let error = error_with(source, &limits);
    assert_eq!(error.kind, ErrorKind::LimitExceeded(Limit::Depth));
    assert_eq!(error.span.slice(source), Some("*a"));
    assert!(load("a: &a [[[1]]]\nb: [*a]\n", &limits).is_ok());
}

#[test]
fn limits_on_bytes_and_nodes_are_exact() {
    let source = "[1, 2, 3]";
    assert!(
        load(
            source,
            &Limits {
                max_nodes: 4,
                ..Limits::default()
            }
        )
        .is_ok()
    );
    assert_eq!(
        error_with(
            source,
            &Limits {
                max_nodes: 3,
                ..Limits::default()
            }
        )
        .kind,
        ErrorKind::LimitExceeded(Limit::Nodes)
    );
    assert!(
        load(
            source,
            &Limits {
                max_bytes: 9,
                ..Limits::default()
            }
        )
        .is_ok()
    );
    assert_eq!(
        error_with(
            source,
            &Limits {
                max_bytes: 8,
                ..Limits::default()
            }
        )
        .kind,
        ErrorKind::LimitExceeded(Limit::Bytes)
    );
}

#[test]
fn a_realistic_ten_thousand_job_file_loads_with_default_limits() {
    let mut source = String::from(
        "# generated\n- &defaults\n  name: defaults\n  image: python3.11\n  mem: 1Gi\n  cpu: 0.5\n",
    );
    for job in 0..10_000 {
        let _ = write!(
            source,
            "- <<: *defaults\n  name: job-{job}\n  command: './run.sh --index {job} --flag \"a: b\"'\n  schedule: \"{minute} * * * *\"\n  emails: onfailure\n  filelog: yes\n  retry: 2\n  mount: all\n  health-check-script: /bin/true\n",
            minute = job % 60
        );
    }
    let document = root(&source);
    let jobs = document.value.as_seq().expect("sequence");
    assert_eq!(jobs.len(), 10_001);
    let last = map(&jobs[10_000]);
    assert_eq!(str_of(last.get("name")).as_deref(), Some("job-9999"));
    assert_eq!(str_of(last.get("image")).as_deref(), Some("python3.11"));
    assert_eq!(
        last.get("filelog").map(|node| &node.value),
        Some(&Value::Bool(true))
    );
}
