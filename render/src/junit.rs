//! JUnit XML for CI: the typed test report ([`Suite`], [`TestCase`], [`TestOutcome`]) every command
//! with `--junit FILE` writes, the writer ([`render`], [`write`]), and one conversion per command:
//! [`from_check`] (a testcase per configuration × property), [`from_sim`] (one per seed campaign),
//! [`from_replays`] and [`from_matrix`] (one per trace or scenario × implementation). A failure's
//! message names the evidence: the counterexample trace, the shrunk trace, or the run's message
//! log.
//!
//! The format is the one CI systems read (Jenkins, GitHub Actions reporters, GitLab): a
//! `<testsuites>` root, `<testsuite name tests failures errors skipped time>`, and
//! `<testcase classname name time>` with at most one `<failure>`, `<error>` or `<skipped>`.
//! Text is escaped here (the five XML entities; characters XML 1.0 cannot carry become U+FFFD),
//! so no XML library is needed to write it; the tests parse the output with one.

use listsync_core::property::Verdict;
use listsync_harness::expected::{Expectations, Fixed};
use listsync_harness::matrix::row_name;
use listsync_harness::outcome::{RunReport, RunStatus, Target};
use listsync_harness::replay::agrees;
use listsync_model::suite::SuiteReport;
use listsync_sim::summary::Summary;
use std::fmt::Write as _;
use std::path::Path;

/// One `<testsuite>`: the testcases of one command's run.
#[derive(Clone, Debug, PartialEq)]
pub struct Suite {
    /// `listsync check`, `listsync matrix`...
    pub name: String,
    /// Its testcases, in order.
    pub cases: Vec<TestCase>,
}

/// One `<testcase>`.
#[derive(Clone, Debug, PartialEq)]
pub struct TestCase {
    /// Groups testcases (`check.naive-refresh`, `replay.ts-v1:client@listchanged`).
    pub class: String,
    /// The testcase (`no-stale-overwrite`, `naive.json`).
    pub name: String,
    /// Wall time.
    pub seconds: f64,
    /// How it came out.
    pub outcome: TestOutcome,
}

/// How a testcase came out.
#[derive(Clone, Debug, PartialEq)]
pub enum TestOutcome {
    /// As expected.
    Passed,
    /// Not as expected: `message` is one line (with the evidence's path), `detail` the rest.
    Failed {
        /// One line.
        message: String,
        /// Any length.
        detail: String,
    },
    /// It could not be judged (an adapter did not start, a command timed out).
    Error {
        /// One line.
        message: String,
    },
    /// Not applicable here, and why.
    Skipped {
        /// One line.
        message: String,
    },
}

impl Suite {
    fn count(&self, f: impl Fn(&TestOutcome) -> bool) -> usize {
        self.cases.iter().filter(|c| f(&c.outcome)).count()
    }

    /// Testcases that failed.
    pub fn failures(&self) -> usize {
        self.count(|o| matches!(o, TestOutcome::Failed { .. }))
    }

    /// Testcases that could not be judged.
    pub fn errors(&self) -> usize {
        self.count(|o| matches!(o, TestOutcome::Error { .. }))
    }

    /// Testcases not applicable.
    pub fn skipped(&self) -> usize {
        self.count(|o| matches!(o, TestOutcome::Skipped { .. }))
    }
}

/// Escapes text for an attribute value or element content: the SVG writer's escaping, and each
/// character XML 1.0 cannot carry (control characters but tab, newline and carriage return;
/// U+FFFE, U+FFFF) replaced by U+FFFD.
fn escape(s: &str) -> String {
    let carried: String = s
        .chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => c,
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect();
    crate::svg::esc(&carried)
}

/// The JUnit XML document of `suites`.
pub fn render(suites: &[Suite]) -> String {
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let total = |f: fn(&Suite) -> usize| suites.iter().map(f).sum::<usize>();
    let seconds = |s: &Suite| s.cases.iter().map(|c| c.seconds).sum::<f64>();
    let _ = writeln!(
        x,
        "<testsuites tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
        total(|s| s.cases.len()),
        total(Suite::failures),
        total(Suite::errors),
        total(Suite::skipped),
        suites.iter().map(seconds).sum::<f64>()
    );
    for s in suites {
        let _ = writeln!(
            x,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{:.3}\">",
            escape(&s.name),
            s.cases.len(),
            s.failures(),
            s.errors(),
            s.skipped(),
            seconds(s)
        );
        for c in &s.cases {
            let _ = write!(
                x,
                "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
                escape(&c.class),
                escape(&c.name),
                c.seconds
            );
            match &c.outcome {
                TestOutcome::Passed => x.push_str("/>\n"),
                TestOutcome::Failed { message, detail } => {
                    let _ = write!(
                        x,
                        ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>\n",
                        escape(message),
                        escape(detail)
                    );
                }
                TestOutcome::Error { message } => {
                    let _ = write!(
                        x,
                        ">\n      <error message=\"{}\"/>\n    </testcase>\n",
                        escape(message)
                    );
                }
                TestOutcome::Skipped { message } => {
                    let _ = write!(
                        x,
                        ">\n      <skipped message=\"{}\"/>\n    </testcase>\n",
                        escape(message)
                    );
                }
            }
        }
        x.push_str("  </testsuite>\n");
    }
    x.push_str("</testsuites>\n");
    x
}

