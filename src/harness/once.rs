//! What a benchmark does once around a whole run, in the parent
//! ([`Benchmark::before_run`], [`Benchmark::after_run`]): every point's
//! `before_run`, in the plan's order, before the run is stored or any
//! worker starts; `after_run` of each point whose `before_run` succeeded
//! when the [`AfterRun`] guard goes, after the last worker, however the run
//! ended (an error, an interruption, a panic that unwinds). The harness
//! calls the hooks without knowing what they do.

use super::plan::Item;
use crate::measure::benchmark::Benchmark;
use crate::model::Params;
use anyhow::Result;
use std::sync::Arc;

/// The points set up so far, each put back (`after_run`) when this goes.
#[must_use = "dropping it runs every after_run at once"]
pub(crate) struct AfterRun {
    done: Vec<(Arc<dyn Benchmark>, Params, &'static str)>,
}

/// Every available point's `before_run`, in order. On a failure, the points
/// already set up are put back, and the error names the point's benchmark.
pub(crate) fn before_run<'a>(items: impl IntoIterator<Item = &'a Item>) -> Result<AfterRun> {
    let mut after = AfterRun { done: Vec::new() };
    for item in items.into_iter().filter(|i| i.unsupported.is_none()) {
        item.bench.before_run(&item.params)?;
        after.done.push((item.bench.clone(), item.params.clone(), item.info.name));
    }
    Ok(after)
}

impl Drop for AfterRun {
    fn drop(&mut self) {
        for (bench, params, name) in self.done.drain(..) {
            if let Err(e) = bench.after_run(&params) {
                eprintln!("kdelta: {name}: {e:#}");
            }
        }
    }
}
