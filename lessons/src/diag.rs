//! Problems found in content files, with the file and line they point at.

use std::fmt;

/// One problem in one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Path of the file (relative to the content root or a bank folder).
    pub file: String,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Diagnostic {
    pub fn new(file: impl Into<String>, line: Option<usize>, message: impl Into<String>) -> Self {
        Self {
            file: file.into(),
            line,
            message: message.into(),
        }
    }

    /// A diagnostic at the byte offset `offset` of `text`.
    pub fn at(file: &str, text: &str, offset: usize, message: impl Into<String>) -> Self {
        Self::new(file, Some(line_col(text, offset).0), message)
    }

    /// From a TOML parse error, with the line of its span.
    pub fn from_toml(file: &str, text: &str, err: &toml::de::Error) -> Self {
        let line = err.span().map(|s| line_col(text, s.start).0);
        Self::new(file, line, err.message().trim().to_string())
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "{}:{}: {}", self.file, l, self.message),
            None => write!(f, "{}: {}", self.file, self.message),
        }
    }
}

/// Every problem found; empty means the content is valid.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, d: Diagnostic) {
        self.0.push(d);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn iter(&self) -> impl Iterator<Item = &Diagnostic> {
        self.0.iter()
    }
    pub fn extend(&mut self, other: Diagnostics) {
        self.0.extend(other.0);
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for d in &self.0 {
            writeln!(f, "{d}")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostics {}

/// 1-based line and column of byte `offset` in `text` (clamped to the text).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = offset
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1)
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_col_counts_from_one() {
        let t = "a\nbc\nd";
        assert_eq!(line_col(t, 0), (1, 1));
        assert_eq!(line_col(t, 3), (2, 2));
        assert_eq!(line_col(t, 5), (3, 1));
        assert_eq!(line_col(t, 99), (3, 2));
    }
}
