//! `kdelta doctor`: every setting of this machine that moves measurements,
//! its value, why it matters and what kdelta recommends; `--apply` makes the
//! changes kdelta can make through the journaled kernel settings
//! (`config/knobs.rs` checks and spells them, `harness/journal.rs` records
//! each original before its write), `--reset` replays that journal.
//!
//! Everything is read below the sysfs root (`/` or `$KDELTA_SYSFS_ROOT`), so
//! tests use fake trees. The journal `--apply` writes is marked `tuned`: it
//! stays when the doctor ends, the next run adopts it and restores it all at
//! its end (`harness/knobs.rs`), and `kdelta doctor --reset` or `kdelta
//! restore` replay it at any time.
//!
//! Besides settings, the doctor measures which CPUs slow which (`interfere.rs`:
//! vCPUs that share a core without the topology saying so) and writes what
//! it finds to the record the sampler reads (`measure/interfere.rs`).
//!
//! Files: `checks.rs` the checks, one function per setting; `interfere.rs`
//! the interference measurement; this file the findings, their text and
//! JSON, `--apply` and `--reset`.

mod checks;
pub(crate) mod interfere;
mod pairing;
#[cfg(test)]
mod tests;

use crate::config::knobs as ck;
use crate::cpuset::CpuSet;
use crate::error::bad_input;
use crate::harness::journal::{self, Journal};
use crate::model::knob::KnobSetting;
use crate::sys::knobs as k;
use anyhow::Result;
use serde::Serialize;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// What kdelta makes of a setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Verdict {
    /// As kdelta recommends.
    Ok,
    /// kdelta recommends a change (by `--apply` or by hand).
    Change,
    /// Nothing to change, but it moves measurements: know it.
    Note,
}

impl Verdict {
    fn tag(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Change => "change",
            Verdict::Note => "note",
        }
    }
}

/// One setting as the doctor sees it.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Finding {
    pub(crate) setting: &'static str,
    /// Its value here (or what is missing).
    pub(crate) value: String,
    pub(crate) why: String,
    pub(crate) recommend: String,
    pub(crate) verdict: Verdict,
    /// The kernel settings `--apply` writes for it, as configuration
    /// modifiers (`thp=madvise`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) apply: Vec<String>,
    /// How to make the change by hand, when `--apply` cannot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) by_hand: Option<String>,
    #[serde(skip)]
    pub(crate) settings: Vec<KnobSetting>,
}

impl Finding {
    fn new(setting: &'static str, value: impl Into<String>, verdict: Verdict) -> Finding {
        Finding {
            setting,
            value: value.into(),
            why: String::new(),
            recommend: String::new(),
            verdict,
            apply: Vec::new(),
            by_hand: None,
            settings: Vec::new(),
        }
    }

    fn why(mut self, s: impl Into<String>) -> Finding {
        self.why = s.into();
        self
    }

    fn recommend(mut self, s: impl Into<String>) -> Finding {
        self.recommend = s.into();
        self
    }

    fn by_hand(mut self, s: impl Into<String>) -> Finding {
        self.by_hand = Some(s.into());
        self
    }

    /// `--apply` writes `key=value` (a kernel-setting modifier, parsed as
    /// `+key=value` is).
    fn applies(mut self, key: &str, value: &str) -> Finding {
        let s = ck::parse(key, value).expect("the doctor's own settings parse");
        self.apply.push(s.name());
        self.settings.push(s);
        self
    }
}

/// The doctor's whole answer.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Report {
    /// The CPUs kdelta would measure on (every usable CPU, or `--cpus`).
    pub(crate) measured_cpus: String,
    /// The window steal time and the busiest processes were sampled over.
    pub(crate) window_s: f64,
    pub(crate) findings: Vec<Finding>,
    /// Which CPUs slow which, as measured now (`interfere.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interference: Option<crate::measure::interfere::Record>,
    /// Where that record was written, or why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) interference_record: Option<String>,
}

/// Examine the machine below `root` for measurements on `measured`,
/// sampling steal time and processes over `window`.
pub(crate) fn examine(root: &Path, measured: &CpuSet, window: Duration) -> Report {
    Report {
        measured_cpus: measured.to_string(),
        window_s: window.as_secs_f64(),
        findings: checks::all(root, measured, window),
        interference: None,
        interference_record: None,
    }
}

