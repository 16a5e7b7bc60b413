//! Plain-text tables as upstream's CLI prints them with Python's `tabulate`: `pretty` (`list`, `images`: every
//! cell centred in a box), `simple` (`quota`: numbers right-aligned on their decimal point, text left-aligned,
//! under a dashed rule), `grid` (`show`: field and value, a rule between rows); plain columns (`status`); and
//! their `-o json` form. The layouts follow tabulate 0.10 byte for byte, so that
//! scripts written against upstream's output keep working; the golden strings in the tests come from it.

use serde::Serialize;

pub(crate) mod wrap;

/// `value` as pretty JSON with a final newline, the `-o json` form of a table.
pub(crate) fn json_line(value: &impl Serialize) -> std::io::Result<String> {
    let mut text = serde_json::to_string_pretty(value).map_err(std::io::Error::other)?;
    text.push('\n');
    Ok(text)
}

/// Columns left-aligned and separated by two spaces, the header first; no trailing spaces.
pub(crate) fn columns(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|cell| cell.chars().count()).collect();
    for row in rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let header: Vec<String> = header.iter().map(|cell| (*cell).to_owned()).collect();
    let mut text = String::new();
    for row in std::iter::once(&header).chain(rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        text.push_str(cells.join("  ").trim_end());
        text.push('\n');
    }
    text
}

/// Where a cell's text goes within its column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Align {
    Left,
    /// The extra space, when odd, goes to the right, as Python's `format(s, "^N")`.
    Centre,
    Right,
}

/// A cell's lines: tabulate strips the cell, then keeps its lines as they are.
fn cell_lines(cell: &str) -> Vec<&str> {
    cell.trim().lines().collect()
}

fn width_of(text: &str) -> usize {
    text.chars().count()
}

fn pad(text: &str, width: usize, align: Align) -> String {
    let fill = width.saturating_sub(width_of(text));
    let left = match align {
        Align::Left => 0,
        Align::Centre => fill / 2,
        Align::Right => fill,
    };
    format!("{}{text}{}", " ".repeat(left), " ".repeat(fill - left))
}

/// The widest line of each column, headers included.
fn widths(rows: &[Vec<String>]) -> Vec<usize> {
    let mut widths = Vec::new();
    for row in rows {
        widths.resize(widths.len().max(row.len()), 0);
        for (width, cell) in widths.iter_mut().zip(row) {
            let widest = cell_lines(cell).into_iter().map(width_of).max();
            *width = (*width).max(widest.unwrap_or(0));
        }
    }
    widths
}

/// One row, as many lines as its tallest cell: `begin`, the padded cells joined by `separator`, `end`.
fn row_lines(
    row: &[String],
    widths: &[usize],
    align: &[Align],
    (begin, separator, end): (&str, &str, &str),
) -> String {
    let cells: Vec<Vec<&str>> = row.iter().map(|cell| cell_lines(cell)).collect();
    // An empty cell is one empty line.
    let height = cells.iter().map(Vec::len).max().unwrap_or(0).max(1);
    let mut text = String::new();
    for index in 0..height {
        let padded: Vec<String> = cells
            .iter()
            .zip(widths)
            .zip(align)
            .map(|((lines, width), align)| {
                pad(lines.get(index).copied().unwrap_or(""), *width, *align)
            })
            .collect();
        text.push_str(begin);
        text.push_str(&padded.join(separator));
        text.push_str(end);
        text.push('\n');
    }
    text
}

/// `+-----+---+`, a boxed table's rule.
fn box_rule(widths: &[usize]) -> String {
    let dashes: Vec<String> = widths.iter().map(|width| "-".repeat(width + 2)).collect();
    format!("+{}+\n", dashes.join("+"))
}

const BOX: (&str, &str, &str) = ("| ", " | ", " |");

/// tabulate's `pretty`: the header and the rows boxed, every cell centred (`list`, `images`).
pub(crate) fn pretty(header: &[&str], rows: &[Vec<String>]) -> String {
    let header: Vec<String> = header.iter().map(|cell| (*cell).to_owned()).collect();
    let all: Vec<Vec<String>> = std::iter::once(header.clone())
        .chain(rows.iter().cloned())
        .collect();
    let widths = widths(&all);
    let align = vec![Align::Centre; widths.len()];
    let rule = box_rule(&widths);
    let body: String = rows
        .iter()
        .map(|row| row_lines(row, &widths, &align, BOX))
        .collect();
    format!(
        "{rule}{}{rule}{body}{rule}",
        row_lines(&header, &widths, &align, BOX)
    )
}

