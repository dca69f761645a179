//! Plain-text tables for the terminal: columns padded to their widest cell.

/// Renders `rows` under `headers`, two spaces between columns; the last column is not
/// padded.
pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let cols = headers.len();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate().take(cols) {
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut first = true;
        for (i, cell) in cells.enumerate() {
            if !first {
                out.push_str("  ");
            }
            first = false;
            out.push_str(cell);
            if i + 1 < cols {
                let pad = widths[i].saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push('\n');
    };
    line(&mut headers.iter().copied());
    for row in rows {
        line(&mut row.iter().map(String::as_str));
    }
    out
}
