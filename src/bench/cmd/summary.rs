//! hyperfine's figures under a run of `cmd`: for each result, the mean and
//! standard deviation, the range and the user and system time, on one line
//! (`cmd=fast [up]: mean 31.40 ± 0.52 ms (σ), min 30.91, max 32.10 ms;
//! user 28.00 ms, sys 2.100 ms (medians); 10 runs`). The tables'
//! figure stays the median; these are the numbers a hyperfine user reads.

use crate::model::fmt::fmt_num;
use crate::model::record::{ResultRecord, Status};

/// One line per `cmd.run` result with clean samples, in the results' order.
pub(crate) fn summary(results: &[ResultRecord]) -> Vec<String> {
    let cmd: Vec<&ResultRecord> =
        results.iter().filter(|r| r.benchmark == "cmd.run" && r.status == Status::Ok && r.summary.is_some()).collect();
    cmd.iter()
        .filter_map(|r| {
            let s = r.summary.as_ref()?;
            let u = &r.unit;
            // What tells this result from the others: the parameters that vary.
            let mut who: Vec<String> = r
                .params
                .0
                .iter()
                .filter(|(k, v)| *k != "commands" && cmd.iter().any(|o| o.params.0.get(*k) != Some(*v)))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            who.push(format!("[{}]", r.config));
            let ms = |k: &str| r.extras.get(k).and_then(|v| v.as_f64()).map(|x| format!("{} ms", fmt_num(x * 1e3)));
            let times = match (ms("user_s"), ms("sys_s")) {
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
        })
        .collect()
}
