//! A profile's functions as tables: the top functions by share of samples
//! (self: the stacks a function is the leaf of; total: the stacks it is in
//! at all), and, for two profiles, each function's total share under A and
//! under B and the change, as `perf diff` shows them, with the significance
//! of each change as [`crate::stats::profile_shift`] judges it. Text here;
//! the HTML page draws the same rows.

use crate::model::profile::Profile;
use crate::model::ResultRecord;
use crate::stats::profile_shift;

/// The parameter `r`'s sides are compared on, as configurations are
/// (`cmd`'s commands), if any.
pub(crate) fn compared_on(r: &ResultRecord) -> Option<&str> {
    r.extras.compared_on.as_deref().filter(|on| r.params.0.contains_key(*on))
}

/// The side `r` stands for in its point's profiles: its configuration, or
/// with a parameter compared as configurations are, `NAME=VALUE [config]`.
pub(crate) fn side(r: &ResultRecord) -> String {
    match compared_on(r) {
        Some(on) => format!("{on}={} [{}]", r.params.0[on], r.config),
        None => r.config.clone(),
    }
}

/// `r`'s parameters less the one its sides are compared on: the point
/// whose sides' profiles are compared with each other.
pub(crate) fn point(r: &ResultRecord) -> crate::model::params::Params {
    let mut p = r.params.clone();
    if let Some(on) = compared_on(r) {
        p.0.remove(on);
    }
    p
}

/// How many functions a table shows.
pub(crate) const TOP: usize = 15;

/// One function's share of a profile's samples.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Share {
    /// The function, kernel functions marked ` [k]`.
    pub(crate) function: String,
    /// Shares of samples, 0..1.
    pub(crate) self_share: f64,
    pub(crate) total_share: f64,
}

/// One function's total share under A and under B.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Change {
    pub(crate) function: String,
    pub(crate) share_a: f64,
    pub(crate) share_b: f64,
    /// The change is significant (its p value, before the Bonferroni factor).
    pub(crate) p: Option<f64>,
}

fn shown(name: &str, kernel: bool) -> String {
    if kernel {
        format!("{name} [k]")
    } else {
        name.to_string()
    }
}

/// The `n` functions with the largest self share of `p` (then total share),
/// empty when nothing was sampled.
pub(crate) fn top(p: &Profile, n: usize) -> Vec<Share> {
    if p.samples == 0 {
        return Vec::new();
    }
    let total = p.samples as f64;
    let own = profile_shift::exclusive(p);
    let mut rows: Vec<Share> = profile_shift::inclusive(p)
        .into_iter()
        .map(|(k, t)| Share {
            self_share: *own.get(&k).unwrap_or(&0) as f64 / total,
            total_share: t as f64 / total,
            function: shown(&k.0, k.1),
        })
        .collect();
    rows.sort_by(|x, y| {
        y.self_share
            .total_cmp(&x.self_share)
            .then_with(|| y.total_share.total_cmp(&x.total_share))
            .then_with(|| x.function.cmp(&y.function))
    });
    rows.truncate(n);
    rows
}

/// The `n` functions whose total share changed most from `a` to `b`, the
/// significant ones first, then by the size of the change.
pub(crate) fn changes(a: &Profile, b: &Profile, n: usize) -> Vec<Change> {
    if a.samples == 0 || b.samples == 0 {
        return Vec::new();
    }
    let sig = profile_shift::significant(a, b, profile_shift::ALPHA);
    let (ia, ib) = (profile_shift::inclusive(a), profile_shift::inclusive(b));
    let (na, nb) = (a.samples as f64, b.samples as f64);
    let keys: std::collections::BTreeSet<&(String, bool)> = ia.keys().chain(ib.keys()).collect();
    let mut rows: Vec<Change> = keys
        .into_iter()
        .map(|k| Change {
            function: shown(&k.0, k.1),
            share_a: *ia.get(k).unwrap_or(&0) as f64 / na,
            share_b: *ib.get(k).unwrap_or(&0) as f64 / nb,
            p: sig.iter().find(|s| s.function == k.0 && s.kernel == k.1).map(|s| s.p),
        })
        .collect();
    rows.sort_by(|x, y| {
        y.p.is_some()
            .cmp(&x.p.is_some())
            .then_with(|| (y.share_b - y.share_a).abs().total_cmp(&(x.share_b - x.share_a).abs()))
            .then_with(|| x.function.cmp(&y.function))
    });
    rows.truncate(n);
    rows
}