/// Measure which of `cpus` slow which, write the record to `path` (the
/// state directory's, `measure::interfere::path`) and add the finding.
pub(crate) fn add_interference(r: &mut Report, root: &Path, cpus: &CpuSet, path: Option<&Path>) {
    use crate::measure::interfere as mi;
    let mut rec = interfere::measure(mi::MachineId::read(root), cpus);
    if let Some(rec) = &mut rec {
        let v: Vec<u32> = cpus.iter().collect();
        rec.pairing = pairing::measure([v[0], v[1]]);
    }
    let unquiet = rec.as_ref().and_then(mi::Record::unquiet);
    r.interference_record = match (&rec, path, unquiet) {
        (None, _, _) => None,
        (Some(_), None, _) => Some("not written: no state directory ($XDG_STATE_HOME or $HOME)".into()),
        (Some(_), _, Some((w, cpu))) => Some(format!(
            "not written: measured while other tasks used CPU {cpu} {:.0} % of the time (the earlier record, if any, is kept)",
            w * 100.0
        )),
        (Some(rec), Some(p), None) => Some(match mi::save(p, rec) {
            Ok(()) => p.display().to_string(),
            Err(e) => format!("not written: {e:#}"),
        }),
    };
    r.findings.push(interference_finding(rec.as_ref(), cpus, r.interference_record.as_deref()));
    match rec.as_ref().map(|r| r.pairing.as_ref()) {
        Some(Some(p)) => r.findings.push(pairing_finding(p)),
        Some(None) => r.findings.push(
            Finding::new(
                "interleave",
                "not measured: too few samples ran through without being preempted (a busy machine)",
                Verdict::Note,
            )
            .why("the way of pairing compared values is chosen from pairs of identical loops timed here")
            .recommend("run kdelta doctor again on a quiet machine; until then a run takes turns (samples)"),
        ),
        None => {}
    }
    r.interference = rec;
}

/// The finding for the interleave measurement: which way a run takes by default.
pub(crate) fn pairing_finding(p: &crate::measure::interfere::Pairing) -> Finding {
    use crate::measure::interfere::PairingMode;
    let (value, recommend) = match p.best {
        PairingMode::Alternate => (
            "compared values take turns on one CPU",
            "nothing: a run with no --interleave takes turns sample by sample (samples); \
             --interleave duet forces the other way",
        ),
        PairingMode::Duet => (
            "compared values run at the same moment on two CPUs",
            "nothing: a run with no --interleave samples compared values at the same moment (duet); \
             --interleave samples forces the other way",
        ),
    };
    Finding::new("interleave", format!("{value}: {}", p.describe()), Verdict::Ok)
        .why(
            "a comparison is judged on the ratios of adjacent pairs: the way of pairing whose ratios \
             spread least here finds a change soonest",
        )
        .recommend(recommend)
}

