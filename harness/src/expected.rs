//! Expected failures of the conformance matrix: TOML files listing the (row, property) cells known
//! to be violated, each with its reason — the user's (`listsync matrix --expected-failures FILE`)
//! and each built-in adapter's `harness/adapters/<dir>/expected-failures.toml`, read by default.
//! [`Expectations::judge`] sorts a matrix against them: a listed violation is an **expected
//! failure** (it does not fail the run), an unlisted one a failure, and a listed cell that was
//! judged and no longer fails is **fixed**, which fails the run until its entry is removed, so a
//! file never goes stale.
//!
//! ```toml
//! [[expected]]
//! row = "my-client:client@last-response-wins.2025-11-25"   # IMPL:ROLE@VARIANT.ERA
//! property = "no_stale_overwrite"
//! reason = "every notification starts a walk of its own; fix tracked upstream"
//! link = "https://example.org/issues/12"                    # optional
//! ```
//!
//! An entry with `sometimes = true` is a cell seen violated in some runs only (a race the
//! implementation loses under some timings): violated, it is an expected failure; holding, it is
//! neither a failure nor fixed, and the run says it held this time. Its reason must say what
//! was measured (how many runs, how many violated).
//!
//! A row is named as the report and the JUnit classnames name it ([`crate::matrix::row_name`]).
//! An entry must name a row of a known adapter and a property that row can violate; a file that
//! does not parse or names something else is an error naming the file and line.

use crate::manifest::{Manifest, Origin};
use crate::matrix::{CellState, Matrix, RowKey, rows};
use listsync_core::property::Property;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Largest expected-failures file read.
const MAX_FILE: u64 = 1 << 20;

/// The file name of a built-in adapter's expected failures, in its directory.
pub const BUILT_IN_FILE: &str = "expected-failures.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FileDoc {
    #[serde(default)]
    expected: Vec<EntryDoc>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EntryDoc {
    row: toml::Spanned<String>,
    property: toml::Spanned<String>,
    reason: String,
    #[serde(default)]
    link: Option<String>,
    #[serde(default)]
    sometimes: bool,
}

/// One expected failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedFailure {
    /// The row, `IMPL:ROLE@VARIANT.ERA`.
    pub row: String,
    /// The property it violates.
    pub property: Property,
    /// Why.
    pub reason: String,
    /// Where it is tracked.
    pub link: Option<String>,
    /// Violated in some runs only (timing-dependent): holding is not "fixed".
    pub sometimes: bool,
    /// Where the entry is: `FILE:LINE`.
    pub at: String,
}

impl ExpectedFailure {
    /// `reason (link)`.
    pub fn why(&self) -> String {
        match &self.link {
            Some(l) => format!("{} ({l})", self.reason),
            None => self.reason.clone(),
        }
    }
}

/// A listed cell that no longer fails.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fixed {
    /// The entry.
    pub entry: ExpectedFailure,
    /// What the cell is now (`holds`, `diverged`, `n/a`).
    pub now: &'static str,
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "fixed: {} no longer violates {} (now {}); remove its entry at {}",
            self.entry.row, self.entry.property, self.now, self.entry.at
        )
    }
}

/// The matrix sorted against the expectations.
#[derive(Clone, Debug, Default)]
pub struct Judged {
    /// Violated cells nobody expected: `ROW violates PROPERTY (run ID)`.
    pub unexpected: Vec<String>,
    /// Violated cells listed as expected.
    pub expected: Vec<ExpectedFailure>,
    /// Listed cells that were judged and did not fail.
    pub fixed: Vec<Fixed>,
    /// Cells listed as violated in some runs only that held in this one.
    pub held_this_time: Vec<ExpectedFailure>,
}

/// Every expected failure in force, by (row, property).
#[derive(Clone, Debug, Default)]
pub struct Expectations {
    by_cell: BTreeMap<(String, Property), ExpectedFailure>,
}

/// Every row of `adapters`, by name.
fn known_rows(adapters: &[Arc<Manifest>]) -> BTreeMap<String, RowKey> {
    rows(adapters)
        .into_iter()
        .map(|(k, _)| (k.to_string(), k))
        .collect()
}

/// Line (1-based) of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at).map_or(1, |t| t.matches('\n').count() + 1)
}

