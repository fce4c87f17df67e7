//! hyperfine's figures under a run of `cmd`: for each result, the mean and
//! standard deviation, the range and the user and system time, on one line
//! (`cmd=fast [up]: mean 31.40 ± 0.52 ms (σ), min 30.91, max 32.10 ms;
//! user 28.00 ms, sys 2.100 ms (medians); 10 runs`). The tables'
//! figure stays the median; these are the numbers a hyperfine user reads.
//!
//! hyperfine's `--time-unit` ([`TimeUnit`], [`in_unit`]) and `--sort`
//! ([`Order`], [`reorder`]) change how those are shown, never what is stored.

use crate::error::BadInput;
use crate::model::fmt::fmt_num;
use crate::model::record::{ResultRecord, Status};
use crate::model::Warning;

/// `--time-unit`: the unit times of `cmd` are shown in (stored: milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeUnit {
    Micro,
    Milli,
    Second,
}

impl TimeUnit {
    /// hyperfine's names (`microsecond`, ...) and the short ones (`us`, `ms`, `s`).
    pub(crate) fn parse(s: &str) -> Result<TimeUnit, BadInput> {
        match s {
            "microsecond" | "us" | "µs" => Ok(TimeUnit::Micro),
            "millisecond" | "ms" => Ok(TimeUnit::Milli),
            "second" | "s" => Ok(TimeUnit::Second),
            _ => Err(BadInput(format!(
                "--time-unit {s:?} is not allowed: expected microsecond (us), millisecond (ms) or second (s)"
            ))),
        }
    }

    /// The unit's name in the tables, as kdelta's other times are written.
    pub(crate) fn symbol(self) -> &'static str {
        match self {
            TimeUnit::Micro => "us",
            TimeUnit::Milli => "ms",
            TimeUnit::Second => "s",
        }
    }

    /// Multiply seconds by this to get the unit.
    fn per_second(self) -> f64 {
        match self {
            TimeUnit::Micro => 1e6,
            TimeUnit::Milli => 1e3,
            TimeUnit::Second => 1.0,
        }
    }

    fn of(symbol: &str) -> Option<TimeUnit> {
        [TimeUnit::Micro, TimeUnit::Milli, TimeUnit::Second].into_iter().find(|u| u.symbol() == symbol)
    }
}

/// `--sort`: the order of the lines [`summary`] prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// hyperfine's default: it sorts only its relative-speed summary by
    /// time, which kdelta writes as the table's change column against the
    /// first command; the lines keep the order the commands were given.
    Auto,
    /// The order the commands (and parameter values) were given.
    Command,
    /// Fastest mean first.
    MeanTime,
}

impl Order {
    pub(crate) fn parse(s: &str) -> Result<Order, BadInput> {
        match s {
            "auto" => Ok(Order::Auto),
            "command" => Ok(Order::Command),
            "mean-time" => Ok(Order::MeanTime),
            _ => Err(BadInput(format!("--sort {s:?} is not allowed: expected auto, command or mean-time"))),
        }
    }
}

/// The times of `cmd.run` results (milliseconds, as stored) in `unit`, for
/// display: the samples, their summary and the warnings that quote values.
/// Changes are ratios and stay as they are; results in other units
/// (`--figure rss`) are left alone.
pub(crate) fn in_unit(results: &mut [ResultRecord], unit: TimeUnit) {
    for r in results.iter_mut().filter(|r| r.benchmark == "cmd.run") {
        let Some(from) = TimeUnit::of(&r.unit) else { continue };
        let k = unit.per_second() / from.per_second();
        r.unit = unit.symbol().to_string();
        r.samples.iter_mut().for_each(|v| *v *= k);
        if let Some(b) = r.below_resolution.as_mut() {
            *b *= k;
        }
        if let Some(s) = r.summary.as_mut() {
            for v in
                [&mut s.median, &mut s.mean, &mut s.min, &mut s.max, &mut s.stddev, &mut s.p5, &mut s.p95, &mut s.p99]
            {
                *v *= k;
            }
        }
        for w in r.warnings.iter_mut() {
            if let Warning::TwoClusters { low, high, .. } = w {
                *low *= k;
                *high *= k;
            }
        }
    }
}

/// One line per `cmd.run` result with clean samples, in the results' order.
pub(crate) fn summary(results: &[ResultRecord]) -> Vec<String> {
    lines(results, Order::Command)
}

/// `summaries` (every family's lines) with `cmd`'s lines in `order`: each
/// in the place one of them held.
pub(crate) fn reorder(summaries: &mut [String], results: &[ResultRecord], order: Order) {
    let given = lines(results, Order::Command);
    let mut sorted = lines(results, order).into_iter();
    for s in summaries.iter_mut().filter(|s| given.contains(s)) {
        if let Some(next) = sorted.next() {
            *s = next;
        }
    }
}