/// The finding for a measured interference record (`None`: not measured).
pub(crate) fn interference_finding(
    rec: Option<&crate::measure::interfere::Record>,
    cpus: &CpuSet,
    written: Option<&str>,
) -> Finding {
    const SETTING: &str = "vCPU interference";
    let why = "CPUs that share a core's caches or front end (SMT siblings, or vCPUs a hypervisor \
               placed so without saying so) slow each other: a sample on one is slower while the other \
               is busy, with none of its time taken";
    let Some(rec) = rec else {
        return Finding::new(
            SETTING,
            format!("not measured on {} CPUs (2 to {})", cpus.len(), interfere::MAX_CPUS),
            Verdict::Note,
        )
        .why(why)
        .recommend("nothing: SMT siblings from the topology count as interfering");
    };
    let figures = |p: &crate::measure::interfere::Pair| -> String {
        interfere::KINDS
            .iter()
            .filter_map(|k| p.slowdown.get(*k).map(|s| format!("{k} {:+.0} %", s * 100.0)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let hits: Vec<String> = rec
        .pairs
        .iter()
        .filter(|p| p.interferes)
        .map(|p| format!("CPU {} slows CPU {} ({})", p.busy, p.cpu, figures(p)))
        .collect();
    let record = written.map(|w| format!(" (record: {w})")).unwrap_or_default();
    // A "quiet" side that was not: the slowdowns understate.
    let unquiet = match rec.unquiet() {
        Some((w, cpu)) => {
            format!(
                "; measured while other tasks used CPU {cpu} {:.0} % of the time: run again on a quiet machine",
                w * 100.0
            )
        }
        _ => String::new(),
    };
    if hits.is_empty() {
        let most = rec.pairs.iter().flat_map(|p| p.slowdown.values().copied()).fold(0.0f64, f64::max);
        Finding::new(
            SETTING,
            format!(
                "no CPU slows another consistently by more than {:.0} % (largest median {:+.0} %){unquiet}",
                rec.limit * 100.0,
                most * 100.0
            ),
            if unquiet.is_empty() { Verdict::Ok } else { Verdict::Note },
        )
        .why(why)
        .recommend(format!("nothing{record}"))
    } else {
        Finding::new(SETTING, hits.join("; ") + &unquiet, Verdict::Note).why(why).recommend(format!(
            "kdelta counts these CPUs' busy time as disturbance of samples on the CPUs they slow{record}; \
             measure where they stay quiet, or on one CPU of each pair"
        ))
    }
}

/// The report as text: one block per setting, the changes to make last.
pub(crate) fn render(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "kdelta doctor: settings that move measurements (measured CPUs {}; sampled over {:.1} s)",
        r.measured_cpus, r.window_s
    );
    for f in &r.findings {
        let _ = writeln!(o, "\n[{}] {}: {}", f.verdict.tag(), f.setting, f.value);
        let _ = writeln!(o, "    why: {}", f.why);
        let _ = writeln!(o, "    kdelta recommends: {}", f.recommend);
        if !f.apply.is_empty() && f.verdict == Verdict::Change {
            let _ = writeln!(o, "    --apply sets: {}", f.apply.join(", "));
        }
        if let Some(h) = &f.by_hand {
            let _ = writeln!(o, "    by hand: {h}");
        }
    }
    let change: Vec<&Finding> = r.findings.iter().filter(|f| f.verdict == Verdict::Change).collect();
    let auto = change.iter().filter(|f| !f.settings.is_empty()).count();
    let _ = writeln!(
        o,
        "\n{} to change, {auto} of them by `kdelta doctor --apply` (restored at the end of the next run, by `kdelta doctor --reset` or `kdelta restore`)",
        change.len()
    );
    o
}

/// `--apply`: every change kdelta recommends that it can make, each file's
/// original journaled (in a journal marked `tuned`, left in place) before it
/// is written. Refused (bad input) while a journal exists. Returns one line
/// per setting: applied, already so, or why not.
pub(crate) fn apply(root: &Path, r: &Report) -> Result<Vec<String>> {
    let path = journal::path(root);
    if journal::read(&path)?.is_some() {
        return Err(bad_input(format!(
            "kernel settings are already changed (journal {}): `kdelta doctor --reset` or `kdelta restore` first",
            path.display()
        )));
    }
    let mut j: Option<Journal> = None;
    let mut lines = Vec::new();
    for f in r.findings.iter().filter(|f| f.verdict == Verdict::Change) {
        for s in &f.settings {
            let name = s.name();
            if let Err(why) = ck::check(s, root) {
                lines.push(format!("not applied: {why}"));
                continue;
            }
            let targets = match ck::targets(s, root) {
                Ok(t) => t,
                Err(why) => {
                    lines.push(format!("not applied: {name}: {why}"));
                    continue;
                }
            };
            let mut was = Vec::new();
            for (p, v) in targets {
                let now = k::current_value(&p).map_err(|e| anyhow::anyhow!("reading {}: {e}", p.display()))?;
                if now == v {
                    continue;
                }
                let real = ck::confined(root, &p).map_err(|e| anyhow::anyhow!("not writing {v:?}: {e}"))?;
                if j.is_none() {
                    j = Some(Journal::create_tuned(&path, root)?);
                }
                j.as_mut().expect("just made").will_write(&p, &now)?;
                k::write_text(&real, &v).map_err(|e| anyhow::anyhow!("writing {v:?} to {}: {e}", p.display()))?;
                k::settle(&real, &v);
                was.push(now);
            }
            if was.is_empty() {
                lines.push(format!("{name}: already so"));
            } else {
                lines.push(format!("applied {name} (was {})", was.join(", ")));
            }
        }
    }
    if j.is_some() {
        lines.push(format!(
            "journal {}: restored at the end of the next run, by `kdelta doctor --reset` or `kdelta restore`",
            path.display()
        ));
    } else {
        lines.push("nothing changed".to_string());
    }
    Ok(lines)
}

/// `--reset`: replay the journal (the doctor's, or one a killed kdelta left).
pub(crate) fn reset(root: &Path) -> Result<Vec<String>> {
    let path = journal::path(root);
    Ok(match journal::replay(&path, root)? {
        Some(mut done) => {
            done.push(format!("restored; {} removed", path.display()));
            done
        }
        None => vec![format!("nothing to reset: no journal at {}", path.display())],
    })
}
