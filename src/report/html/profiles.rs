//! A run's profiles on the page (`run --profile`): for each profiled
//! benchmark point, a flame graph per configuration and the differential
//! one from the first configuration to each other (red: a larger share of
//! samples, blue: a smaller one), with the functions whose share changed
//! significantly ([`crate::stats::profile_shift`]) in a list under it.
//! Under each graph a table: the top functions by self and total share, or
//! each function's share under both configurations and the change
//! ([`crate::report::profile_tables`]). Inline SVG, no script
//! ([`crate::report::flame`]).

use super::escape::{html_write, Html};
use crate::model::profile::Profile;
use crate::model::ResultRecord;
use crate::report::flame;
use crate::report::model::Report;
use crate::report::profile_tables as tables;
use crate::stats::profile_shift;

/// The profiled points of `rep`'s run: each point's profiled results, in
/// the order stored (so its configurations in the run's order).
fn points(rep: &Report) -> Vec<Vec<&ResultRecord>> {
    let mut out: Vec<Vec<&ResultRecord>> = Vec::new();
    for r in rep.results.iter().filter(|r| r.profile.as_ref().is_some_and(|p| p.samples > 0)) {
        let key = |x: &ResultRecord| (x.benchmark.clone(), tables::point(x));
        match out.iter_mut().find(|g| key(g[0]) == key(r)) {
            Some(g) => g.push(r),
            None => out.push(vec![r]),
        }
    }
    out
}

/// How a profile was taken, in a line.
fn taken(p: &Profile) -> String {
    let mut s = format!(
        "{} stack samples of {} at {} Hz over {} profiled samples in {} worker(s), kept apart from the figures",
        p.samples,
        p.event,
        p.hz,
        p.figures.len(),
        p.workers
    );
    if p.cut > 0 {
        s.push_str(&format!("; {} samples of the rarest stacks merged into {}", p.cut, crate::model::profile::CUT));
    }
    s
}

/// The section, or nothing when the run has no profile.
pub(super) fn section(rep: &Report) -> Html {
    let groups = points(rep);
    let mut s = Html::new();
    if groups.is_empty() {
        return s;
    }
    let run = rep.runs[0].id;
    html_write!(s, "<h3 id=\"run-{}-profiles\">Profiles ({})</h3>\n", run, groups.len());
    s.push_lit("<p class=\"notes\">Stacks of the measured tasks sampled in extra samples after the measured ones, in every configuration and round; widths are samples. Differential graphs show the second configuration's stacks, red where a frame has a larger share of its samples than under the first, blue where a smaller one.</p>\n");
    let mut n = 0usize;
    let mut next_id = || {
        n += 1;
        format!("fg-{run}-{n}")
    };
    for g in groups {
        let r0 = g[0];
        let params = tables::point(r0).display();
        let name = if params.is_empty() { r0.benchmark.clone() } else { format!("{} ({params})", r0.benchmark) };
        html_write!(s, "<h4>{}</h4>\n", Html::text(&name));
        for r in &g {
            let p = r.profile.as_ref().expect("profiled");
            match flame::flame(p, &format!("{} [{}]", r.benchmark, tables::side(r)), &taken(p)) {
                Ok(f) => s.push(&Html::flame(&f, &next_id())),
                Err(e) => html_write!(
                    s,
                    "<p class=\"na\">{}</p>\n",
                    Html::text(&format!("{} [{}]: {e:#}", r.benchmark, tables::side(r)))
                ),
            }
            s.push_lit("\n");
            s.push(&top_table(p));
        }
        let (a, pa) = (g[0], g[0].profile.as_ref().expect("profiled"));
        let sa = tables::side(a);
        for b in g.iter().skip(1) {
            let pb = b.profile.as_ref().expect("profiled");
            let sb = tables::side(b);
            let title = format!("{}: {sa} -> {sb}", b.benchmark);
            let sub = format!("{} samples under {sa}, {} under {sb}", pa.samples, pb.samples);
            match flame::differential(pa, pb, &title, &sub) {
                Ok(f) => s.push(&Html::flame(&f, &next_id())),
                Err(e) => html_write!(s, "<p class=\"na\">{}</p>\n", Html::text(&format!("{title}: {e:#}"))),
            }
            s.push_lit("\n");
            s.push(&change_table(pa, pb, &sa, &sb));
            let shifts = profile_shift::shifts(pa, pb, profile_shift::ALPHA);
            let lines: Vec<String> =
                shifts.iter().take(8).map(|x| format!("{} [{sa} -> {sb}]: {}", b.benchmark, x.describe())).collect();
            if lines.is_empty() {
                html_write!(
                    s,
                    "<p class=\"notes\">{}</p>\n",
                    Html::text(&format!("{title}: no function's share of samples changed significantly"))
                );
            } else {
                s.push_lit("<ul class=\"notes\">");
                for l in lines {
                    html_write!(s, "<li>{}</li>", Html::text(&l));
                }
                s.push_lit("</ul>\n");
            }
        }
    }
    s
}

/// The top functions of `p` by self share, with their total share.
fn top_table(p: &Profile) -> Html {
    let mut o = Html::lit(
        "<details><summary>top functions</summary><div class=\"scroll\"><table class=\"profile-top\"><thead><tr><th>self %</th><th>total %</th><th>function</th></tr></thead><tbody>",
    );
    for r in tables::top(p, tables::TOP) {
        html_write!(
            o,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>",
            Html::text(&format!("{:.1}", r.self_share * 100.0)),
            Html::text(&format!("{:.1}", r.total_share * 100.0)),
            Html::text(&r.function)
        );
    }
    o.push_lit("</tbody></table></div></details>\n");
    o
}

/// Each function's total share under `la` and `lb` and the change, the
/// significant changes starred, as `perf diff` shows them.
fn change_table(a: &Profile, b: &Profile, la: &str, lb: &str) -> Html {
    let mut o = Html::new();
    html_write!(
        o,
        "<details><summary>change of each function's share</summary><div class=\"scroll\"><table class=\"profile-diff\"><thead><tr><th>{} %</th><th>{} %</th><th>change</th><th></th><th>function</th></tr></thead><tbody>",
        Html::text(la),
        Html::text(lb)
    );
    let rows = tables::changes(a, b, tables::TOP);
    for r in &rows {
        html_write!(
            o,
            "<tr><td class=\"num\">{}</td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td><td>{}</td></tr>",
            Html::text(&format!("{:.1}", r.share_a * 100.0)),
            Html::text(&format!("{:.1}", r.share_b * 100.0)),
            Html::text(&format!("{:+.1}", (r.share_b - r.share_a) * 100.0)),
            Html::lit(if r.p.is_some() { "*" } else { "" }),
            Html::text(&r.function)
        );
    }
    html_write!(o, "</tbody></table></div><p class=\"notes\">{}</p></details>\n", Html::text(&tables::star_means()));
    o
}