fn lines(results: &[ResultRecord], order: Order) -> Vec<String> {
    let mut cmd: Vec<&ResultRecord> =
        results.iter().filter(|r| r.benchmark == "cmd.run" && r.status == Status::Ok && r.summary.is_some()).collect();
    let all = cmd.clone();
    if order == Order::MeanTime {
        // Stable: equal means keep the order given; a figure of another
        // unit (rss beside wall) is sorted among its own.
        let mean = |r: &ResultRecord| r.summary.as_ref().map_or(f64::INFINITY, |s| s.mean);
        cmd.sort_by(|a, b| a.unit.cmp(&b.unit).then(mean(a).total_cmp(&mean(b))));
    }
    cmd.iter().filter_map(|r| line(r, &all)).collect()
}

fn line(r: &ResultRecord, all: &[&ResultRecord]) -> Option<String> {
    let s = r.summary.as_ref()?;
    let u = &r.unit;
    // What tells this result from the others: the parameters that vary.
    let mut who: Vec<String> = r
        .params
        .0
        .iter()
        .filter(|(k, v)| *k != "commands" && all.iter().any(|o| o.params.0.get(*k) != Some(*v)))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    who.push(format!("[{}]", r.config));
    // User and system time in the figure's unit when it is a time, else ms.
    let unit = TimeUnit::of(u).unwrap_or(TimeUnit::Milli);
    let time = |k: &str| {
        r.extras
            .get(k)
            .and_then(|v| v.as_f64())
            .map(|x| format!("{} {}", fmt_num(x * unit.per_second()), unit.symbol()))
    };
    let times = match (time("user_s"), time("sys_s")) {
        (Some(user), Some(sys)) => format!("; user {user}, sys {sys} (medians)"),
        _ => String::new(),
    };
    Some(format!(
        "{}: mean {} ± {} {u} (σ), min {}, max {} {u}{times}; {} runs",
        who.join(" "),
        fmt_num(s.mean),
        fmt_num(s.stddev),
        fmt_num(s.min),
        fmt_num(s.max),
        s.n
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_and_orders_take_hyperfines_names_and_the_short_ones() {
        assert_eq!(TimeUnit::parse("microsecond").unwrap(), TimeUnit::Micro);
        assert_eq!(TimeUnit::parse("us").unwrap(), TimeUnit::Micro);
        assert_eq!(TimeUnit::parse("ms").unwrap(), TimeUnit::Milli);
        assert_eq!(TimeUnit::parse("second").unwrap(), TimeUnit::Second);
        let e = TimeUnit::parse("minute").unwrap_err().0;
        assert!(e.contains("\"minute\"") && e.contains("millisecond (ms)"), "{e}");
        assert_eq!(Order::parse("mean-time").unwrap(), Order::MeanTime);
        assert!(Order::parse("median").unwrap_err().0.contains("auto, command or mean-time"));
    }

    fn run(name: &str, unit: &str, samples: &[f64]) -> ResultRecord {
        let mut r = crate::testing::stored::ok_result("cmd.run", samples);
        r.unit = unit.into();
        r.params.set("cmd", name);
        r
    }

    #[test]
    fn a_time_unit_scales_what_is_shown_and_leaves_other_figures() {
        let mut v = vec![run("a", "ms", &[10.0, 20.0, 30.0]), run("b", "KB", &[10.0, 20.0, 30.0])];
        in_unit(&mut v, TimeUnit::Second);
        assert_eq!(v[0].unit, "s");
        assert!((v[0].samples[1] - 0.02).abs() < 1e-12);
        assert!((v[0].summary.as_ref().unwrap().median - 0.02).abs() < 1e-12);
        assert!(summary(&v)[0].contains("mean 0.02000 ± 0.01000 s (σ)"), "{:?}", summary(&v));
        assert_eq!(v[1].unit, "KB");
        assert_eq!(v[1].samples[1], 20.0);
    }

    #[test]
    fn mean_time_puts_the_fastest_line_first_in_the_places_cmds_lines_held() {
        let v = vec![run("slow", "ms", &[30.0, 31.0, 32.0]), run("fast", "ms", &[10.0, 11.0, 12.0])];
        let mut all = vec!["other family".to_string()];
        all.extend(summary(&v));
        assert!(all[1].starts_with("cmd=slow"), "{all:?}");
        reorder(&mut all, &v, Order::MeanTime);
        assert_eq!(all[0], "other family");
        assert!(all[1].starts_with("cmd=fast") && all[2].starts_with("cmd=slow"), "{all:?}");
        let mut again = all.clone();
        reorder(&mut again, &v, Order::Command);
        assert!(again[1].starts_with("cmd=slow"), "{again:?}");
    }
}
