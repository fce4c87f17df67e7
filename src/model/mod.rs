//! The ground floor: the vocabulary every part shares and nothing else.
//! Figures' direction, parameters, the records of runs, results and samples,
//! summaries, warnings, recorded configurations, and how figures are printed.
//! It imports nothing of kdelta but CPU sets and errors; everything else
//! imports it.

pub(crate) mod config;
pub(crate) mod environment;
pub(crate) mod extras;
pub(crate) mod fmt;
pub(crate) mod knob;
pub(crate) mod meta;
pub(crate) mod params;
pub(crate) mod profile;
pub(crate) mod quantity;
pub(crate) mod reach;
pub(crate) mod record;
pub(crate) mod sample;
pub(crate) mod text;

pub(crate) use environment::{RunEnvironment, RunsAsked};
pub use params::Params;
pub(crate) use params::{ParamKind, ParamSpec};
pub(crate) use record::{ResultRecord, RunRecord};

use serde::{Deserialize, Serialize};
use std::fmt as sfmt;

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    Lower,
    Higher,
}

impl Better {
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
        }
    }
    pub fn parse(s: &str) -> Option<Better> {
        match s {
            "lower" => Some(Better::Lower),
            "higher" => Some(Better::Higher),
            _ => None,
        }
    }
}

/// Median, means, spread. `mean` is arithmetic for times and harmonic for rates
/// (higher-is-better figures), as LMbench and SPEC do: the harmonic mean of
/// rates is the rate over the total work.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Summary {
    pub(crate) n: usize,
    pub(crate) median: f64,
    pub(crate) mean: f64,
    /// `arithmetic` or `harmonic`.
    pub(crate) mean_kind: String,
    pub(crate) min: f64,
    pub(crate) max: f64,
    /// Sample standard deviation (n - 1).
    pub(crate) stddev: f64,
    /// Coefficient of variation: stddev / arithmetic mean, as a fraction.
    pub(crate) cv: f64,
    pub(crate) p5: f64,
    pub(crate) p95: f64,
    pub(crate) p99: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Warning {
    /// Coefficient of variation above the threshold.
    HighVariation { cv: f64, threshold: f64 },
    /// Samples beyond Tukey's fences (1.5 IQR outside the quartiles).
    Outliers { count: usize, n: usize },
    /// The samples fall in two separate clusters (e.g. tasks on one CPU
    /// against tasks on two CPUs): the median hides that.
    TwoClusters { low: f64, high: f64, low_n: usize, high_n: usize },
    /// Samples shorter than the clock can time well.
    ShortSamples { secs: f64 },
    /// Other processes used CPU time during the run, or the load was high.
    BusyMachine { load_before: f64, load_after: f64, others_cpus: Option<f64> },
    /// A reference loop ran `pct` percent slower (or faster, negative)
    /// after the run than before it: the machine changed speed during it.
    SpeedChanged { reference: String, pct: f64 },
}

impl sfmt::Display for Warning {
    fn fmt(&self, f: &mut sfmt::Formatter<'_>) -> sfmt::Result {
        match self {
            Warning::HighVariation { cv, threshold } => write!(f, "high variation: cv {:.1}% (above {:.0}%)", cv * 100.0, threshold * 100.0),
            Warning::Outliers { count, n } => write!(f, "{count} of {n} samples are outliers (beyond 1.5 IQR)"),
            Warning::TwoClusters { low, high, low_n, high_n } => write!(
                f,
                "samples fall in two clusters: {low_n} near {} and {high_n} near {} (placement or wake-up effects; see per-CPU configurations)",
                self::fmt::fmt_num(*low),
                self::fmt::fmt_num(*high)
            ),
            Warning::ShortSamples { secs } => write!(f, "samples of {:.0} us are short for the clock; use more iterations", secs * 1e6),
            Warning::BusyMachine { load_before, load_after, others_cpus } => {
                write!(f, "the machine was busy: load average {load_before:.2} before, {load_after:.2} after")?;
                if let Some(o) = others_cpus {
                    write!(f, "; other processes used {o:.2} CPUs on average")?;
                }
                Ok(())
            }
            Warning::SpeedChanged { reference, pct } => write!(
                f,
                "the machine's speed changed during the run: its reference {reference} ran {:.1}% {} after it \
                 than before; `check --against` this run judges only a change of 2x or more",
                pct.abs(),
                if *pct > 0.0 { "slower" } else { "faster" }
            ),
        }
    }
}
