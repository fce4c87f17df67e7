//! When a stored baseline cannot tell a small change: the machine moved
//! since it, was busier beside one run, or changed speed during one; the
//! rows such a rule covers become *cannot tell* (exit 125).

use super::{Limits, Line, Verdict};
use crate::model::record::RunRecord;

/// Against a baseline measured on what was in effect another machine
/// (`why`, said once on stderr): a row's regressed or improved stands only
/// where its change (log) is beyond `beyond`; an ok, or a change within
/// it, cannot be told.
pub(super) fn withhold(rows: &mut [Line], why: &str, beyond: f64) {
    eprintln!("kdelta: {why}");
    for l in rows {
        let stands = l.change.is_some_and(|c| c.abs() > beyond);
        if let Some(v) = &l.verdict {
            let kept = match v {
                Verdict::CannotTell(_) => true,
                Verdict::Regressed | Verdict::Improved => stands,
                Verdict::Ok(_) => false,
            };
            if !kept {
                let suffix = format!(": {}", v.text());
                l.text = format!("{}: cannot tell ({why})", l.text.trim_end_matches(suffix.as_str()));
                l.verdict = Some(Verdict::CannotTell(why.to_string()));
            }
        }
    }
}

/// Why the stored figures cannot tell a small change between `base` and
/// `run`, each with the smallest change (log) still judged. A slower
/// machine looks like a slower build, and a faster one hides a slower
/// build: against a baseline the machine has moved away from by `moved`
/// (log, its reference loops), only a change beyond the limit plus twice
/// that move is judged (regressed or improved). Where other processes kept
/// one side's machine busier, what a busy neighbour CPU does is not known
/// in advance (2-13 % on a compiled loop here), nor how far a run's own
/// figures moved when the machine changed speed while it ran (its
/// reference loops before and after disagree by more than the limit):
/// then only a change of 2x or more is judged, as the sampler's busy veto
/// does. An "ok" could hide a slowdown as large, so it cannot be told (125:
/// measure both builds now, with `--within` or `--baseline-cmd`, or record
/// the baseline again). Several may hold: the strictest bar stands, and
/// every reason is said.
pub(super) fn withholding(base: &RunRecord, run: &RunRecord, lim: &Limits) -> Vec<(String, f64)> {
    use crate::stats::verdict::{machine_busier, machine_moved, machine_unsteady};
    let moved = machine_moved(&base.environment, &run.environment, lim.max_regression_pct);
    let busier = machine_busier(&base.environment, &run.environment);
    let unsteady = [base, run].into_iter().find_map(|r| {
        let (kind, pct) = machine_unsteady(&r.environment, lim.allowed_pct())?;
        let way = if pct > 0.0 { "slower" } else { "faster" };
        Some(format!(
            "the machine's speed changed during {}: its {kind} reference loop ran {:.1}% {way} after its last \
             worker than before its first",
            crate::report::header::run_name(r),
            pct.abs()
        ))
    });
    let rules = [
        moved.map(|(why, moved)| (why, (1.0 + lim.allowed_pct() / 100.0).ln() + 2.0 * moved)),
        busier.map(|why| (why, 2f64.ln())),
        unsteady.map(|why| (why, 2f64.ln())),
    ];
    rules.into_iter().flatten().collect()
}
