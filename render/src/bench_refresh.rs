//! The refresh-contention section of the bench page: the coalescing frontier. Each cell
//! (scenario, P, K) puts every strategy at one point — list round trips per burst against the
//! time from the burst's last mutation to the final list — and the page says, cell by cell,
//! whether the reference (its default, adaptive coalescing) dominates each debounce point: no
//! more round trips at a lower median time.

use crate::bench::{BenchFile, Dist, RefreshRow, RunInfo};
use crate::md::num;
use std::fmt::Write as _;

/// The shipped client's name in the figures.
pub const REFERENCE: &str = "reference";

/// One cell of the frontier.
pub struct FrontierCell<'a> {
    /// Milliseconds between the burst's commits (0: back to back onto a refresh in flight).
    pub spacing_ms: u32,
    /// Whether the server answered new walks during the burst.
    pub served: bool,
    /// Pages per list.
    pub pages: u32,
    /// Notifications in the burst.
    pub k: u32,
    /// Whether the cell ran without the neighbour the run's other cells had (see
    /// [`RefreshRow::neighbour`]): a quiet process. False when no cell of the run had one.
    pub quiet: bool,
    /// Every strategy's row, in the order the bench ran them.
    pub rows: Vec<&'a RefreshRow>,
}

impl FrontierCell<'_> {
    fn scenario(&self) -> &'static str {
        match (self.spacing_ms, self.served) {
            (0, false) => "parked",
            (0, true) => "served",
            _ => "spaced",
        }
    }

    /// A burst onto a refresh in flight (parked or served).
    pub fn on_a_walk(&self) -> bool {
        self.spacing_ms == 0
    }

    /// The cells the frontier's claim is about: a burst onto a refresh in flight, in a process
    /// as busy as the run made it.
    pub fn claimed(&self) -> bool {
        self.on_a_walk() && !self.quiet
    }

    /// The row of `strategy` in this cell.
    pub fn get(&self, strategy: &str) -> Option<&RefreshRow> {
        self.rows.iter().copied().find(|r| r.strategy == strategy)
    }

    /// The debounce points the reference neither dominates nor ties with (or that have no
    /// figures to compare).
    pub fn undominated(&self) -> Option<Vec<String>> {
        let r = self.get(REFERENCE).filter(|r| r.converged > 0)?;
        Some(
            self.rows
                .iter()
                .filter(|d| d.strategy.starts_with("debounce-"))
                .filter(|d| versus(r, d) == Versus::No)
                .map(|d| d.strategy.clone())
                .collect(),
        )
    }

    /// The debounce points the reference ties with (see [`Versus::Ties`]).
    pub fn tied(&self) -> Vec<String> {
        let Some(r) = self.get(REFERENCE) else {
            return Vec::new();
        };
        self.rows
            .iter()
            .filter(|d| d.strategy.starts_with("debounce-") && versus(r, d) == Versus::Ties)
            .map(|d| d.strategy.clone())
            .collect()
    }

    /// "parked, P = 1, K = 10" (with " (quiet)" for a quiet cell).
    pub fn label(&self) -> String {
        format!(
            "{}{}, P = {}, K = {}",
            self.scenario(),
            if self.quiet { " (quiet)" } else { "" },
            self.pages,
            self.k
        )
    }
}

/// Whether `a` dominates `b`: no more list round trips per burst (mean) and a lower median time
/// to the final list (a point that never converged is dominated by one that did).
pub fn dominates(a: &RefreshRow, b: &RefreshRow) -> bool {
    if a.converged == 0 {
        return false;
    }
    a.requests.mean <= b.requests.mean
        && (b.converged == 0 || a.converge_ms.p50 < b.converge_ms.p50)
}

/// How the reference point `a` compares with a debounce point `b`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Versus {
    /// `a` dominates `b`.
    Dominates,
    /// No more round trips, and a median time that is higher but not measurably so: the 95 %
    /// intervals of the two medians overlap. The run cannot tell the two points apart in time.
    Ties,
    /// Neither.
    No,
}

