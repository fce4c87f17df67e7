//! What two runs measured apart can tell: where the machine moved between
//! them, was busier beside one, or changed speed during one, only a change
//! beyond a bar is believed. `check --against` turns a row below it into
//! *cannot tell*; `compare RUN_A RUN_B` withholds its star.

use crate::model::record::RunRecord;
use crate::stats::defaults::LARGE_CHANGE_LN;

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
/// `since`: how the message names `base` (`the baseline`, `run 1`).
pub(super) fn withholding(
    (base, since): (&RunRecord, &str),
    run: &RunRecord,
    max_change_pct: f64,
    allowed_pct: f64,
) -> Option<Bar> {
    use crate::stats::verdict::{machine_busier, machine_moved, machine_unsteady};
    let moved = machine_moved(&base.environment, &run.environment, max_change_pct)
        .map(|(how, by)| (format!("the machine's speed changed since {since}: {how}"), by));
    let busier = machine_busier(&base.environment, &run.environment);
    let unsteady = [base, run].into_iter().find_map(|r| {
        let (kind, pct) = machine_unsteady(&r.environment, allowed_pct)?;
        let way = if pct > 0.0 { "slower" } else { "faster" };
        Some(format!(
            "the machine's speed changed during {}: its reference {kind} ran {:.1}% {way} after its last \
             worker than before its first",
            crate::report::header::run_name(r),
            pct.abs()
        ))
    });
    let kinds = [moved.is_some(), busier.is_some(), unsteady.is_some()];
    let rules = [
        moved.map(|(why, moved)| (why, (1.0 + allowed_pct / 100.0).ln() + 2.0 * moved)),
        busier.map(|why| (why, LARGE_CHANGE_LN)),
        unsteady.map(|why| (why, LARGE_CHANGE_LN)),
    ];
    let (whys, bars): (Vec<String>, Vec<f64>) = rules.into_iter().flatten().unzip();
    let beyond = bars.into_iter().reduce(f64::max)?;
    Some(Bar { why: whys.join("; "), beyond, kinds })
}

/// What two runs cannot tell: every reason, the smallest change (log)
/// still judged, and which rules held (moved, busier, unsteady).
pub(super) struct Bar {
    pub(super) why: String,
    pub(super) beyond: f64,
    pub(super) kinds: [bool; 3],
}

impl Bar {
    /// `of less than 2x`, `within 5.0%`: the changes left unstarred.
    pub(super) fn within(&self) -> String {
        if self.beyond >= LARGE_CHANGE_LN - 1e-9 {
            "of less than 2x".to_string()
        } else {
            format!("within {:.1}%", (self.beyond.exp() - 1.0) * 100.0)
        }
    }
}

/// One stderr line per kind of withholding among runs compared with one
/// first run (`base`), each pair given as (its later run, its bar): the
/// first pair of a kind says why in full, the others of that kind are named.
pub(super) fn say(base: i64, pairs: &[(i64, Bar)]) {
    for line in lines(base, pairs) {
        eprintln!("kdelta: {line}");
    }
}

fn lines(base: i64, pairs: &[(i64, Bar)]) -> Vec<String> {
    let mut said: Vec<[bool; 3]> = Vec::new();
    let mut out = Vec::new();
    for (run, bar) in pairs {
        if said.contains(&bar.kinds) {
            continue;
        }
        said.push(bar.kinds);
        let alike: Vec<String> =
            pairs.iter().filter(|(r, b)| r != run && b.kinds == bar.kinds).map(|(r, _)| r.to_string()).collect();
        let also = match alike.len() {
            0 => String::new(),
            1 => format!(" (likewise against run {})", alike[0]),
            _ => format!(" (likewise against runs {})", alike.join(", ")),
        };
        out.push(format!("{}: a change {} between runs {base} and {run} is not starred{also}", bar.why, bar.within()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bar(why: &str, pct: f64, kinds: [bool; 3]) -> Bar {
        Bar { why: why.to_string(), beyond: (1.0 + pct / 100.0f64).ln(), kinds }
    }

    #[test]
    fn a_report_says_each_kind_of_withholding_once_and_names_the_runs_alike() {
        let moved = [true, false, false];
        let pairs = [
            (2, bar("moved 4.0%", 9.0, moved)),
            (3, bar("busier", 100.0, [false, true, false])),
            (4, bar("moved 4.2%", 9.4, moved)),
            (5, bar("moved 3.9%", 8.8, moved)),
        ];
        assert_eq!(
            lines(1, &pairs),
            [
                "moved 4.0%: a change within 9.0% between runs 1 and 2 is not starred (likewise against runs 4, 5)",
                "busier: a change of less than 2x between runs 1 and 3 is not starred",
            ]
        );
        assert_eq!(lines(1, &pairs[1..2]), ["busier: a change of less than 2x between runs 1 and 3 is not starred"]);
        assert!(lines(1, &[]).is_empty());
    }
}