impl Expectations {
    /// The expectations of a matrix over `adapters` (every adapter whose rows may run: the
    /// built-ins and the user's): each built-in adapter's own file under `tree` (the adapters'
    /// tree: `<tree>/harness/adapters/<dir>/expected-failures.toml`, when there is one), then
    /// `files`. Errors name the file and line.
    pub fn load(
        tree: &Path,
        adapters: &[Arc<Manifest>],
        files: &[PathBuf],
    ) -> Result<Expectations, String> {
        let known = known_rows(adapters);
        let mut out = Expectations::default();
        for m in adapters {
            if let Origin::BuiltIn(_) = m.origin {
                let f = m.dir(tree).join(BUILT_IN_FILE);
                if f.is_file() {
                    out.add_file(&f, &known, adapters)?;
                }
            }
        }
        for f in files {
            out.add_file(f, &known, adapters)?;
        }
        Ok(out)
    }

    /// The expectations of one file's `text` (`name` is what errors and entries call it), over
    /// `adapters` as for [`Expectations::load`] without the built-in files.
    pub fn from_text(
        name: &Path,
        text: &str,
        adapters: &[Arc<Manifest>],
    ) -> Result<Expectations, String> {
        let mut out = Expectations::default();
        out.add_text(name, text, &known_rows(adapters), adapters)?;
        Ok(out)
    }

    fn add_file(
        &mut self,
        path: &Path,
        known: &BTreeMap<String, RowKey>,
        adapters: &[Arc<Manifest>],
    ) -> Result<(), String> {
        let text = crate::limited_file::read_text(path, MAX_FILE)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.add_text(path, &text, known, adapters)
    }

