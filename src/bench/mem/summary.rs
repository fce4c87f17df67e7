//! The per-regime table printed under a run with `mem.*` results: for each
//! routine, cache state and configuration swept over sizes with at least two
//! implementations, the speedups of tuned and libc over naive and of tuned
//! over libc, each a geometric mean over the sizes of a cache regime, with a
//! geometric-mean row (as the 2001 study tabled its gains). Cache sizes come
//! from the results' own extras (the machine that ran them), not from here.

use super::regimes::{self, CacheSizes, Point};
use crate::model::record::{ResultRecord, Status};

fn caches_of(r: &ResultRecord) -> Option<CacheSizes> {
    let list = r.extras.get("caches")?.as_array()?;
    let pairs: Vec<(u32, u64)> = list.iter().filter_map(|c| Some((c.get("level")?.as_u64()? as u32, c.get("bytes")?.as_u64()?))).collect();
    (!pairs.is_empty()).then(|| CacheSizes::new(pairs))
}

fn ratio(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.2}x")).unwrap_or_else(|| "-".into())
}

/// Lines of text, empty when there is nothing to tabulate.
pub fn summary(results: &[ResultRecord]) -> Vec<String> {
    let mem: Vec<&ResultRecord> = results.iter().filter(|r| r.family == "mem" && r.status == Status::Ok && r.summary.is_some()).collect();
    // Groups: benchmark, configuration, and every parameter but impl and size.
    let mut groups: Vec<(String, Vec<&ResultRecord>)> = Vec::new();
    for r in &mem {
        let rest: Vec<String> = r.params.0.iter().filter(|(k, _)| *k != "impl" && *k != "size").map(|(k, v)| format!("{k}={v}")).collect();
        let key = format!("{} {} [{}]", r.benchmark, rest.join(" "), r.config);
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.1.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    let mut out = Vec::new();
    for (key, rs) in groups {
        let impls: std::collections::BTreeSet<&str> = rs.iter().filter_map(|r| r.params.0.get("impl").map(|s| s.as_str())).collect();
        let Some(caches) = rs.iter().find_map(|r| caches_of(r)) else { continue };
        if impls.len() < 2 {
            continue;
        }
        let points: Vec<Point> = rs
            .iter()
            .filter_map(|r| Some(Point { imp: r.params.0.get("impl")?.clone(), size: r.params.size("size").ok()?, gbps: r.summary.as_ref()?.median }))
            .collect();
        let rows = regimes::speedups(&points, &caches, regimes::buffers_of(&rs[0].benchmark));
        let verdict = wins_and_losses(&points);
        out.push(format!("{key}: speedups per cache regime (geometric mean over the sizes in each)"));
        out.push(format!("  {:<8} {:>5}  {:>11}  {:>10}  {:>10}", "regime", "sizes", "tuned/naive", "libc/naive", "tuned/libc"));
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
pub const LOSS: f64 = 0.95;

/// Where tuned wins and loses against libc, size by size (medians): one
/// line, with the worst loss and the best win named. `None` without both.
pub fn wins_and_losses(points: &[Point]) -> Option<String> {
    let at = |imp: &str, size: u64| points.iter().find(|p| p.imp == imp && p.size == size).map(|p| p.gbps);
    let mut ratios: Vec<(u64, f64)> = points
        .iter()
        .filter(|p| p.imp == "tuned")
        .filter_map(|p| Some((p.size, p.gbps / at("libc", p.size).filter(|&l| l > 0.0)?)))
        .filter(|(_, r)| r.is_finite())
        .collect();
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by_key(|&(size, _)| size);
    let losses: Vec<&(u64, f64)> = ratios.iter().filter(|(_, r)| *r < LOSS).collect();
    let wins: Vec<&(u64, f64)> = ratios.iter().filter(|(_, r)| *r > 1.0 / LOSS).collect();
    let size = |b: u64| match b {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    };
    let mut line = format!("  tuned/libc by size: {} of {} below {LOSS:.2}x", losses.len(), ratios.len());
    if let Some((s, r)) = losses.iter().min_by(|a, b| a.1.total_cmp(&b.1)) {
        let list: Vec<String> = losses.iter().take(8).map(|(s, _)| size(*s)).collect();
        line.push_str(&format!(" (worst {r:.2}x at {}; at {}{})", size(*s), list.join(", "), if losses.len() > 8 { ", ..." } else { "" }));
    }
    line.push_str(&format!(", {} above {:.2}x", wins.len(), 1.0 / LOSS));
    if let Some((s, r)) = wins.iter().max_by(|a, b| a.1.total_cmp(&b.1)) {
        line.push_str(&format!(" (best {r:.2}x at {})", size(*s)));
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
            benchmark: "mem.memset".into(),
            family: "mem".into(),
            params: p,
            config: "up".into(),
            cpus: "0".into(),
            unit: "GB/s".into(),
            better: Better::Higher,
            status: Status::Ok,
            reason: None,
            samples: vec![gbps],
            samples_meta: vec![],
            quality: None,
            placement: vec![],
            below_resolution: None,
            summary: crate::stats::summarize(&[gbps], true),
            iterations: None,
            extras,
            notes: vec![],
            warnings: vec![],
            simulated: false,
        }
    }

    #[test]
    fn names_wins_and_losses() {
        let p = |imp: &str, size: u64, gbps: f64| Point { imp: imp.into(), size, gbps };
        let pts = vec![p("libc", 64, 10.0), p("tuned", 64, 9.0), p("libc", 4096, 10.0), p("tuned", 4096, 5.0), p("libc", 1 << 24, 10.0), p("tuned", 1 << 24, 15.0), p("tuned", 1 << 26, 1.0)];
        let l = wins_and_losses(&pts).unwrap();
        assert!(l.contains("2 of 3 below 0.95x (worst 0.50x at 4K; at 64, 4K)"), "{l}");
        assert!(l.contains("1 above 1.05x (best 1.50x at 16M)"), "{l}");
        assert_eq!(wins_and_losses(&pts[..1]), None);
    }

    #[test]
    fn tabulates_regimes_from_stored_cache_sizes() {
        // Hand-made inputs: tuned twice naive in L1 (4 KiB), libc equal to tuned.
        let rs = vec![rec("naive", 4096, 1.0), rec("tuned", 4096, 2.0), rec("libc", 4096, 2.0), rec("naive", 64 << 20, 1.0), rec("tuned", 64 << 20, 3.0)];
        let lines = summary(&rs);
        assert!(lines[0].starts_with("mem.memset cache=warm [up]"), "{lines:?}");
        let l1 = lines.iter().find(|l| l.trim_start().starts_with("L1")).unwrap();
        assert!(l1.contains("2.00x") && l1.contains("1.00x"), "{l1}");
        let mem = lines.iter().find(|l| l.trim_start().starts_with("memory")).unwrap();
        assert!(mem.contains("3.00x") && mem.contains(" -"), "{mem}");
        assert!(lines.iter().any(|l| l.trim_start().starts_with("geomean")));
        // tuned equals libc at the one size both ran: no win, no loss.
        assert!(lines.iter().any(|l| l.contains("tuned/libc by size: 0 of 1 below 0.95x, 0 above 1.05x")), "{lines:?}");
        // One implementation only: nothing to compare.
        assert!(summary(&rs[..1]).is_empty());
    }
}
