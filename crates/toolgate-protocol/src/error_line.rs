//! One line of a parser's error message, for a one-line report: the first line, without
//! an `error: ` prefix or a `line L column C: ` position the report gives on its own.

/// The message of `s`'s first line, without its prefix and position.
pub fn first_line(s: &str) -> String {
    let line = s.lines().next().unwrap_or_default();
    let line = line.strip_prefix("error: ").unwrap_or(line);
    match line
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
    {
        Some((position, message)) if position.contains("column") => message.to_string(),
        _ => line.to_string(),
    }
}
