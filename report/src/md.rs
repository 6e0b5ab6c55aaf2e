//! Small Markdown helpers shared by the report pages: links, table-cell escaping, number
//! formatting, and a table of arbitrary JSON records (for tools whose JSON the report does not
//! model field by field).

use serde_json::Value;
use std::fmt::{self, Write as _};

/// A Markdown link.
pub struct Link<'a> {
    text: &'a str,
    href: &'a str,
}

impl<'a> Link<'a> {
    /// `[text](href)`.
    pub fn new(text: &'a str, href: &'a str) -> Self {
        Link { text, href }
    }
}

impl fmt::Display for Link<'_> {
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

/// A JSON scalar as a table cell; objects and arrays compactly.
pub fn value_cell(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), num),
        Value::String(s) => cell_escape(s),
        Value::Array(a) if a.is_empty() => String::new(),
        other => {
            let t = other.to_string();
            let t = if t.chars().count() > 80 {
                format!("{}…", t.chars().take(79).collect::<String>())
            } else {
                t
            };
            format!("`{}`", cell_escape(&t))
        }
    }
}

/// A table of JSON objects: one column per key (in first-seen order), one row per object.
pub fn records_table(records: &[Value]) -> String {
    let mut keys: Vec<String> = Vec::new();
    for r in records {
        if let Value::Object(m) = r {
            for k in m.keys() {
                if !keys.contains(k) {
                    keys.push(k.clone());
                }
            }
        }
    }
    let mut s = String::new();
    if keys.is_empty() {
        return s;
    }
    let _ = writeln!(s, "| {} |", keys.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(keys.len()));
    for r in records {
        let cells: Vec<String> = keys
            .iter()
            .map(|k| r.get(k).map(value_cell).unwrap_or_default())
            .collect();
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_become_a_table() {
        let rows = vec![
            serde_json::json!({"a": 1, "b": "x|y"}),
            serde_json::json!({"b": "z", "c": true}),
        ];
        let t = records_table(&rows);
        assert_eq!(
            t,
            "| a | b | c |\n|---|---|---|\n| 1.00 | x\\|y |  |\n|  | z | true |\n"
        );
    }
}
