//! A few helpers for writing SVG as text: escaping, a width estimate for monospace labels, and
//! word wrapping. The sequence diagrams are plain SVG 1.1 that any browser or code-hosting site
//! renders without scripts or external resources.

use std::fmt::Write as _;

/// Font size of diagram text, in px.
pub const FONT_PX: f64 = 12.0;
/// Advance of one monospace character at [`FONT_PX`] (DejaVu Sans Mono, Menlo and Consolas all
/// advance about 0.6 em), in px.
pub const CHAR_PX: f64 = 7.3;
/// The font stack: monospace, so that widths are predictable without measuring text.
pub const FONT_FAMILY: &str = "'DejaVu Sans Mono', Menlo, Consolas, 'Liberation Mono', monospace";

/// Escapes text for an SVG text node or attribute value.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Estimated width of `s` in px at [`FONT_PX`].
pub fn text_width(s: &str) -> f64 {
    s.chars().count() as f64 * CHAR_PX
}

/// Cuts `s` to at most `max` characters, ending with `…` when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let keep = max.saturating_sub(1);
    let mut out: String = s.chars().take(keep).collect();
    out.push('…');
    out
}

/// Splits `s` into lines of at most `width` characters, breaking at spaces or commas where
/// possible and hard-breaking words longer than a line.
pub fn wrap(s: &str, width: usize) -> Vec<String> {
    let width = width.max(8);
    let mut lines = Vec::new();
    let mut rest: Vec<char> = s.chars().collect();
    while rest.len() > width {
        // Last break opportunity within the line: after a space or a comma.
        let cut = (1..=width)
            .rev()
            .find(|&i| rest[i - 1] == ' ' || rest[i - 1] == ',')
            .filter(|&i| i > width / 3)
            .unwrap_or(width);
        let line: String = rest[..cut].iter().collect();
        lines.push(line.trim_end().to_owned());
        rest.drain(..cut);
        while rest.first() == Some(&' ') {
            rest.remove(0);
        }
    }
    if !rest.is_empty() || lines.is_empty() {
        lines.push(rest.into_iter().collect());
    }
    lines
}

/// Writes `<text>` at (x, y) with the given anchor, class and optional hover title; the text
/// gets a white halo (`paint-order: stroke`) so it stays legible over lines it crosses.
pub fn text(out: &mut String, x: f64, y: f64, anchor: &str, class: &str, s: &str, title: &str) {
    let _ = write!(
        out,
        r#"<text x="{x:.1}" y="{y:.1}" text-anchor="{anchor}" class="{class}">"#
    );
    if !title.is_empty() && title != s {
        let _ = write!(out, "<title>{}</title>", esc(title));
    }
    let _ = writeln!(out, "{}</text>", esc(s));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_markup() {
        assert_eq!(esc("a<b & 'c'"), "a&lt;b &amp; &#39;c&#39;");
    }

    #[test]
    fn wraps_at_commas_and_spaces() {
        let w = wrap("publish [a=a1,b=b1,c=c1,d=d1] v2", 14);
        assert!(w.iter().all(|l| l.chars().count() <= 14), "{w:?}");
        assert_eq!(
            w.concat().replace(' ', ""),
            "publish[a=a1,b=b1,c=c1,d=d1]v2"
        );
        assert_eq!(wrap("short", 20), vec!["short".to_string()]);
        assert_eq!(truncate("abcdef", 4), "abc…");
    }
}