/// Writes the document of `suites` to `path` (creating its directory); the error names the file.
pub fn write(path: &Path, suites: &[Suite]) -> anyhow::Result<()> {
    use anyhow::Context as _;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    std::fs::write(path, render(suites)).with_context(|| format!("writing {}", path.display()))
}

/// `listsync check`: a testcase per configuration × property (passed when the verdict is the
/// expected one: a known-bad configuration's violation is the model checker doing its job; the
/// failure names the counterexample trace under `traces`), and one per configuration for its
/// named situations and the progress pass.
pub fn from_check(report: &SuiteReport, traces: &Path) -> Suite {
    let mut cases = Vec::new();
    for c in &report.configs {
        let class = format!("check.{}", c.name);
        let share = c.seconds / (c.properties.len() + 1) as f64;
        for (p, r) in &c.properties {
            let want = c.expected.get(p).copied();
            let evidence = r
                .trace
                .as_ref()
                .map(|t| format!(" (counterexample: {})", traces.join(t).display()))
                .unwrap_or_default();
            let outcome = match want {
                Some(w) if w != r.verdict => TestOutcome::Failed {
                    message: format!("{p}: {:?}, expected {w:?}{evidence}", r.verdict),
                    detail: format!(
                        "configuration {} ({}): {} unique states explored",
                        c.name, c.about, c.unique_states
                    ),
                },
                _ => TestOutcome::Passed,
            };
            cases.push(TestCase {
                class: class.clone(),
                name: p.to_string(),
                seconds: share,
                outcome,
            });
        }
        let unreached = c.unreached();
        let outcome = if !unreached.is_empty() {
            TestOutcome::Failed {
                message: format!("situations never reached: {unreached:?}"),
                detail: String::new(),
            }
        } else if c.progress.stuck > 0 {
            TestOutcome::Failed {
                message: format!("{} states cannot reach quiescence", c.progress.stuck),
                detail: c.progress.stuck_path.join("\n"),
            }
        } else {
            TestOutcome::Passed
        };
        cases.push(TestCase {
            class,
            name: "situations-and-progress".into(),
            seconds: share,
            outcome,
        });
    }
    Suite {
        name: "listsync check".into(),
        cases,
    }
}

/// `listsync sim`: one testcase for the seed campaign, failed when it did not come out as
/// expected; the message names each violated property with its shrunk trace (under `out`).
pub fn from_sim(s: &Summary) -> Suite {
    let last = s.first_seed + s.seeds.saturating_sub(1);
    let name = format!(
        "{} strategy, {} faults, seeds {}..={last}{}",
        s.strategy,
        s.faults,
        s.first_seed,
        if s.shard.is_empty() {
            String::new()
        } else {
            format!(" shard {}", s.shard)
        }
    );
    let found: Vec<String> = s
        .violations
        .iter()
        .map(|(p, v)| {
            let evidence = v
                .trace
                .as_ref()
                .map(|t| format!(", trace {}", t.file))
                .or_else(|| v.history.as_ref().map(|h| format!(", history {h}")))
                .unwrap_or_default();
            format!(
                "{p} violated in {} runs (first seed {}{evidence})",
                v.runs, v.first_seed
            )
        })
        .collect();
    let outcome = if s.as_expected {
        TestOutcome::Passed
    } else {
        TestOutcome::Failed {
            message: format!(
                "expected {}; found {}",
                s.expected,
                if found.is_empty() {
                    "no violation".into()
                } else {
                    found.join("; ")
                }
            ),
            detail: if s.anomalies > 0 {
                format!(
                    "{} simulator anomalies, seeds {:?}",
                    s.anomalies, s.anomaly_seeds
                )
            } else {
                String::new()
            },
        }
    };
    Suite {
        name: "listsync sim".into(),
        cases: vec![TestCase {
            class: format!("sim.{:?}", s.level).to_lowercase(),
            name,
            seconds: s.wall_seconds,
            outcome,
        }],
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".into()
    } else {
        names.join(", ")
    }
}