/// Compares the reference point `a` with a debounce point `b`.
pub fn versus(a: &RefreshRow, b: &RefreshRow) -> Versus {
    if dominates(a, b) {
        Versus::Dominates
    } else if a.converged > 0
        && b.converged > 0
        && a.requests.mean <= b.requests.mean
        && a.converge_ms.median_ties(&b.converge_ms)
    {
        Versus::Ties
    } else {
        Versus::No
    }
}

/// The frontier's cells (readers = 0): parked, served, then spaced; each beside a neighbour,
/// then quiet; by P and K.
pub fn cells(rows: &[RefreshRow]) -> Vec<FrontierCell<'_>> {
    let any_neighbour = rows.iter().any(|r| r.neighbour);
    let mut keys: Vec<(u32, bool, bool, u32, u32)> = rows
        .iter()
        .filter(|r| r.readers == 0 && r.iterations > 0)
        .map(|r| {
            let quiet = any_neighbour && !r.neighbour;
            (r.spacing_ms, r.served_during_burst, quiet, r.pages, r.k)
        })
        .collect();
    keys.sort_unstable();
    keys.dedup();
    keys.into_iter()
        .map(|(spacing_ms, served, quiet, pages, k)| FrontierCell {
            spacing_ms,
            served,
            pages,
            k,
            quiet,
            rows: rows
                .iter()
                .filter(|r| {
                    r.readers == 0
                        && r.iterations > 0
                        && r.spacing_ms == spacing_ms
                        && r.served_during_burst == served
                        && (any_neighbour && !r.neighbour) == quiet
                        && r.pages == pages
                        && r.k == k
                })
                .collect(),
        })
        .collect()
}

/// Of judged cells: how many the reference dominates or ties in throughout, the others (with
/// the points it does not), and those with ties.
fn tally(judged: &[(&FrontierCell, Vec<String>)]) -> (usize, Vec<String>, Vec<String>) {
    let won = judged.iter().filter(|(_, u)| u.is_empty()).count();
    let missed = judged
        .iter()
        .filter(|(_, u)| !u.is_empty())
        .map(|(c, u)| format!("{} ({})", c.label(), u.join(", ")))
        .collect();
    let ties = judged
        .iter()
        .filter(|(c, _)| !c.tied().is_empty())
        .map(|(c, _)| format!("{} ({})", c.label(), c.tied().join(", ")))
        .collect();
    (won, missed, ties)
}

