//! What `listsync host --report DIR` keeps: the summary of a host's runs
//! (`DIR/hosts/NAME-VERSION.json`, [`listsync_harness::hosts::summary`]) and the files of run 1
//! of each plan (`DIR/hosts/NAME-VERSION/PLAN/`: `session.jsonl`, `model.json`,
//! `judgement.json`), their machine paths written as placeholders: the listsync executable as
//! `listsync`, the run's private temporary directory as `$TMP`, the runs' directory as `$OUT`,
//! and the rest as [`listsync_harness::portable`] writes them.

use crate::judge::HostProperty;
use crate::{HostOptions, HostRef, HostReport, Tally};
use listsync_harness::hosts::summary::{Count, HostSummary, PlanSummary, VerdictCounts};
use listsync_session::audit::Status;
use std::path::Path;

fn verdicts(name: &str, t: Tally, detail: String) -> VerdictCounts {
    VerdictCounts {
        property: name.to_owned(),
        violated: t.violated,
        holds: t.holds,
        not_observed: t.not_observed,
        detail,
    }
}

/// The detail shown for one property over a plan's runs: the first violation's, else the first
/// run's.
fn shown_detail<'a>(verdicts: impl Iterator<Item = (Status, &'a String)>) -> String {
    let all: Vec<_> = verdicts.collect();
    all.iter()
        .find(|(s, _)| *s == Status::Violated)
        .or(all.first())
        .map(|(_, d)| (*d).clone())
        .unwrap_or_default()
}

/// The summary of one plan's runs.
pub fn plan_summary(r: &HostReport) -> PlanSummary {
    let mut host = Vec::new();
    for p in HostProperty::ALL {
        let t = r.tally(p);
        let detail = shown_detail(
            r.runs
                .iter()
                .filter_map(|x| x.judgement.verdicts.iter().find(|v| v.property == p))
                .map(|v| (v.status, &v.detail)),
        );
        host.push(verdicts(p.as_str(), t, detail));
    }
    let mut audit = Vec::new();
    for p in listsync_core::property::Property::ALL {
        let t = r.audit_tally(p);
        if t.violated + t.holds == 0 {
            continue;
        }
        let detail = shown_detail(
            r.runs
                .iter()
                .flat_map(|x| x.audit.verdicts.iter().filter(move |v| v.property == p))
                .map(|v| (v.status, &v.detail)),
        );
        audit.push(verdicts(p.as_str(), t, detail));
    }
    let mut host_exits: Vec<Count> = Vec::new();
    for x in &r.runs {
        match host_exits.iter_mut().find(|c| c.value == x.host_exit) {
            Some(c) => c.runs += 1,
            None => host_exits.push(Count {
                value: x.host_exit.clone(),
                runs: 1,
            }),
        }
    }
    let secs = r.runs.iter().map(|x| (x.seconds * 10.0).round() / 10.0);
    PlanSummary {
        plan: r.plan.clone(),
        runs: r.runs.len(),
        seconds: (
            secs.clone().fold(f64::INFINITY, f64::min),
            secs.fold(0.0, f64::max),
        ),
        host_exits,
        side_requests: r.runs.iter().map(|x| x.side_requests).sum(),
        host,
        audit,
    }
}

/// `text` with the run's machine paths as placeholders (see the module's doc).
pub fn placeholders(text: &str, opts: &HostOptions) -> String {
    let mut s = text.replace(&*opts.listsync.to_string_lossy(), "listsync");
    if let Ok(out) = std::path::absolute(&opts.out) {
        s = s.replace(&*out.to_string_lossy(), "$OUT");
    }
    let tmp = std::env::temp_dir().join("listsync-host-");
    let tmp = tmp.to_string_lossy();
    while let Some(at) = s.find(&*tmp) {
        let from = at + tmp.len();
        let end = s[from..]
            .find(['/', '"', ' ', '\\'])
            .map_or(s.len(), |i| from + i);
        s.replace_range(at..end, "$TMP");
    }
    listsync_harness::portable::portable(&s)
}

/// Writes the summary of `reports` (merged into the one `DIR/hosts/NAME-VERSION.json` holds)
/// and keeps run 1 of each plan; returns the summary's path.
pub fn keep(
    host: &HostRef,
    reports: &[HostReport],
    opts: &HostOptions,
    dir: &Path,
) -> Result<std::path::PathBuf, String> {
    let label = host.label().replace('@', "-");
    let hosts = dir.join("hosts");
    let file = hosts.join(format!("{label}.json"));
    let io = |p: &Path, e: std::io::Error| format!("{}: {e}", p.display());
    let mut summary = match std::fs::read_to_string(&file) {
        Ok(text) => serde_json::from_str::<HostSummary>(&text)
            .map_err(|e| format!("{}: {e}", file.display()))?,
        Err(_) => HostSummary {
            name: host.manifest.name.clone(),
            version: host.version.clone(),
            description: host.manifest.description.clone(),
            era: opts.era.clone(),
            plans: Vec::new(),
        },
    };
    summary.description = host.manifest.description.clone();
    if summary.era != opts.era {
        return Err(format!(
            "{}: was measured in era {}, not {} (give another --report directory)",
            file.display(),
            summary.era,
            opts.era
        ));
    }
    for r in reports {
        summary.put(plan_summary(r));
        let Some(run) = r.runs.first() else { continue };
        let keep = hosts.join(&label).join(&r.plan);
        std::fs::create_dir_all(&keep).map_err(|e| io(&keep, e))?;
        for name in ["session.jsonl", "model.json", "judgement.json"] {
            let from = run.dir.join(name);
            let text = std::fs::read_to_string(&from).map_err(|e| io(&from, e))?;
            let to = keep.join(name);
            std::fs::write(&to, placeholders(&text, opts)).map_err(|e| io(&to, e))?;
        }
    }
    let text = serde_json::to_string_pretty(&summary).map_err(|e| e.to_string())?;
    std::fs::create_dir_all(&hosts).map_err(|e| io(&hosts, e))?;
    std::fs::write(&file, placeholders(&text, opts) + "\n").map_err(|e| io(&file, e))?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn machine_paths_become_placeholders() {
        let opts = HostOptions {
            listsync: "/opt/x/listsync".into(),
            hosts_dir: "/h".into(),
            cache: "/c".into(),
            era: "2025-11-25".into(),
            repeat: 1,
            catch_up: 0,
            out: "/runs".into(),
        };
        let tmp = std::env::temp_dir().join("listsync-host-Ab12Cd");
        let text = format!(
            "[\"/opt/x/listsync\",\"serve\",\"{t}/admin-0.sock\",\"/runs/a/1\",\"{t}\"]",
            t = tmp.display()
        );
        assert_eq!(
            placeholders(&text, &opts),
            r#"["listsync","serve","$TMP/admin-0.sock","$OUT/a/1","$TMP"]"#
        );
    }
}