/// `listsync replay`: a testcase per trace × implementation, failed as `listsync replay`'s exit
/// status says: when a property was violated (or, following a trace exactly, when our runtime
/// left it or its verdicts differ from the shadow world's); skipped with the reason when the
/// race was not posed or the trace does not apply; an error when the harness could not run it.
/// `logs` is the
/// directory the runs' message logs (`RunReport::log`) are relative to.
pub fn from_replays(runs: &[RunReport], logs: &Path) -> Suite {
    from_runs(
        "listsync replay",
        runs,
        logs,
        true,
        &Expectations::default(),
    )
}

/// `listsync matrix`: a testcase per run (a corpus trace or a generated scenario against one
/// row: implementation, role, variant, era), failed when the row violated a property; a
/// validation run of a
/// known-bad strategy fails when its trace did not catch it. Errors and skips as for replays.
/// A run whose violations are all expected failures of its row (`expected`) is skipped with
/// `expected failure: REASON`; each fixed entry (`fixed`: listed, and no longer failing) is a
/// testcase of its row of its own, failed, saying to remove the entry. A run between two SDKs
/// (`pair.*`, for the findings) is skipped when it violates something, as it fails no row.
pub fn from_matrix(
    runs: &[RunReport],
    logs: &Path,
    expected: &Expectations,
    fixed: &[Fixed],
) -> Suite {
    let mut suite = from_runs("listsync matrix", runs, logs, false, expected);
    suite.cases.extend(fixed.iter().map(|f| TestCase {
        class: f.entry.row.clone(),
        name: format!("expected failure {}", f.entry.property),
        seconds: 0.0,
        outcome: TestOutcome::Failed {
            message: f.to_string(),
            detail: format!("listed because: {}", f.entry.why()),
        },
    }));
    suite
}

