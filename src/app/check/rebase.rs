//! `check --against BASE --baseline-cmd COMMAND`: when the machine's speed
//! has moved since the stored baseline (its reference loops,
//! `stats::verdict::machine_moved`), the stored figures can no longer tell
//! a small change; rather than answer 125, the baseline's build (COMMAND)
//! is measured again, interleaved with the new one in one run, and judged
//! as `--within` judges it. Only a `cmd` check has a build to re-run.

use crate::bench::cmd::spec;
use crate::cli::{CheckArgs, RunArgs, Setting};
use crate::error::bad_input;
use anyhow::Result;
use std::time::{Duration, Instant};

/// What the baseline's build is called beside the new one.
pub(super) const NAME: &str = "baseline";

/// The `--param` settings of a run measuring the baseline's build `command`
/// (named [`NAME`]) first, then the `--cmd` commands: refused before anything
/// runs when there is no `--cmd`, the name is taken, or the command is empty.
pub(super) fn settings(run: &RunArgs, command: &str) -> Result<Vec<Setting>> {
    let last = |n: &str| run.param.iter().rev().find(|s| s.name == n).map(|s| s.value.as_str());
    let Some(cmd) = last(spec::CMD) else {
        return Err(bad_input(
            "--baseline-cmd measures the baseline's build beside the new one as a command: \
             give the new one with `check cmd --cmd COMMAND`",
        ));
    };
    let both = spec::with_first(cmd, last(spec::COMMANDS), NAME, command)
        .map_err(|e| bad_input(format!("--baseline-cmd {command:?}: {e}")))?;
    let mut out: Vec<Setting> =
        run.param.iter().filter(|s| s.name != spec::CMD && s.name != spec::COMMANDS).cloned().collect();
    out.extend(both.into_iter().map(|(name, value)| Setting { name, value }));
    Ok(out)
}

/// Turn `a` into the `--within` check of the baseline's build against the
/// new one: `settings` for the commands, no label (the run holds both
/// builds, not a new baseline), and what is left of the budget (at least a
/// third of it) since `began`.
pub(super) fn within(a: &mut CheckArgs, settings: Vec<Setting>, began: Instant) {
    let budget = a.run.budget.unwrap_or(Duration::from_secs(60));
    a.run.param = settings;
    a.run.label = None;
    a.run.budget = Some(budget.saturating_sub(began.elapsed()).max(budget / 3));
    a.against = None;
    a.within = true;
}
