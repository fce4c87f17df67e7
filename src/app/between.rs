//! What two runs measured apart can tell: where the machine moved between
//! them, was busier beside one, or changed speed during one, only a change
//! beyond a bar is believed. `check --against` turns a row below it into
//! *cannot tell*; `compare RUN_A RUN_B` withholds its star.

use crate::model::record::RunRecord;

/// Why the stored figures cannot tell a small change between `base` and
/// `run` (`max_change_pct`: the change allowed, `--max-regression` or the
/// threshold; `allowed_pct`: it plus `--drift`), each with the smallest change (log) still judged. A slower
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
/// every reason is said. `None` when none holds.
pub(super) fn withholding(base: &RunRecord, run: &RunRecord, max_change_pct: f64, allowed_pct: f64) -> Option<Bar> {
    use crate::stats::verdict::{machine_busier, machine_moved, machine_unsteady};
    let moved = machine_moved(&base.environment, &run.environment, max_change_pct);
    let busier = machine_busier(&base.environment, &run.environment);
    let unsteady = [base, run].into_iter().find_map(|r| {
        let (kind, pct) = machine_unsteady(&r.environment, allowed_pct)?;
        let way = if pct > 0.0 { "slower" } else { "faster" };
        Some(format!(
            "the machine's speed changed during {}: its {kind} reference loop ran {:.1}% {way} after its last \
             worker than before its first",
            crate::report::header::run_name(r),
            pct.abs()
        ))
    });
    let rules = [
        moved.map(|(why, moved)| (why, (1.0 + allowed_pct / 100.0).ln() + 2.0 * moved)),
        busier.map(|why| (why, 2f64.ln())),
        unsteady.map(|why| (why, 2f64.ln())),
    ];
    let (whys, bars): (Vec<String>, Vec<f64>) = rules.into_iter().flatten().unzip();
    let beyond = bars.into_iter().reduce(f64::max)?;
    Some(Bar { why: whys.join("; "), beyond })
}

/// What two runs cannot tell: every reason, and the smallest change (log)
/// still judged.
pub(super) struct Bar {
    pub(super) why: String,
    pub(super) beyond: f64,
}