fn from_runs(
    suite: &str,
    runs: &[RunReport],
    logs: &Path,
    lockstep: bool,
    expected: &Expectations,
) -> Suite {
    let cases = runs
        .iter()
        .map(|r| {
            let (target, shows) = match &r.target {
                Target::Trace { name, shows } => (name.clone(), *shows),
                Target::Exercise { name } => (format!("scenario {name}"), None),
            };
            let class = row_name(&r.imp, r.role, &r.variant, r.era);
            let violated: Vec<String> = r
                .judged
                .iter()
                .filter(|(_, v)| **v == Verdict::Violated)
                .map(|(p, _)| p.to_string())
                .collect();
            let log = r
                .log
                .as_ref()
                .map(|l| format!(" (message log: {})", logs.join(l).display()))
                .unwrap_or_default();
            let validation = r.id.starts_with("validation.");
            let outcome = match r.status {
                RunStatus::Unsupported => TestOutcome::Skipped {
                    message: r.detail.clone().unwrap_or_else(|| "not applicable".into()),
                },
                RunStatus::Failed => TestOutcome::Error {
                    message: r.detail.clone().unwrap_or_else(|| "the run failed".into()) + &log,
                },
                _ if validation => match shows {
                    Some(p) if r.judged.get(&p) != Some(&Verdict::Violated) => {
                        TestOutcome::Failed {
                            message: format!(
                                "{target} shows {p}, which this run did not catch{log}"
                            ),
                            detail: r.notes.join("\n"),
                        }
                    }
                    _ => TestOutcome::Passed,
                },
                // A replay: judged against the shadow world, as `listsync replay`'s exit status.
                _ if lockstep && r.model.is_some() => {
                    let agrees = r.model.as_ref().is_some_and(|m| agrees(&r.judged, m));
                    if r.status == RunStatus::Completed && agrees {
                        TestOutcome::Passed
                    } else {
                        let why = if r.status == RunStatus::Diverged {
                            format!(
                                "our runtime left the trace it follows exactly ({})",
                                r.detail.as_deref().unwrap_or("-")
                            )
                        } else {
                            "the verdicts differ from the model's".into()
                        };
                        TestOutcome::Failed {
                            message: format!("{target}: {why}; violated: {}{log}", list(&violated)),
                            detail: r.notes.join("\n"),
                        }
                    }
                }
                // A run between two SDKs (no row of ours at either end) is for the findings
                // only, and fails nothing, as in the matrix's exit status.
                _ if r.id.starts_with("pair.") && !violated.is_empty() => TestOutcome::Skipped {
                    message: format!(
                        "{target}: both ends are SDKs (for the findings only): violated {}{log}",
                        list(&violated)
                    ),
                },
                // An adaptive replay or a generated scenario: judged by the properties alone, each
                // violation an expected failure of its row or not; a replay that did not pose its
                // race proves nothing, and says so.
                _ if !violated.is_empty() => {
                    let (listed, unlisted): (Vec<_>, Vec<_>) = r
                        .judged
                        .iter()
                        .filter(|(_, v)| **v == Verdict::Violated)
                        .map(|(p, _)| (p, expected.get(&class, *p)))
                        .partition(|(_, e)| e.is_some());
                    let reasons: Vec<String> = listed
                        .iter()
                        .filter_map(|(p, e)| e.map(|e| format!("{p}: {}", e.why())))
                        .collect();
                    if unlisted.is_empty() {
                        TestOutcome::Skipped {
                            message: format!("expected failure: {}", reasons.join("; ")),
                        }
                    } else {
                        let unlisted: Vec<String> =
                            unlisted.iter().map(|(p, _)| p.to_string()).collect();
                        let notes = r.notes.join("\n");
                        TestOutcome::Failed {
                            message: format!("{target}: violated {}{log}", list(&unlisted)),
                            detail: if reasons.is_empty() {
                                notes
                            } else {
                                format!(
                                    "also violated, as expected: {}\n{notes}",
                                    reasons.join("; ")
                                )
                            },
                        }
                    }
                }
                _ if r.race.as_ref().is_some_and(|x| !x.posed) => TestOutcome::Skipped {
                    message: format!(
                        "race not posed: {}",
                        r.race
                            .as_ref()
                            .and_then(|x| x.why.clone())
                            .unwrap_or_default()
                    ),
                },
                _ => TestOutcome::Passed,
            };
            TestCase {
                class: if validation {
                    format!("validation.{class}")
                } else {
                    class
                },
                name: target,
                seconds: r.duration_ms as f64 / 1000.0,
                outcome,
            }
        })
        .collect();
    Suite {
        name: suite.into(),
        cases,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case(name: &str, outcome: TestOutcome) -> TestCase {
        TestCase {
            class: "c".into(),
            name: name.into(),
            seconds: 0.5,
            outcome,
        }
    }

    #[test]
    fn matrix_runs_whose_violations_are_expected_or_between_sdks_are_skipped_and_fixed_entries_fail()
     {
        use listsync_core::property::Property;
        use listsync_core::vocab::Era;
        use listsync_harness::adapters::{Role, Subject};
        use listsync_harness::manifest;
        let subject = Subject::parse("python:client@session", false).unwrap();
        let run = |name: &str, violated: &[Property]| {
            let mut r = RunReport::new(
                Target::Exercise { name: name.into() },
                &subject,
                Role::Client,
                Era::V2025_11_25,
            );
            r.variant = "session".into();
            r.status = RunStatus::Completed;
            for p in violated {
                r.judged.insert(*p, Verdict::Violated);
            }
            r
        };
        let row = "python:client@session.2025-11-25";
        let expected = Expectations::from_text(
            Path::new("x.toml"),
            &format!(
                "[[expected]]\nrow = \"{row}\"\nproperty = \"no_stale_overwrite\"\nreason = \"known\"\nlink = \"L\"\n\
                 [[expected]]\nrow = \"{row}\"\nproperty = \"bounded_refresh\"\nreason = \"gone\"\n"
            ),
            manifest::built_in(),
        )
        .unwrap();
        let runs = [
            run("stale-race", &[Property::NoStaleOverwrite]),
            run(
                "mid-walk",
                &[Property::NoStaleOverwrite, Property::Converges],
            ),
            run("notify", &[]),
            {
                let mut r = run("session-send", &[Property::Converges]);
                r.id = "pair.session-send".into();
                r
            },
        ];
        let m = listsync_harness::matrix::Matrix {
            rows: Vec::new(),
            validation: Vec::new(),
            runs: Vec::new(),
            seconds: 0.0,
        };
        assert!(expected.judge(&m).fixed.is_empty());
        let fixed = [Fixed {
            entry: expected.get(row, Property::BoundedRefresh).unwrap().clone(),
            now: "holds",
        }];
        let suite = from_matrix(&runs, Path::new("reports"), &expected, &fixed);
        let outcomes: Vec<(&str, &str, &TestOutcome)> = suite
            .cases
            .iter()
            .map(|c| (c.class.as_str(), c.name.as_str(), &c.outcome))
            .collect();
        assert_eq!(outcomes.len(), 5, "{outcomes:?}");
        assert_eq!(
            outcomes[0].2,
            &TestOutcome::Skipped {
                message: "expected failure: no_stale_overwrite: known (L)".into()
            }
        );
        match outcomes[1].2 {
            TestOutcome::Failed { message, detail } => {
                assert_eq!(message, "scenario mid-walk: violated converges");
                assert!(
                    detail.starts_with("also violated, as expected: no_stale_overwrite: known")
                );
            }
            o => panic!("{o:?}"),
        }
        assert_eq!(outcomes[2].2, &TestOutcome::Passed);
        assert!(
            matches!(outcomes[3].2, TestOutcome::Skipped { message } if message.contains("both ends are SDKs")),
            "{:?}",
            outcomes[3]
        );
        assert_eq!(
            (outcomes[4].0, outcomes[4].1),
            (row, "expected failure bounded_refresh")
        );
        match outcomes[4].2 {
            TestOutcome::Failed { message, .. } => assert!(
                message.starts_with(&format!("fixed: {row} no longer violates bounded_refresh (now holds); remove its entry at x.toml:"))
            ),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn the_document_parses_and_counts_each_outcome() {
        let s = Suite {
            name: "listsync x".into(),
            cases: vec![
                case("ok", TestOutcome::Passed),
                case(
                    "bad",
                    TestOutcome::Failed {
                        message: "violated (trace: t.json)".into(),
                        detail: "line 1\nline 2".into(),
                    },
                ),
                case(
                    "err",
                    TestOutcome::Error {
                        message: "did not start".into(),
                    },
                ),
                case(
                    "na",
                    TestOutcome::Skipped {
                        message: "not applicable".into(),
                    },
                ),
            ],
        };
        let xml = render(&[s]);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "testsuites");
        assert_eq!(root.attribute("tests"), Some("4"));
        let suite = root.children().find(|n| n.is_element()).unwrap();
        for (attr, want) in [
            ("failures", "1"),
            ("errors", "1"),
            ("skipped", "1"),
            ("time", "2.000"),
        ] {
            assert_eq!(suite.attribute(attr), Some(want), "{attr}");
        }
        let cases: Vec<_> = suite
            .children()
            .filter(|n| n.has_tag_name("testcase"))
            .collect();
        assert_eq!(cases.len(), 4);
        let failure = cases[1]
            .children()
            .find(|n| n.has_tag_name("failure"))
            .unwrap();
        assert_eq!(
            failure.attribute("message"),
            Some("violated (trace: t.json)")
        );
        assert_eq!(failure.text(), Some("line 1\nline 2"));
        assert!(cases[2].children().any(|n| n.has_tag_name("error")));
        assert!(cases[3].children().any(|n| n.has_tag_name("skipped")));
        assert_eq!(cases[0].children().count(), 0);
    }

    #[test]
    fn markup_and_characters_xml_cannot_carry_are_escaped() {
        let nasty = "a<b>&\"c\"'d'\u{0}\u{1b}[31m\u{FFFF}é";
        let s = Suite {
            name: nasty.into(),
            cases: vec![case(
                nasty,
                TestOutcome::Failed {
                    message: nasty.into(),
                    detail: format!("</failure><testcase name=\"{nasty}\"/>"),
                },
            )],
        };
        let xml = render(&[s]);
        let doc = roxmltree::Document::parse(&xml).unwrap();
        let tc = doc
            .descendants()
            .find(|n| n.has_tag_name("testcase"))
            .unwrap();
        let want = "a<b>&\"c\"'d'\u{FFFD}\u{FFFD}[31m\u{FFFD}é";
        assert_eq!(tc.attribute("name"), Some(want));
        let f = tc.children().find(|n| n.has_tag_name("failure")).unwrap();
        assert_eq!(f.attribute("message"), Some(want));
        assert!(f.text().unwrap().starts_with("</failure><testcase"));
        assert_eq!(
            doc.descendants()
                .filter(|n| n.has_tag_name("testcase"))
                .count(),
            1
        );
    }

    #[test]
    fn write_creates_the_directory() {
        let dir = std::env::temp_dir().join(format!("listsync-junit-{}", std::process::id()));
        let path = dir.join("a/b/junit.xml");
        write(&path, &[]).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        roxmltree::Document::parse(&text).unwrap();
        assert!(text.contains("tests=\"0\""));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