    fn add_text(
        &mut self,
        path: &Path,
        text: &str,
        known: &BTreeMap<String, RowKey>,
        adapters: &[Arc<Manifest>],
    ) -> Result<(), String> {
        let doc: FileDoc = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of(text, s.start));
            let msg = e.message().trim().to_string();
            match line {
                Some(l) => format!("{}:{l}: {msg}", path.display()),
                None => format!("{}: {msg}", path.display()),
            }
        })?;
        for e in doc.expected {
            let at = format!("{}:{}", path.display(), line_of(text, e.row.span().start));
            let row = e.row.into_inner();
            let Some(key) = known.get(&row) else {
                let imp = row.split(':').next().unwrap_or_default();
                let of_imp: Vec<&str> = known
                    .keys()
                    .filter(|k| k.split(':').next() == Some(imp))
                    .map(String::as_str)
                    .collect();
                return Err(if of_imp.is_empty() {
                    format!(
                        "{at}: row '{row}' names no row of the matrix (IMPL:ROLE@VARIANT.ERA; no adapter is named '{imp}')"
                    )
                } else {
                    format!(
                        "{at}: row '{row}' names no row of the matrix (rows of {imp}: {})",
                        of_imp.join(", ")
                    )
                });
            };
            let p_at = format!(
                "{}:{}",
                path.display(),
                line_of(text, e.property.span().start)
            );
            let property: Property = e.property.into_inner().parse().map_err(|err| {
                format!(
                    "{p_at}: {err} (one of {})",
                    Property::ALL.map(Property::as_str).join(", ")
                )
            })?;
            if !key.owns(property) {
                return Err(format!(
                    "{p_at}: {row} cannot violate {property} (not applicable to its role or era)"
                ));
            }
            if adapters.iter().any(|m| m.name == key.imp && m.runs_core) {
                return Err(format!(
                    "{at}: {row} is our own runtime: its violations are never expected"
                ));
            }
            if e.reason.trim().is_empty() {
                return Err(format!(
                    "{at}: the entry for {row} {property} gives no reason"
                ));
            }
            let entry = ExpectedFailure {
                row: row.clone(),
                property,
                reason: e.reason,
                link: e.link,
                sometimes: e.sometimes,
                at: at.clone(),
            };
            if let Some(had) = self.by_cell.insert((row.clone(), property), entry) {
                return Err(format!(
                    "{at}: {row} {property} is listed twice (also at {})",
                    had.at
                ));
            }
        }
        Ok(())
    }

    /// The entry expecting `row` (`IMPL:ROLE@VARIANT.ERA`) to violate `p`, if any.
    pub fn get(&self, row: &str, p: Property) -> Option<&ExpectedFailure> {
        self.by_cell.get(&(row.to_string(), p))
    }

    /// How many entries are in force.
    pub fn len(&self) -> usize {
        self.by_cell.len()
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.by_cell.is_empty()
    }

    /// Sorts the matrix's cells: every violated cell is expected or unexpected; every entry of a
    /// row in the matrix whose cell was judged (holds, diverged, n/a) and is not violated is
    /// fixed. Entries of rows not in this run (left out by `--only`), and of cells no run could
    /// judge (the row's error fails the run on its own), are neither.
    pub fn judge(&self, m: &Matrix) -> Judged {
        let mut out = Judged::default();
        for row in &m.rows {
            let name = row.key.to_string();
            for (p, cell) in &row.cells {
                let entry = self.get(&name, *p);
                match (cell.state, entry) {
                    (CellState::Violated, Some(e)) => out.expected.push(e.clone()),
                    (CellState::Violated, None) => out.unexpected.push(format!(
                        "{name} violates {p}{}",
                        cell.run
                            .as_deref()
                            .map(|r| format!(" (run {r})"))
                            .unwrap_or_default()
                    )),
                    (CellState::NotRun, _) | (_, None) => {}
                    (CellState::Holds, Some(e)) if e.sometimes => {
                        out.held_this_time.push(e.clone());
                    }
                    (now, Some(e)) => out.fixed.push(Fixed {
                        entry: e.clone(),
                        now: match now {
                            CellState::Holds => "holds",
                            CellState::Diverged => "diverged",
                            _ => "n/a",
                        },
                    }),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest;
    use crate::matrix::{Cell, Row};
    use std::io::Write as _;

    fn file(text: &str) -> tempfile::NamedTempFile {
        let mut f = tempfile::NamedTempFile::new().unwrap();
        f.write_all(text.as_bytes()).unwrap();
        f
    }

    fn load(text: &str) -> Result<Expectations, String> {
        let f = file(text);
        Expectations::load(
            Path::new("/nonexistent"),
            manifest::built_in(),
            &[f.path().to_path_buf()],
        )
    }

    const PY: &str = "python:client@session.2025-11-25";

    #[test]
    fn entries_load_and_name_their_line() {
        let e = load(&format!(
            "# c\n\n[[expected]]\nrow = \"{PY}\"\nproperty = \"no_stale_overwrite\"\nreason = \"r\"\nlink = \"L\"\n"
        ))
        .unwrap();
        let got = e.get(PY, Property::NoStaleOverwrite).unwrap();
        assert_eq!(got.why(), "r (L)");
        assert!(got.at.ends_with(":4"), "{}", got.at);
        assert!(e.get(PY, Property::Converges).is_none());
    }

    #[test]
    fn malformed_files_are_refused_with_file_and_line() {
        for (text, says) in [
            (
                "[[expected]]\nrow = \"x\"\nproperty = \"converges\"\nreason = \"r\"\nextra = 1\n".to_string(),
                ":5: unknown field `extra`",
            ),
            (
                format!("[[expected]]\nrow = \"{PY}\"\nproperty = \"converges\"\n"),
                "missing field `reason`",
            ),
            (
                "[[expected]]\nrow = \"nope:client@x.2025-11-25\"\nproperty = \"converges\"\nreason = \"r\"\n".to_string(),
                ":2: row 'nope:client@x.2025-11-25' names no row",
            ),
            (
                "[[expected]]\nrow = \"python:client@nope.2025-11-25\"\nproperty = \"converges\"\nreason = \"r\"\n".to_string(),
                "rows of python: ",
            ),
            (
                format!("[[expected]]\nrow = \"{PY}\"\nproperty = \"fast\"\nreason = \"r\"\n"),
                ":3: ",
            ),
            (
                format!("[[expected]]\nrow = \"{PY}\"\nproperty = \"notify_after_commit\"\nreason = \"r\"\n"),
                "cannot violate notify_after_commit",
            ),
            (
                format!("[[expected]]\nrow = \"{PY}\"\nproperty = \"converges\"\nreason = \"r\"\n[[expected]]\nrow = \"{PY}\"\nproperty = \"converges\"\nreason = \"s\"\n"),
                ":6: python:client@session.2025-11-25 converges is listed twice (also at ",
            ),
            (
                "[[expected]]\nrow = \"reference:client@reference.2025-11-25\"\nproperty = \"converges\"\nreason = \"r\"\n".to_string(),
                "our own runtime",
            ),
            ("[[expected]\n".to_string(), ":1: "),
        ] {
            let err = load(&text).expect_err(&text);
            assert!(err.contains(says), "{text}\n=> {err}\n(wanted {says})");
        }
    }

    fn matrix(cells: &[(&str, Property, CellState)]) -> Matrix {
        let mut rows: Vec<Row> = Vec::new();
        for (name, p, state) in cells {
            let key = rows_of_name(name);
            let row = match rows.iter_mut().find(|r| r.key == key) {
                Some(r) => r,
                None => {
                    rows.push(Row {
                        key,
                        version: "v".into(),
                        cells: BTreeMap::new(),
                        runs: Vec::new(),
                        note: None,
                    });
                    rows.last_mut().unwrap()
                }
            };
            row.cells.insert(
                *p,
                Cell {
                    state: *state,
                    run: Some("run-1".into()),
                },
            );
        }
        Matrix {
            rows,
            validation: Vec::new(),
            runs: Vec::new(),
            seconds: 0.0,
        }
    }

    fn rows_of_name(name: &str) -> RowKey {
        rows(manifest::built_in())
            .into_iter()
            .map(|(k, _)| k)
            .find(|k| k.to_string() == name)
            .unwrap()
    }

    #[test]
    fn violations_are_expected_unexpected_and_listed_holds_are_fixed() {
        let other = "python:client@client.2025-11-25";
        let e = load(&format!(
            "[[expected]]\nrow = \"{PY}\"\nproperty = \"no_stale_overwrite\"\nreason = \"r\"\n\
             [[expected]]\nrow = \"{PY}\"\nproperty = \"converges\"\nreason = \"c\"\n\
             [[expected]]\nrow = \"{other}\"\nproperty = \"converges\"\nreason = \"n\"\n\
             [[expected]]\nrow = \"java:client@sync.2025-11-25\"\nproperty = \"converges\"\nreason = \"left out\"\n"
        ))
        .unwrap();
        let m = matrix(&[
            (PY, Property::NoStaleOverwrite, CellState::Violated),
            (PY, Property::Converges, CellState::Holds),
            (PY, Property::BoundedRefresh, CellState::Violated),
            (other, Property::Converges, CellState::NotRun),
        ]);
        let j = e.judge(&m);
        assert_eq!(
            j.expected
                .iter()
                .map(|e| (e.row.as_str(), e.property))
                .collect::<Vec<_>>(),
            [(PY, Property::NoStaleOverwrite)]
        );
        assert_eq!(
            j.unexpected,
            [format!("{PY} violates bounded_refresh (run run-1)")]
        );
        assert_eq!(j.fixed.len(), 1, "{:?}", j.fixed);
        assert_eq!(j.fixed[0].entry.property, Property::Converges);
        assert_eq!(j.fixed[0].now, "holds");
        assert!(j.fixed[0].to_string().contains("remove its entry at "));
    }

    #[test]
    fn a_cell_violated_sometimes_is_expected_when_violated_and_not_fixed_when_it_holds() {
        let e = load(&format!(
            "[[expected]]\nrow = \"{PY}\"\nproperty = \"converges\"\nreason = \"r\"\nsometimes = true\n"
        ))
        .unwrap();
        let violated = e.judge(&matrix(&[(PY, Property::Converges, CellState::Violated)]));
        assert_eq!(violated.expected.len(), 1);
        assert!(violated.held_this_time.is_empty() && violated.fixed.is_empty());
        let held = e.judge(&matrix(&[(PY, Property::Converges, CellState::Holds)]));
        assert!(held.fixed.is_empty() && held.unexpected.is_empty() && held.expected.is_empty());
        assert_eq!(held.held_this_time.len(), 1);
        // Diverged is not a timing's doing: still fixed (its entry must go).
        let diverged = e.judge(&matrix(&[(PY, Property::Converges, CellState::Diverged)]));
        assert_eq!(diverged.fixed.len(), 1);
    }

    #[test]
    fn the_committed_files_of_the_built_in_adapters_load() {
        let tree = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        let e = Expectations::load(tree, manifest::built_in(), &[]).unwrap();
        assert!(
            e.len() > 50,
            "the third-party rows' known violations are listed: {}",
            e.len()
        );
    }
}
