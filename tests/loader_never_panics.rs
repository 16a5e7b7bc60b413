//! Property: no input makes the loader panic; it either loads or reports problems inside the file.

#![allow(clippy::unwrap_used, reason = "a failing unwrap is a failing test")]

use proptest::prelude::*;
use toolforge_jobs::config::image::ImageTable;
use toolforge_jobs::config::{self, Context, SourceFile};

fn load(text: &str) {
    let images = ImageTable::bundled();
    let context = Context {
        tool: "mytool",
        images: &images,
        count_trigger_files: None,
    };
    if let Err(invalid) = config::load(SourceFile::new("jobs.yaml", text), &context) {
        for problem in &invalid.problems {
            assert!(
                problem.span.start <= problem.span.end && problem.span.end <= text.len(),
                "{problem:?}"
            );
        }
    }
}

/// Fragments of real jobs files, so generated inputs get past the YAML parser often.
fn token() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "- ",
        "name: ",
        "command: ",
        "image: ",
        "schedule: ",
        "continuous: ",
        "wait: ",
        "port: ",
        "retry: ",
        "mem: ",
        "cpu: ",
        "filelog: ",
        "trigger-files: ",
        "timezone: ",
        "<<: ",
        "&a ",
        "*a",
        "\n",
        "\n  ",
        "  ",
        "bot",
        "python3.11",
        "\"@daily\"",
        "@daily",
        "yes",
        "no",
        "true",
        "\"true\"",
        "1",
        "0.5",
        "-1",
        "65536",
        "8000/udp",
        "512Mi",
        "1e3",
        "~",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "'",
        "\"",
        "#",
        "\t",
        "é",
        "*/5 * * * *",
        "1-30/5 * * * *",
        "Europe/Berlin",
        "---",
        "...",
        "!!str ",
        "!!int ",
        "!foo ",
        "|\n",
        ">\n",
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,300}") {
        load(&text);
    }

    #[test]
    fn jobs_file_token_soup_never_panics(tokens in prop::collection::vec(token(), 0..60)) {
        load(&tokens.concat());
    }
}
