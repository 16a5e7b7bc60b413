//! Problems found in a jobs file, and how they are shown.
//!
//! Every check of the loader appends a [`Problem`] instead of stopping, so one run reports everything that is
//! wrong with a file. A problem carries the byte range it is about; [`Report`] turns that into a miette
//! diagnostic with the file name, line, column and a snippet.

use std::fmt::{self, Write as _};
use std::ops::Range;
use std::sync::Arc;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

/// How bad a problem is: errors make the file invalid, warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Warning,
    Error,
}

/// One thing wrong with (or worth knowing about) a jobs file.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    pub severity: Severity,
    /// Stable identifier, e.g. `jobs::unknown_key`; documented in docs/jobs-yaml.md.
    pub code: &'static str,
    pub message: String,
    /// Byte range in the file the problem is about.
    #[serde(skip)]
    pub span: Range<usize>,
    /// Short text shown under the underlined source.
    #[serde(skip)]
    pub label: Option<String>,
    pub help: Option<String>,
}

impl Problem {
    pub fn error(code: &'static str, span: Range<usize>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Error,
            code,
            message: message.into(),
            span,
            label: None,
            help: None,
        }
    }

    pub fn warning(code: &'static str, span: Range<usize>, message: impl Into<String>) -> Self {
        Self {
            severity: Severity::Warning,
            ..Self::error(code, span, message)
        }
    }

    #[must_use]
    pub fn with_label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    #[must_use]
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    #[must_use]
    pub fn with_optional_help(mut self, help: Option<String>) -> Self {
        self.help = help;
        self
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

/// The text of a jobs file, the name it is shown under, and an index of its line starts.
///
/// The index makes every location lookup a binary search, so a file with thousands of problems still reports
/// them all in linear time; miette's own `str` source rescans from the top for each report.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: Arc<str>,
    line_starts: Arc<[usize]>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        let text: Arc<str> = text.into();
        let line_starts = line_starts(&text).into();
        Self {
            name: name.into(),
            text,
            line_starts,
        }
    }

    /// 0-based index of the line holding a byte offset.
    fn line_index(&self, offset: usize) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset);
        let line = self.line_index(offset);
        let column = self.text[self.line_starts[line]..offset].chars().count() + 1;
        (line + 1, column)
    }
}

/// Where each line starts. Line breaks are `\n`, `\r\n` and a lone `\r`, as for PyYAML and miette.
fn line_starts(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    let mut starts = vec![0];
    for (index, &byte) in bytes.iter().enumerate() {
        let is_break = byte == b'\n' || (byte == b'\r' && bytes.get(index + 1) != Some(&b'\n'));
        if is_break {
            starts.push(index + 1);
        }
    }
    starts
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

impl SourceCode for SourceFile {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        context_lines_before: usize,
        context_lines_after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let start = span.offset().min(self.text.len());
        let end = (span.offset() + span.len()).min(self.text.len());
        let first_line = self.line_index(start).saturating_sub(context_lines_before);
        let last_line = (self.line_index(end.saturating_sub(1).max(start)) + context_lines_after)
            .min(self.line_starts.len() - 1);
        let window_start = self.line_starts[first_line];
        let window_end = self
            .line_starts
            .get(last_line + 1)
            .copied()
            .unwrap_or(self.text.len());
        // Let miette lay out the few lines around the span, then move its answer back into the whole file.
        let window = &self.text[window_start..window_end];
        let local = SourceSpan::new((start - window_start).into(), end - start);
        let inner = window.read_span(&local, context_lines_before, context_lines_after)?;
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            SourceSpan::new(
                (inner.span().offset() + window_start).into(),
                inner.span().len(),
            ),
            inner.line() + first_line,
            inner.column(),
            inner.line_count(),
        )))
    }
}

/// A problem bound to its file, ready to be rendered by miette.
#[derive(Debug)]
pub struct Report<'a> {
    pub problem: &'a Problem,
    file: &'a SourceFile,
}

