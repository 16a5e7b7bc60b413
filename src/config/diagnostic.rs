//! Problems found in a jobs file, and how they are shown.
//!
//! Every check of the loader appends a [`Problem`] instead of stopping, so one run reports everything that is
//! wrong with a file. A problem carries the byte range it is about; [`Report`] turns that into a miette
//! diagnostic with the file name, line, column and a snippet.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
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

/// The text of a jobs file together with the name it is shown under.
#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub text: Arc<str>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            text: text.into(),
        }
    }

    /// 1-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, offset: usize) -> (usize, usize) {
        let offset = floor_char_boundary(&self.text, offset);
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A problem bound to its file, ready to be rendered by miette.
#[derive(Debug)]
pub struct Report<'a> {
    pub problem: &'a Problem,
    source: NamedSource<Arc<str>>,
}

impl<'a> Report<'a> {
    pub fn new(file: &SourceFile, problem: &'a Problem) -> Self {
        Self {
            problem,
            source: NamedSource::new(file.name.clone(), Arc::clone(&file.text)),
        }
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
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        let span = &self.problem.span;
        let label =
            LabeledSpan::new_primary_with_span(self.problem.label.clone(), span.start..span.end);
        Some(Box::new(std::iter::once(label)))
    }
}

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
    for problem in problems {
        let report = Report::new(file, problem);
        // Writing into a String cannot fail; a formatter error here would only come from a broken Display impl.
        if handler.render_report(&mut out, &report).is_err() {
            out.push_str(&problem.message);
        }
        out.push('\n');
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
