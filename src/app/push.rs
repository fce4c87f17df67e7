//! `kdelta push [RUN...] --to postgresql://...`: copy runs from a local
//! SQLite file to the shared store, for hosts that measure offline. Each
//! run goes in one transaction with every result as stored (raw samples,
//! per-sample records, host snapshot), under an origin key made of where it
//! was measured (hostname, start, process id, local id), so pushing it again
//! stores nothing.

use super::*;
use crate::model::record::{RunRecord, RunStatus};

/// Where a run was measured, the same however often it is pushed.
fn origin(run: &RunRecord) -> String {
    let host = run.host.get("hostname").and_then(|h| h.as_str()).unwrap_or("?");
    format!("{host}|{}|{}|{}", run.started, run.pid.map(|p| p.to_string()).unwrap_or_default(), run.id)
}

/// `to` is a PostgreSQL URL: the command line refuses anything else.
pub(super) fn cmd_push(db: &Option<PathBuf>, keys: &[String], to: &str) -> Result<u8> {
    let src = stored::open_existing(db)?;
    if src.is_shared() {
        return Err(bad_input(format!(
            "--db {} is already a shared store: push copies from a local SQLite file (--db PATH)",
            src.path().display()
        )));
    }
    let mut runs: Vec<RunRecord> = if keys.is_empty() {
        src.runs(i64::MAX as usize)?.into_iter().map(|(r, _)| r).collect()
    } else {
        keys.iter().map(|k| src.find_run(k)).collect::<Result<_>>()?
    };
    runs.sort_by_key(|r| r.id);
    runs.dedup_by_key(|r| r.id);
    let mut dest = Store::open(Path::new(to))?;
    let t0 = std::time::Instant::now();
    let (mut pushed, mut results, mut there, mut running) = (0, 0, 0, Vec::new());
    for run in &runs {
        if run.status == RunStatus::Running {
            running.push(run.id.to_string());
            continue;
        }
        // As stored: the shared store keeps what the file kept.
        let rs = src.results(run.id)?;
        match dest.import_run(&origin(run), run, &rs)? {
            Some(_) => {
                pushed += 1;
                results += rs.len();
            }
            None => there += 1,
        }
    }
    eprintln!(
        "kdelta: pushed {pushed} run(s) ({results} results) to {} in {:.2} s; {there} already there{}",
        dest.path().display(),
        t0.elapsed().as_secs_f64(),
        if running.is_empty() { String::new() } else { format!("; still running, not pushed: {}", running.join(", ")) }
    );
    Ok(exit::OK)
}
