//! When a stored baseline cannot tell a small change: the machine moved
//! since it, was busier beside one run, or changed speed during one; the
//! rows such a rule covers become *cannot tell* (exit 125).

use super::{Line, Verdict};

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
