//! Small Markdown helpers shared by the report pages: links, table-cell escaping, number
//! formatting. Every page renders a typed document; there is no untyped JSON table.

use std::fmt;

/// A Markdown link.
pub struct MdLink<'a> {
    text: &'a str,
    href: &'a str,
}

impl<'a> MdLink<'a> {
    /// `[text](href)`.
    pub fn new(text: &'a str, href: &'a str) -> Self {
        MdLink { text, href }
    }
}

impl fmt::Display for MdLink<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}]({})", self.text, self.href)
    }
}

/// Escapes text for a table cell (pipes and line breaks).
pub fn cell_escape(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// A number with a sensible number of digits for a table.
pub fn num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else if x.abs() >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}