impl<'a> Report<'a> {
    pub fn new(file: &'a SourceFile, problem: &'a Problem) -> Self {
        Self { problem, file }
    }
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.problem.message)
    }
}

impl std::error::Error for Report<'_> {}

impl Diagnostic for Report<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.problem.code))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.problem.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.problem
            .help
            .as_ref()
            .map(|help| Box::new(help) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(self.file)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = &self.problem.span;
        let label =
            LabeledSpan::new_primary_with_span(self.problem.label.clone(), span.start..span.end);
        Some(Box::new(std::iter::once(label)))
    }
}

/// At most this many problems are drawn with snippets; the rest are counted (`-o json` lists them all).
pub const MAX_RENDERED: usize = 200;

/// Renders problems as miette reports, one after the other, in the order given.
pub fn render(file: &SourceFile, problems: &[Problem], color: bool) -> String {
    let theme = if color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_links(false)
        .with_width(100);
    let mut out = String::new();
    for problem in problems.iter().take(MAX_RENDERED) {
        let report = Report::new(file, problem);
        // Writing into a String cannot fail; a formatter error here would only come from a broken Display impl.
        if handler.render_report(&mut out, &report).is_err() {
            out.push_str(&problem.message);
        }
        out.push('\n');
    }
    if problems.len() > MAX_RENDERED {
        let _ = writeln!(
            out,
            "… and {} more problems; `-o json` lists them all\n",
            problems.len() - MAX_RENDERED
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_column_counts_lines_and_characters_from_one() {
        let file = SourceFile::new("jobs.yaml", "- name: a\n  cömmand: x\n");
        assert_eq!(file.line_column(0), (1, 1));
        assert_eq!(file.line_column(12), (2, 3));
        // `m` after the two-byte `ö` is the 5th character of the line, though its 6th byte.
        assert_eq!(file.line_column(15), (2, 5));
    }

    #[test]
    fn lone_carriage_returns_and_crlf_end_lines() {
        let file = SourceFile::new("jobs.yaml", "- name: a\r  command: b\r\n  memory: 1Gi\r");
        assert_eq!(file.line_column(12), (2, 3));
        assert_eq!(file.line_column(26), (3, 3));
    }

    #[test]
    fn snippets_far_into_a_file_show_the_right_lines() {
        let text = (1..=5000).fold(String::new(), |mut text, line| {
            let _ = writeln!(text, "line {line}");
            text
        });
        let offset = text.find("line 4321").unwrap();
        let file = SourceFile::new("big.yaml", text);
        let problem =
            Problem::error("jobs::test", offset..offset + 9, "here").with_label("this one");
        let rendered = render(&file, &[problem], false);
        assert!(rendered.contains("big.yaml:4321:1"), "{rendered}");
        assert!(rendered.contains("4320 │ line 4320"), "{rendered}");
        assert!(rendered.contains("4321 │ line 4321"), "{rendered}");
        assert!(rendered.contains("4322 │ line 4322"), "{rendered}");
    }

    #[test]
    fn only_the_first_problems_are_drawn() {
        let file = SourceFile::new("jobs.yaml", "x\n");
        let problems = vec![Problem::error("jobs::test", 0..1, "bad"); MAX_RENDERED + 5];
        let rendered = render(&file, &problems, false);
        assert!(rendered.contains("and 5 more problems"), "{rendered}");
    }

    #[test]
    fn rendered_report_names_file_line_and_column() {
        let file = SourceFile::new("jobs.yaml", "- name: a\n  memory: 1Gi\n");
        let problem = Problem::error("jobs::unknown_key", 12..18, "unknown key `memory`")
            .with_label("not a job key")
            .with_help("did you mean `mem`?");
        let text = render(&file, &[problem], false);
        assert!(text.contains("jobs.yaml:2:3"), "{text}");
        assert!(text.contains("unknown key `memory`"), "{text}");
        assert!(text.contains("did you mean `mem`?"), "{text}");
    }
}
