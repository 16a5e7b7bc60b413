//! Plain-text tables as upstream's CLI prints them: aligned columns under a header line (`list`, `images`,
//! `quota`), a vertical grid of field and value (`show`); and their `-o json` form.

use serde::Serialize;

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

/// Two columns in a grid, one row per field (`tabulate`'s `grid` format).
pub(crate) fn grid(rows: &[(&str, String)]) -> String {
    let left = rows
        .iter()
        .map(|(field, _)| field.chars().count())
        .max()
        .unwrap_or(0);
    let right = rows
        .iter()
        .map(|(_, value)| value.chars().count())
        .max()
        .unwrap_or(0);
    let rule = format!("+{}+{}+\n", "-".repeat(left + 2), "-".repeat(right + 2));
    let rows: String = rows
        .iter()
        .flat_map(|(field, value)| {
            [
                format!("| {field:<left$} | {value:<right$} |\n"),
                rule.clone(),
            ]
        })
        .collect();
    rule + &rows
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

    #[test]
    fn grid_draws_rules_between_rows() {
        let text = grid(&[
            ("Job name:", "bot".to_owned()),
            ("Image:", "python3.11".to_owned()),
        ]);
        assert_eq!(
            text,
            "+-----------+------------+\n| Job name: | bot        |\n+-----------+------------+\n\
             | Image:    | python3.11 |\n+-----------+------------+\n"
        );
    }
}