/// The headline: how many cells the reference dominates every debounce point in (the claimed
/// cells, then the quiet ones), its pages per walk, and the K = 1000, P = 10 served cell side
/// by side.
pub fn headline(rows: &[RefreshRow]) -> Vec<String> {
    let mut out = Vec::new();
    let cells = cells(rows);
    let judge = |quiet: bool| -> Vec<(&FrontierCell, Vec<String>)> {
        cells
            .iter()
            .filter(|c| c.on_a_walk() && c.quiet == quiet)
            .filter_map(|c| c.undominated().map(|u| (c, u)))
            .collect()
    };
    let claimed = judge(false);
    if !claimed.is_empty() {
        let (won, missed, ties) = tally(&claimed);
        out.push(format!(
            "Coalescing frontier, a burst onto a refresh in flight (parked and served{}): the \
             reference (adaptive coalescing, the default) dominates every debounce point — no \
             more list round trips per burst at a lower median time to the final list — or \
             ties with it (as many round trips or fewer, medians within each other's 95 % \
             interval) in **{won} of {}** cells{}{}",
            if rows.iter().any(|r| r.neighbour) {
                ", beside a neighbouring session"
            } else {
                ""
            },
            claimed.len(),
            if missed.is_empty() {
                ".".to_owned()
            } else {
                format!("; not in: {}.", missed.join("; "))
            },
            if ties.is_empty() {
                String::new()
            } else {
                format!(" Ties: {}.", ties.join("; "))
            }
        ));
    }
    let quiet = judge(true);
    if !quiet.is_empty() {
        let (won, missed, _) = tally(&quiet);
        // Where the reference loses in a quiet process: where each point took its final list,
        // and whether (in nine iterations of ten or more, for every point named) it was the one
        // answer in flight.
        let mut same_answer = true;
        let sources: Vec<String> = quiet
            .iter()
            .filter(|(_, u)| !u.is_empty())
            .map(|(c, u)| {
                let named: Vec<String> = std::iter::once(REFERENCE)
                    .chain(u.iter().map(String::as_str))
                    .map(|name| match c.get(name) {
                        Some(RefreshRow {
                            final_from_in_flight: Some(n),
                            converged,
                            ..
                        }) => {
                            same_answer &= *converged > 0 && n * 10 >= converged * 9;
                            format!("{name} {n}/{converged}")
                        }
                        _ => {
                            same_answer = false;
                            format!("{name} –")
                        }
                    })
                    .collect();
                format!("{}: {}", c.label(), named.join(", "))
            })
            .collect();
        out.push(format!(
            "The cells also run in a quiet process (no neighbour): the reference dominates or \
             ties in **{won} of {}**{}",
            quiet.len(),
            if missed.is_empty() {
                ".".to_owned()
            } else {
                format!(
                    "; not in: {}. Final list from the request in flight (iterations): {}{}",
                    missed.join("; "),
                    sources.join("; "),
                    if same_answer {
                        " — the same answer, turned into readers' state sooner by a client \
                         whose own walks during the burst keep its process warm."
                    } else {
                        "."
                    }
                )
            }
        ));
    }
    let per_walk: Vec<(String, f64, u32)> = cells
        .iter()
        .filter(|c| c.on_a_walk())
        .filter_map(|c| {
            let r = c.get(REFERENCE)?;
            (r.walks.mean > 0.0).then(|| (c.label(), r.requests.mean / r.walks.mean, c.pages))
        })
        .collect();
    if !per_walk.is_empty() {
        let off: Vec<String> = per_walk
            .iter()
            .filter(|(_, ppw, p)| (ppw - f64::from(*p)).abs() > 1e-9)
            .map(|(l, ppw, _)| format!("{l}: {}", num(*ppw)))
            .collect();
        out.push(if off.is_empty() {
            "Pages per walk of the reference against the version-bound server: exactly P in \
             every cell (no walk restarted or abandoned)."
                .to_owned()
        } else {
            format!(
                "Pages per walk of the reference against the version-bound server differ from P \
                 in: {}.",
                off.join("; ")
            )
        });
    }
    let side_by_side = |c: &FrontierCell| -> String {
        c.rows
            .iter()
            .map(|r| {
                format!(
                    "{} {} round trips ({} walk{}) in {} ms",
                    r.strategy,
                    num(r.requests.mean),
                    num(r.walks.mean),
                    if r.walks.mean == 1.0 { "" } else { "s" },
                    if r.converged > 0 {
                        num(r.converge_ms.p50)
                    } else {
                        "–".into()
                    }
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    if let Some(c) = cells
        .iter()
        .find(|c| c.claimed() && c.served && c.pages == 10 && c.k == 1000)
    {
        out.push(format!(
            "K = 1000, P = 10, served during the burst (mean round trips, median time to the \
             final list): {}",
            side_by_side(c)
        ));
    }
    if let Some(c) = cells
        .iter()
        .filter(|c| !c.on_a_walk() && !c.quiet && c.pages == 10)
        .max_by_key(|c| c.k)
    {
        out.push(format!(
            "K = {}, P = 10, notifications {} ms apart onto an idle client — the trade-off the \
             coalescing gap makes, not a dominance claim: {}",
            c.k,
            c.spacing_ms,
            side_by_side(c)
        ));
    }
    out
}

fn run_line(r: &RunInfo, driver: &str) -> String {
    format!(
        "*refresh_contention: {} mode, {} CPUs, {:.0} s; {driver}.*",
        if r.quick { "quick" } else { "full" },
        r.cpus,
        r.seconds
    )
}

fn ms(d: &Dist, converged: u64) -> String {
    if converged == 0 {
        "did not converge".into()
    } else {
        format!("{} / {}", num(d.p50), num(d.p99))
    }
}

/// The section.
pub fn section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 1. Refresh contention: the coalescing frontier\n");
    let Some(g) = &b.refresh else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench refresh_contention` writes \
             `target/listsync-bench/refresh.json`; then run `listsync report`._\n"
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line(&g.run, &g.driver));
    let _ = writeln!(
        s,
        "A burst of K `list_changed` notifications (K one-update batches, applied back to back) \
         reaches the client while its refresh of a P-page list is in flight (the walk's last \
         page request is parked at the server until the whole burst has reached the client's \
         end of the wire). \
         *Round trips* are the `list` requests (pages) the burst caused; *walks* are the walks \
         among them (first-page requests, restarts included). Each strategy is one point of \
         the frontier per cell: fewer round trips is cheaper, less time to the final list is \
         fresher. A point *dominates* another when it has no more round trips (mean) at a lower \
         median time; the reference *ties* with a point when it has no more round trips and a \
         median time that is higher but within the run's noise: the 95 % confidence intervals \
         of the two medians (distribution-free, from the order statistics of each sample) \
         overlap.\n"
    );
    for n in &g.notes {
        let _ = writeln!(s, "- {n}");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "![the coalescing frontier](plots/refresh-frontier.svg)\n"
    );
    let cells = cells(&g.rows);
    let _ = writeln!(s, "### Does the reference dominate each debounce point?\n");
    let _ = writeln!(
        s,
        "Each debounce point: whether the reference dominates it (yes), ties with it (tie) or \
         neither (**no**), then its round trips and median ms. The claim is about a burst onto \
         a refresh in flight (parked, served); the spaced cells show what the coalescing gap \
         trades instead. At P = 1 the request in flight is the whole walk, and its answer (served \
         once the burst is in) carries the final list: the tables below say, per strategy, in \
         how many iterations the first answer with the final list was that one rather than the \
         answer to a request sent during the burst. Where every strategy takes the final list \
         from the same answer, the times differ by how soon each client turns that answer into \
         the list its readers see, not by how it coalesced; in a quiet process (the cells marked \
         *quiet*, run without the neighbour) that depends on how warm the strategy's own work \
         during the burst has kept the process.\n"
    );
    let debounces: Vec<String> = {
        let mut v: Vec<String> = Vec::new();
        for r in &g.rows {
            if r.strategy.starts_with("debounce-") && !v.contains(&r.strategy) {
                v.push(r.strategy.clone());
            }
        }
        v
    };
    let _ = writeln!(
        s,
        "| scenario | P | K | reference: round trips, ms (p50) | {} |",
        debounces.join(" | ")
    );
    let _ = writeln!(
        s,
        "|---|---:|---:|---|{}",
        debounces.iter().map(|_| "---|").collect::<String>()
    );
    for c in &cells {
        let Some(r) = c.get(REFERENCE) else {
            continue;
        };
        let verdicts: Vec<String> = debounces
            .iter()
            .map(|d| match c.get(d) {
                None => "–".into(),
                Some(x) => format!(
                    "{} — {}, {} ms",
                    match versus(r, x) {
                        Versus::Dominates => "yes",
                        Versus::Ties => "tie",
                        Versus::No => "**no**",
                    },
                    num(x.requests.mean),
                    if x.converged > 0 {
                        num(x.converge_ms.p50)
                    } else {
                        "–".into()
                    }
                ),
            })
            .collect();
        let _ = writeln!(
            s,
            "| {}{} | {} | {} | {}, {} | {} |",
            c.scenario(),
            if c.quiet { " (quiet)" } else { "" },
            c.pages,
            c.k,
            num(r.requests.mean),
            if r.converged > 0 {
                num(r.converge_ms.p50)
            } else {
                "–".into()
            },
            verdicts.join(" | ")
        );
    }
    let _ = writeln!(s);
    let groups = ["parked", "served", "spaced"]
        .into_iter()
        .flat_map(|scenario| [(scenario, false), (scenario, true)]);
    for (scenario, quiet) in groups {
        let in_group = |c: &&FrontierCell| c.scenario() == scenario && c.quiet == quiet;
        if !cells.iter().any(|c| in_group(&c)) {
            continue;
        }
        let _ = writeln!(
            s,
            "### {}{} (same run)\n",
            match scenario {
                "parked" => "Parked: every list request waits until the burst is in",
                "served" => "Served: the server answers new walks during the burst",
                _ => "Spaced: commits 1 ms apart onto an idle client",
            },
            if quiet {
                ", in a quiet process (no neighbour)"
            } else {
                ""
            }
        );
        // With no refresh in flight (spaced), no answer can come from one.
        let in_flight = scenario != "spaced";
        let _ = writeln!(
            s,
            "| strategy | P | K | iterations | round trips (mean / max) | walks (mean / max) | pages per walk | ms to final list (p50 / p99) | converged |{}",
            if in_flight {
                " final list from the request in flight |"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            "|---|---:|---:|---:|---|---|---:|---|---|{}",
            if in_flight { "---:|" } else { "" }
        );
        for c in cells.iter().filter(in_group) {
            for r in &c.rows {
                let bold = |t: String| {
                    if r.strategy == REFERENCE {
                        format!("**{t}**")
                    } else {
                        t
                    }
                };
                let per_walk = if r.walks.mean > 0.0 {
                    num(r.requests.mean / r.walks.mean)
                } else {
                    "–".into()
                };
                let from_in_flight = match (in_flight, r.final_from_in_flight) {
                    (false, _) => String::new(),
                    (true, Some(n)) => format!(" {n}/{} |", r.converged),
                    (true, None) => " – |".into(),
                };
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {} | {} | {} | {} | {}/{} |{}",
                    bold(r.strategy.clone()),
                    r.pages,
                    r.k,
                    r.iterations,
                    bold(format!(
                        "{} / {}",
                        num(r.requests.mean),
                        num(r.requests.max)
                    )),
                    format_args!("{} / {}", num(r.walks.mean), num(r.walks.max)),
                    per_walk,
                    ms(&r.converge_ms, r.converged),
                    r.converged,
                    r.iterations,
                    from_in_flight
                );
            }
        }
        let _ = writeln!(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(strategy: &str, served: bool, k: u32, rt: f64, walks: f64, ms: f64) -> RefreshRow {
        let d = |v: f64| {
            let mut x = [v];
            Dist::of(&mut x)
        };
        RefreshRow {
            strategy: strategy.into(),
            k,
            pages: 10,
            readers: 0,
            served_during_burst: served,
            spacing_ms: 0,
            neighbour: false,
            iterations: 5,
            converged: 5,
            final_from_in_flight: None,
            walks: d(walks),
            requests: d(rt),
            converge_ms: d(ms),
            read_ns: Dist::default(),
        }
    }

    /// The section as rendered from these rows.
    fn page_of(rows: Vec<RefreshRow>) -> String {
        let mut page = String::new();
        let mut b = BenchFile::new();
        b.refresh = Some(crate::bench::Group {
            run: RunInfo {
                started_unix: 1,
                quick: true,
                cpus: 2,
                seconds: 1.0,
            },
            driver: "d".into(),
            notes: vec![],
            rows,
        });
        section(&mut page, &b);
        page
    }

    /// A debounce point a little faster at the median, but within the noise, is a tie; one
    /// measurably faster is not; one with more round trips is dominated if it is slower.
    #[test]
    fn a_median_within_the_noise_is_a_tie() {
        let timed = |strategy: &str, rt: f64, ms: &[f64]| {
            let mut r = row(strategy, true, 1000, rt, rt, 0.0);
            r.converge_ms = Dist::of(&mut ms.to_vec());
            r
        };
        let spread: Vec<f64> = (0..40).map(|i| 1.0 + f64::from(i) / 10.0).collect();
        let reference = timed(REFERENCE, 1.0, &spread);
        let close: Vec<f64> = spread.iter().map(|v| v - 0.2).collect();
        let far: Vec<f64> = spread.iter().map(|v| v - 3.0).collect();
        let slow: Vec<f64> = spread.iter().map(|v| v + 1.0).collect();
        assert_eq!(
            versus(&reference, &timed("debounce-50ms", 1.0, &close)),
            Versus::Ties
        );
        assert_eq!(
            versus(&reference, &timed("debounce-50ms", 1.0, &far)),
            Versus::No
        );
        assert_eq!(
            versus(&reference, &timed("debounce-0ms", 3.0, &close)),
            Versus::Ties
        );
        assert_eq!(
            versus(&reference, &timed("debounce-0ms", 3.0, &slow)),
            Versus::Dominates
        );
        assert_eq!(
            versus(&reference, &timed("debounce-0ms", 0.5, &close)),
            Versus::No
        );
    }

    #[test]
    fn the_headline_counts_dominated_cells_and_names_the_rest() {
        let rows = vec![
            row("reference", true, 1000, 10.0, 1.0, 0.6),
            row("debounce-0ms", true, 1000, 135.0, 13.5, 1.6),
            row("debounce-300ms", true, 1000, 10.0, 1.0, 304.0),
            row("reference", false, 10, 10.0, 1.0, 2.0),
            row("debounce-0ms", false, 10, 10.0, 1.0, 1.5),
        ];
        let mut rows = rows;
        // The reference's served row says where its final list came from; the others were
        // written before the bench counted it.
        rows[0].final_from_in_flight = Some(3);
        let h = headline(&rows);
        assert!(h[0].contains("**1 of 2** cells"), "{h:?}");
        assert!(
            h[0].contains("parked, P = 10, K = 10 (debounce-0ms)"),
            "{h:?}"
        );
        assert!(h[1].contains("exactly P in every cell"), "{h:?}");
        assert!(
            h[2].contains("debounce-0ms 135 round trips (13.5 walks) in 1.60 ms"),
            "{h:?}"
        );
        let page = page_of(rows);
        assert!(
            page.contains(
                "| served | 10 | 1000 | 10.0, 0.600 | yes — 135, 1.60 ms | yes — 10.0, 304 ms |"
            ),
            "{page}"
        );
        assert!(
            page.contains("| parked | 10 | 10 | 10.0, 2.00 | **no** — 10.0, 1.50 ms | – |"),
            "{page}"
        );
        assert!(
            page.contains("| 0.600 / 0.600 | 5/5 | 3/5 |"),
            "the reference's row says 3 of its 5 converged iterations: {page}"
        );
        assert!(
            page.contains("| 1.60 / 1.60 | 5/5 | – |"),
            "a row without the count says nothing: {page}"
        );
    }

    /// Cells run without the neighbour the others had are judged apart from the claim, and
    /// where the reference loses one the headline says where each point took its final list.
    #[test]
    fn quiet_cells_are_judged_apart_and_say_where_the_final_list_came_from() {
        let beside = |mut r: RefreshRow| {
            r.neighbour = true;
            r
        };
        let mut rows = vec![
            beside(row("reference", true, 1000, 10.0, 1.0, 0.6)),
            beside(row("debounce-0ms", true, 1000, 135.0, 13.5, 1.6)),
            row("reference", true, 100, 1.0, 1.0, 0.3),
            row("debounce-0ms", true, 100, 3.0, 3.0, 0.2),
        ];
        rows[2].final_from_in_flight = Some(5);
        rows[3].final_from_in_flight = Some(4);
        let h = headline(&rows);
        assert!(h[0].contains("beside a neighbouring session"), "{h:?}");
        assert!(h[0].contains("**1 of 1** cells."), "{h:?}");
        assert!(h[1].contains("quiet process"), "{h:?}");
        assert!(h[1].contains("**0 of 1**"), "{h:?}");
        assert!(
            h[1].contains("served (quiet), P = 10, K = 100 (debounce-0ms)"),
            "{h:?}"
        );
        assert!(
            h[1].contains("reference 5/5, debounce-0ms 4/5."),
            "four of five is not nine of ten: no claim that it was the same answer: {h:?}"
        );
        let mut same = rows.clone();
        same[3].final_from_in_flight = Some(5);
        let h = headline(&same);
        assert!(
            h[1].contains("reference 5/5, debounce-0ms 5/5 — the same answer"),
            "{h:?}"
        );
        let page = page_of(rows);
        assert!(
            page.contains("| served (quiet) | 10 | 100 | 1.00, 0.300 | **no** — 3.00, 0.200 ms |"),
            "{page}"
        );
        assert!(
            page.contains("| served | 10 | 1000 | 10.0, 0.600 | yes — 135, 1.60 ms |"),
            "{page}"
        );
        assert!(
            page.contains("in a quiet process (no neighbour) (same run)"),
            "{page}"
        );
    }
}