/// tabulate's `grid` without a header: field and value, left-aligned, a rule around every row (`show`).
pub(crate) fn grid(rows: &[(&str, String)]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|(field, value)| vec![(*field).to_owned(), value.clone()])
        .collect();
    let widths = widths(&rows);
    let align = vec![Align::Left; widths.len()];
    let rule = box_rule(&widths);
    rows.iter().fold(rule.clone(), |text, row| {
        text + &row_lines(row, &widths, &align, BOX) + &rule
    })
}

/// What tabulate makes of a column's values (missing ones aside): the narrowest type all of them parse as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum ColumnType {
    Int,
    Float,
    Text,
}

fn type_of(value: &str) -> ColumnType {
    if value.parse::<i64>().is_ok() {
        ColumnType::Int
    } else if value.parse::<f64>().is_ok() {
        ColumnType::Float
    } else {
        ColumnType::Text
    }
}

/// Python's `format(value, "g")`: six significant digits, trailing zeros dropped, an exponent of at least two
/// digits outside 1e-4 ≤ |value| < 1e6.
fn general(value: f64) -> String {
    if !value.is_finite() {
        return value.to_string().to_lowercase();
    }
    if value == 0.0 {
        return if value.is_sign_negative() { "-0" } else { "0" }.to_owned();
    }
    let scientific = format!("{value:.5e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let trim = |digits: String| {
        if digits.contains('.') {
            digits
                .trim_end_matches('0')
                .trim_end_matches('.')
                .to_owned()
        } else {
            digits
        }
    };
    if (-4..6).contains(&exponent) {
        let decimals = usize::try_from(5 - exponent).unwrap_or(0);
        trim(format!("{value:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:02}",
            trim(mantissa.to_owned()),
            exponent.unsigned_abs()
        )
    }
}

/// Digits after the decimal point (or the exponent's `e`) of a formatted number, as tabulate aligns it; none for
/// integers and blanks.
fn after_point(value: &str) -> Option<usize> {
    if type_of(value) != ColumnType::Float {
        return None;
    }
    let point = value
        .rfind('.')
        .or_else(|| value.to_lowercase().rfind('e'))?;
    Some(value.len() - point - 1)
}

/// tabulate's `simple` with `headers="keys"`: a dashed rule under the header, columns two spaces apart, each at
/// least two wider than its header, no trailing spaces. A column of numbers is reformatted as Python formats them and right-aligned on
/// the decimal point, its header right-aligned; text is left-aligned. Missing values are blank (`quota`).
pub(crate) fn simple(header: &[&str], rows: &[Vec<Option<String>>]) -> String {
    let columns: Vec<(Vec<String>, usize, Align)> = header
        .iter()
        .enumerate()
        .map(|(index, title)| {
            let values: Vec<Option<&str>> = rows
                .iter()
                .map(|row| row.get(index).and_then(|cell| cell.as_deref()))
                .collect();
            let (cells, align) = simple_column(&values);
            let width = cells
                .iter()
                .map(|cell| width_of(cell))
                .chain([width_of(title) + 2])
                .max()
                .unwrap_or(0);
            (cells, width, align)
        })
        .collect();
    // tabulate strips the end of every line of this format.
    let line = |cells: Vec<String>| cells.join("  ").trim_end().to_owned() + "\n";
    let mut text = line(
        header
            .iter()
            .zip(&columns)
            .map(|(title, (_, width, align))| pad(title, *width, *align))
            .collect(),
    );
    text += &line(
        columns
            .iter()
            .map(|(_, width, _)| "-".repeat(*width))
            .collect(),
    );
    for index in 0..rows.len() {
        text += &line(
            columns
                .iter()
                .map(|(cells, width, align)| pad(&cells[index], *width, *align))
                .collect(),
        );
    }
    text
}

/// One column of [`simple`]: its cells formatted and decimal-padded, and how they align.
fn simple_column(values: &[Option<&str>]) -> (Vec<String>, Align) {
    // A column of missing values only is text.
    let column = values
        .iter()
        .flatten()
        .map(|value| type_of(value))
        .max()
        .unwrap_or(ColumnType::Text);
    let formatted: Vec<String> = values
        .iter()
        .map(|value| match (value, column) {
            (None, _) => String::new(),
            (Some(value), ColumnType::Int) => value
                .parse::<i64>()
                .map_or_else(|_| (*value).to_owned(), |number| number.to_string()),
            (Some(value), ColumnType::Float) => value
                .parse::<f64>()
                .map_or_else(|_| (*value).to_owned(), general),
            (Some(value), ColumnType::Text) => value.trim().to_owned(),
        })
        .collect();
    if column == ColumnType::Text {
        return (formatted, Align::Left);
    }
    // Numbers line up on their decimal point: each is padded on the right to the most digits after one.
    let points: Vec<usize> = formatted
        .iter()
        .map(|value| after_point(value).map_or(0, |digits| digits + 1))
        .collect();
    let most = points.iter().copied().max().unwrap_or(0);
    let cells = formatted
        .into_iter()
        .zip(points)
        .map(|(value, point)| value + &" ".repeat(most - point))
        .collect();
    (cells, Align::Right)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_align_and_do_not_pad_the_last_cell() {
        let rows = vec![
            vec!["bot".to_owned(), "continuous".to_owned()],
            vec!["a".to_owned(), "x".to_owned()],
        ];
        assert_eq!(
            columns(&["Job name:", "Job type:"], &rows),
            "Job name:  Job type:\nbot        continuous\na          x\n"
        );
    }

    // The golden strings below are tabulate 0.10's output for the same cells.

    #[test]
    fn pretty_centres_every_cell_in_a_box() {
        let rows = vec![
            vec![
                "myjob".to_owned(),
                "one-off".to_owned(),
                "Running for 5s".to_owned(),
            ],
            vec![
                "mycron".to_owned(),
                "scheduled: @daily".to_owned(),
                "Pending for 3h2m".to_owned(),
            ],
        ];
        assert_eq!(
            pretty(&["Job name:", "Job type:", "Status:"], &rows),
            "+-----------+-------------------+------------------+\n\
             | Job name: |     Job type:     |     Status:      |\n\
             +-----------+-------------------+------------------+\n\
             |   myjob   |      one-off      |  Running for 5s  |\n\
             |  mycron   | scheduled: @daily | Pending for 3h2m |\n\
             +-----------+-------------------+------------------+\n"
        );
    }

    #[test]
    fn grid_draws_rules_between_rows_and_stacks_the_lines_of_a_cell() {
        let text = grid(&[
            ("Job name:", "bot".to_owned()),
            ("Hints:", "  one line\nand the next  ".to_owned()),
            ("Error log:", String::new()),
        ]);
        assert_eq!(
            text,
            "+------------+--------------+\n\
             | Job name:  | bot          |\n\
             +------------+--------------+\n\
             | Hints:     | one line     |\n\
             |            | and the next |\n\
             +------------+--------------+\n\
             | Error log: |              |\n\
             +------------+--------------+\n"
        );
    }

    #[test]
    fn simple_aligns_numbers_on_the_point_and_formats_them_as_python() {
        let cell = |text: &str| Some(text.to_owned());
        let rows = vec![
            vec![cell("a"), cell("1.25"), cell("4.0")],
            vec![cell("b"), cell("10"), cell("1e7")],
            vec![cell("c"), None, cell("123456789.0")],
            vec![cell("d"), cell("0.00001"), cell("-0.5")],
        ];
        assert_eq!(
            simple(&["T", "Used", "Limit"], &rows),
            "T      Used         Limit\n\
             ---  ------  ------------\n\
             a     1.25    4\n\
             b    10       1e+07\n\
             c             1.23457e+08\n\
             d     1e-05  -0.5\n"
        );
    }

    #[test]
    fn floats_read_as_pythons_general_format() {
        for (value, text) in [
            (4.0, "4"),
            (1.5, "1.5"),
            (0.000_01, "1e-05"),
            (1e7, "1e+07"),
            (123_456_789.0, "1.23457e+08"),
            (0.0001, "0.0001"),
            (999_999.5, "1e+06"),
            (1_234_567.0, "1.23457e+06"),
            (-0.5, "-0.5"),
            (0.1 + 0.2, "0.3"),
        ] {
            assert_eq!(general(value), text, "{value}");
        }
    }
}
