//! One line for an error and its causes, as the user reads it.

/// The error and each cause, joined by `: ` as anyhow's `{:#}` does, except
/// that a cause already at the end of the line is not repeated: many of our
/// error types name their source in their own message (`{path}: {source}`),
/// which `{:#}` would then print twice.
pub fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.ends_with(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[derive(Debug, thiserror::Error)]
    #[error("grid.toml: cannot read grid file: {source}")]
    struct Read {
        source: std::io::Error,
    }

    #[test]
    fn a_source_named_in_its_message_is_said_once_and_context_stays() {
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "No such file or directory (os error 2)");
        let error = Err::<(), _>(Read { source: io }).context("loading the grid").unwrap_err();
        assert_eq!(
            one_line(&error),
            "loading the grid: grid.toml: cannot read grid file: No such file or directory (os error 2)"
        );
        assert_eq!(format!("{error:#}").matches("os error 2").count(), 2, "anyhow's own form repeats it");
    }
}