/// What the star of a change means, in a line.
pub(crate) fn star_means() -> String {
    format!(
        "*: the share changed significantly (at least x{} and {} points, two-proportion test below {} after Bonferroni)",
        profile_shift::MIN_RATIO,
        profile_shift::MIN_POINTS,
        profile_shift::ALPHA
    )
}

/// The top table as text, under a heading line.
pub(crate) fn top_text(p: &Profile, heading: &str, n: usize) -> String {
    let mut s = format!("{heading}: {} stack samples of {}\n", p.samples, p.event);
    let rows = top(p, n);
    if rows.is_empty() {
        s.push_str("  nothing sampled\n");
        return s;
    }
    s.push_str(&format!("  {:>7} {:>7}  function\n", "self %", "total %"));
    for r in rows {
        s.push_str(&format!(
            "  {:>7.1} {:>7.1}  {}\n",
            r.self_share * 100.0,
            r.total_share * 100.0,
            crate::model::text::printable(&r.function)
        ));
    }
    s
}

/// The change table as text: total shares under `la` and `lb`.
pub(crate) fn changes_text(a: &Profile, b: &Profile, la: &str, lb: &str, n: usize) -> String {
    let rows = changes(a, b, n);
    let mut s = format!("change of each function's total share, {la} -> {lb}:\n");
    if rows.is_empty() {
        s.push_str("  nothing sampled\n");
        return s;
    }
    let (wa, wb) = (la.chars().count().max(7), lb.chars().count().max(7));
    s.push_str(&format!("  {:>wa$} {:>wb$} {:>8}    function\n", format!("{la} %"), format!("{lb} %"), "change"));
    for r in &rows {
        s.push_str(&format!(
            "  {:>wa$.1} {:>wb$.1} {:>+8.1} {:<2} {}\n",
            r.share_a * 100.0,
            r.share_b * 100.0,
            (r.share_b - r.share_a) * 100.0,
            if r.p.is_some() { "*" } else { "" },
            crate::model::text::printable(&r.function)
        ));
    }
    if rows.iter().any(|r| r.p.is_some()) {
        s.push_str(&format!("  {}\n", star_means()));
    } else {
        s.push_str("  no significant change: no function's share of samples changed significantly\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(text: &str) -> Profile {
        let mut p = Profile { event: "cpu-clock".into(), ..Default::default() };
        p.add_folded(text);
        p
    }

    #[test]
    fn the_top_table_has_self_and_total_shares() {
        let p = profile("k;main;work 60\nk;main;work;memcpy 30\nk;main;do_idle_[k] 10\n");
        let t = top(&p, 10);
        let get = |f: &str| t.iter().find(|r| r.function == f).unwrap();
        assert_eq!(t[0].function, "work", "largest self share first");
        assert!((get("work").self_share - 0.6).abs() < 1e-9 && (get("work").total_share - 0.9).abs() < 1e-9);
        assert!((get("main").self_share).abs() < 1e-9 && (get("main").total_share - 1.0).abs() < 1e-9);
        assert!((get("do_idle [k]").self_share - 0.1).abs() < 1e-9);
        assert_eq!(top(&p, 2).len(), 2);
        let text = top_text(&p, "lat.pipe [up]", 10);
        assert!(text.contains("100 stack samples of cpu-clock"), "{text}");
        assert!(text.lines().any(|l| l.trim_start().starts_with("60.0    90.0  work")), "{text}");
        assert!(top(&Profile::default(), 5).is_empty());
    }

    #[test]
    fn the_change_table_stars_only_significant_changes() {
        let a = profile("k;main;do_idle_[k] 100\nk;main;work 800\nk;main;other 100\n");
        let b = profile("k;main;do_idle_[k] 410\nk;main;work 530\nk;main;other 60\n");
        let rows = changes(&a, &b, 10);
        assert_eq!(rows[0].function, "do_idle [k]");
        assert!(rows[0].p.is_some());
        let other = rows.iter().find(|r| r.function == "other").unwrap();
        assert!(other.p.is_none(), "4 points on 1000 samples: noise");
        let text = changes_text(&a, &b, "gzip-1", "gzip-9", 10);
        assert!(text.contains("gzip-1 %") && text.contains("+31.0 *  do_idle [k]"), "{text}");
        assert!(text.contains("*: the share changed significantly"), "{text}");
        // Noise alone: no star, and said so.
        let c = profile("k;main;do_idle_[k] 11\nk;main;work 89\n");
        let d = profile("k;main;do_idle_[k] 13\nk;main;work 87\n");
        let text = changes_text(&c, &d, "A", "B", 10);
        assert!(!text.contains('*') && text.contains("no significant change"), "{text}");
    }
}
