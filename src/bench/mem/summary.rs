//! The per-regime table printed under a run with `mem.*` results: for each
//! routine, cache state and configuration swept over sizes with at least two
//! implementations, the speedups of tuned and libc over naive and of tuned
//! over libc, each a geometric mean over the sizes of a cache regime of the
//! size-by-size ratios (paired where the two took turns: [`over`]), with a
//! geometric-mean row (as the 2001 study tabled its gains). Cache sizes come
//! from the results' own extras (the machine that ran them), not from here.

use super::regimes::{self, CacheSizes, Columns, SizeRatio};
use crate::model::record::{ResultRecord, Status};

fn caches_of(r: &ResultRecord) -> Option<CacheSizes> {
    let list = r.extras.caches.as_ref()?;
    let pairs: Vec<(u32, u64)> = list.iter().filter_map(|c| Some((c.level as u32, c.bytes.as_u64()?))).collect();
    (!pairs.is_empty()).then(|| CacheSizes::new(pairs))
}

fn ratio(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".into())
}

/// Lines of text, empty when there is nothing to tabulate.
pub(crate) fn summary(results: &[ResultRecord]) -> Vec<String> {
    let mem: Vec<&ResultRecord> =
        results.iter().filter(|r| r.family == "mem" && r.status == Status::Ok && r.summary.is_some()).collect();
    // Groups: benchmark, configuration, and every parameter but impl and size.
    let mut groups: Vec<(String, Vec<&ResultRecord>)> = Vec::new();
    for r in &mem {
        let rest: Vec<String> =
            r.params.0.iter().filter(|(k, _)| *k != "impl" && *k != "size").map(|(k, v)| format!("{k}={v}")).collect();
        let key = format!("{} {} [{}]", r.benchmark, rest.join(" "), r.config);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let mut out = Vec::new();
    for (key, rs) in groups {
        let impls: std::collections::BTreeSet<&str> =
            rs.iter().filter_map(|r| r.params.0.get("impl").map(|s| s.as_str())).collect();
        let Some(caches) = rs.iter().find_map(|r| caches_of(r)) else { continue };
        if impls.len() < 2 {
            continue;
        }
        let cols = Columns {
            tuned_over_naive: over(&rs, "tuned", "naive"),
            libc_over_naive: over(&rs, "libc", "naive"),
            tuned_over_libc: over(&rs, "tuned", "libc"),
        };
        let rows = regimes::speedups(&cols, &caches, regimes::buffers_of(&rs[0].benchmark));
        let verdict = wins_and_losses(&cols.tuned_over_libc);
        out.push(format!("{key}: speedups per cache regime (geometric mean over the sizes in each)"));
        out.push(format!(
            "  {:<8} {:>5}  {:>11}  {:>10}  {:>10}",
            "regime", "sizes", "tuned/naive", "libc/naive", "tuned/libc"
        ));
        for r in rows {
            out.push(format!(
                "  {:<8} {:>5}  {:>11}  {:>10}  {:>10}",
                r.regime,
                r.points,
                ratio(r.tuned_over_naive),
                ratio(r.libc_over_naive),
                ratio(r.tuned_over_libc)
            ));
        }
        out.extend(verdict);
    }
    out
}

/// Below this tuned/libc ratio a size counts as a loss, above its inverse a win.
pub(crate) const LOSS: f64 = 0.95;

/// `num`/`den` (implementations: `tuned`/`libc`) at each size measured
/// with both: the median of the per-pair ratios, with its interval, when
/// the two took turns in the same workers (`stats::paired`: both saw the
/// same moments of the machine), else the ratio of the two medians. Every
/// column of the table is taken this way.
pub(crate) fn over(rs: &[&ResultRecord], num: &str, den: &str) -> Vec<SizeRatio> {
    let size_of = |r: &ResultRecord| r.params.size("size").ok();
    let is = |r: &ResultRecord, imp: &str| r.params.0.get("impl").is_some_and(|i| i == imp);
    let mut out = Vec::new();
    for t in rs.iter().filter(|r| is(r, num)) {
        let Some(size) = size_of(t) else { continue };
        let Some(l) = rs.iter().find(|l| is(l, den) && size_of(l) == Some(size)) else { continue };
        let paired = crate::stats::paired::paired_ratio((&l.samples, &l.samples_meta), (&t.samples, &t.samples_meta));
        let (ratio, interval) = match (paired, &t.summary, &l.summary) {
            (Some(p), _, _) => (p.ratio, Some((p.low, p.high))),
            (None, Some(ts), Some(ls)) if ls.median > 0.0 => (ts.median / ls.median, None),
            _ => continue,
        };
        if ratio.is_finite() {
            out.push(SizeRatio { size, ratio, interval });
        }
    }
    out.sort_by_key(|r| r.size);
    out
}

/// Where tuned wins and loses against libc, size by size (from [`over`]):
/// one line, with the worst loss (or, with none, the lowest point) and the
/// best win named, how many of each
/// the paired samples' 95 % interval confirms (it lies wholly past the
/// line), and how many sizes were paired. `None` without a size.
pub(crate) fn wins_and_losses(all: &[SizeRatio]) -> Option<String> {
    if all.is_empty() {
        return None;
    }
    let paired = all.iter().filter(|r| r.interval.is_some()).count();
    let losses: Vec<&SizeRatio> = all.iter().filter(|r| r.ratio < LOSS).collect();
    let wins: Vec<&SizeRatio> = all.iter().filter(|r| r.ratio > 1.0 / LOSS).collect();
    let sure_losses = losses.iter().filter(|r| r.interval.is_some_and(|(_, hi)| hi < LOSS)).count();
    let sure_wins = wins.iter().filter(|r| r.interval.is_some_and(|(lo, _)| lo > 1.0 / LOSS)).count();
    let size = |b: u64| match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    };
    let sure = |n: usize, past: &str| {
        if paired > 0 {
            format!("; {n} wholly {past} by the 95% interval")
        } else {
            String::new()
        }
    };
    let mut line = format!("  tuned/libc by size: {} of {} below {LOSS:.2}x", losses.len(), all.len());
    if let Some(w) = losses.iter().min_by(|a, b| a.ratio.total_cmp(&b.ratio)) {
        let list: Vec<String> = losses.iter().take(8).map(|r| size(r.size)).collect();
        let more = if losses.len() > 8 { ", ..." } else { "" };
        line.push_str(&format!(
            " (worst {:.2}x at {}; at {}{more}{})",
            w.ratio,
            size(w.size),
            list.join(", "),
            sure(sure_losses, "below")
        ));
    } else if let Some(w) = all.iter().min_by(|a, b| a.ratio.total_cmp(&b.ratio)) {
        // No loss: the lowest point still says how close the sweep came.
        line.push_str(&format!(" (lowest {:.2}x at {})", w.ratio, size(w.size)));
    }
    line.push_str(&format!(", {} above {:.2}x", wins.len(), 1.0 / LOSS));
    if let Some(b) = wins.iter().max_by(|a, b| a.ratio.total_cmp(&b.ratio)) {
        line.push_str(&format!(" (best {:.2}x at {}{})", b.ratio, size(b.size), sure(sure_wins, "above")));
    }
    match paired {
        0 => {}
        p if p == all.len() => line.push_str("; medians of paired samples"),
        p => line.push_str(&format!("; medians of paired samples at {p} of {} sizes", all.len())),
    }
    Some(line)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Better, Params};

    fn rec(imp: &str, size: u64, gbps: f64) -> ResultRecord {
        let mut p = Params::default();
        p.set("impl", imp);
        p.set("size", size.to_string());
        p.set("cache", "warm");
        let mut extras = serde_json::Map::new();
        extras.insert("caches".into(), serde_json::json!([{"level": 1, "bytes": 32768}, {"level": 2, "bytes": 1048576}, {"level": 3, "bytes": 33554432}]));
        ResultRecord {
            params: p,
            unit: "GB/s".into(),
            better: Better::Higher,
            summary: crate::stats::summarize(&[gbps], true),
            extras: extras.into(),
            ..crate::testing::stored::ok_result("mem.memset", &[gbps])
        }
    }

    #[test]
    fn names_wins_and_losses() {
        let rs = [
            rec("libc", 64, 10.0),
            rec("tuned", 64, 9.0),
            rec("libc", 4096, 10.0),
            rec("tuned", 4096, 5.0),
            rec("libc", 1 << 24, 10.0),
            rec("tuned", 1 << 24, 15.0),
            rec("tuned", 1 << 26, 1.0),
        ];
        let refs: Vec<&ResultRecord> = rs.iter().collect();
        let ratios = over(&refs, "tuned", "libc");
        assert_eq!(ratios.len(), 3, "64 MiB has no libc side");
        let l = wins_and_losses(&ratios).unwrap();
        assert!(l.contains("2 of 3 below 0.95x (worst 0.50x at 4K; at 64, 4K)"), "{l}");
        assert!(l.contains("1 above 1.05x (best 1.50x at 16M)"), "{l}");
        assert!(!l.contains("paired"), "{l}");
        assert_eq!(wins_and_losses(&[]), None);
    }

    #[test]
    fn says_which_losses_and_wins_the_interval_confirms() {
        let at = |size: u64, ratio: f64, lo: f64, hi: f64| SizeRatio { size, ratio, interval: Some((lo, hi)) };
        let all = [
            at(64, 0.94, 0.90, 0.97),
            at(128, 0.90, 0.88, 0.92),
            at(4096, 1.00, 0.98, 1.02),
            at(8192, 1.10, 1.07, 1.12),
            at(16384, 1.06, 1.04, 1.08),
        ];
        let l = wins_and_losses(&all).unwrap();
        assert!(
            l.contains("2 of 5 below 0.95x (worst 0.90x at 128; at 64, 128; 1 wholly below by the 95% interval)"),
            "{l}"
        );
        assert!(l.contains("2 above 1.05x (best 1.10x at 8K; 1 wholly above by the 95% interval)"), "{l}");
        assert!(l.ends_with("; medians of paired samples"), "{l}");
    }

    #[test]
    fn without_a_loss_names_the_lowest_point() {
        let at = |size: u64, ratio: f64| SizeRatio { size, ratio, interval: Some((ratio - 0.02, ratio + 0.02)) };
        let l = wins_and_losses(&[at(64, 1.20), at(360, 0.97), at(4096, 1.01)]).unwrap();
        assert!(l.contains("0 of 3 below 0.95x (lowest 0.97x at 360), 1 above 1.05x (best 1.20x at 64;"), "{l}");
        assert!(!l.contains("worst"), "{l}");
    }

    #[test]
    fn sides_that_took_turns_compare_pair_by_pair() {
        use crate::model::sample::SampleMeta;
        // libc swings 2x between the worker's samples; tuned, measured in
        // turn beside each, is 0.9x of it three times of four. The ratio of
        // medians says 14.4/15 = 0.96; the pairs say 0.9.
        let mut l = rec("libc", 4096, 0.0);
        let mut t = rec("tuned", 4096, 0.0);
        l.samples = vec![10.0, 20.0, 12.0, 18.0];
        t.samples = vec![9.0, 18.0, 10.8, 27.0];
        let meta = |k: usize, first: bool| SampleMeta {
            job: 1,
            t: 2.0 * k as f64 + if first { 0.0 } else { 1.0 },
            ..Default::default()
        };
        l.samples_meta = (0..4).map(|k| meta(k, true)).collect();
        t.samples_meta = (0..4).map(|k| meta(k, false)).collect();
        let got = over(&[&l, &t], "tuned", "libc");
        assert_eq!(got.len(), 1);
        assert!((got[0].ratio - 0.9).abs() < 1e-9 && got[0].interval.is_some(), "{got:?}");
        assert!(wins_and_losses(&got).unwrap().ends_with("; medians of paired samples"));
        // The table's columns over naive are paired the same way.
        let mut n = l.clone();
        n.params.set("impl", "naive");
        let lines = summary(&[n, t]);
        let l1 = lines.iter().find(|l| l.trim_start().starts_with("L1")).unwrap();
        assert!(l1.contains("0.90x") && !l1.contains("0.96x"), "{l1}");
    }

    #[test]
    fn tabulates_regimes_from_stored_cache_sizes() {
        // Hand-made inputs: tuned twice naive in L1 (4 KiB), libc equal to tuned.
        let rs = vec![
            rec("naive", 4096, 1.0),
            rec("tuned", 4096, 2.0),
            rec("libc", 4096, 2.0),
            rec("naive", 64 << 20, 1.0),
            rec("tuned", 64 << 20, 3.0),
        ];
        let lines = summary(&rs);
        assert!(lines[0].starts_with("mem.memset cache=warm [up]"), "{lines:?}");
        let l1 = lines.iter().find(|l| l.trim_start().starts_with("L1")).unwrap();
        assert!(l1.contains("2.00x") && l1.contains("1.00x"), "{l1}");
        let mem = lines.iter().find(|l| l.trim_start().starts_with("memory")).unwrap();
        assert!(mem.contains("3.00x") && mem.contains(" -"), "{mem}");
        assert!(lines.iter().any(|l| l.trim_start().starts_with("geomean")));
        // tuned equals libc at the one size both ran: no win, no loss.
        assert!(
            lines
                .iter()
                .any(|l| l.contains("tuned/libc by size: 0 of 1 below 0.95x (lowest 1.00x at 4K), 0 above 1.05x")),
            "{lines:?}"
        );
        // One implementation only: nothing to compare.
        assert!(summary(&rs[..1]).is_empty());
    }
}
