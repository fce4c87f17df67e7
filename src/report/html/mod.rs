//! `kdelta report`: one self-contained HTML page of one or more runs. It
//! opens from disk with nothing fetched: the CSS is inline, the charts are
//! inline SVG ([`charts`], drawn by hand in [`svg`]), and there is no script.
//!
//! Per run: what produced it (the exact command, version, times, status,
//! configurations and CPU sets), the tables as the terminal prints them
//! (the same [`grid`](super::grid) cells: units, cv, changes with their
//! significance, geometric means, the notes under each table), the charts,
//! the host snapshot ([`host`]) and every warning. Tables a caller builds
//! itself ([`ExtraTable`], a study's published-against-measured tables) come
//! first, drawn the same way; with several runs, each later run is compared
//! with the first.
//!
//! Every string reaches the page through [`escape::Html`]: the builders
//! here take and return it, and a `String` does not compile into the page.

pub(crate) mod charts;
pub(crate) mod escape;
pub(crate) mod history;
mod host;
mod profiles;
pub(crate) mod svg;

use super::extra::ExtraTable;
use super::grid::{self, Col, Grid};
use super::header::run_name;
use super::model::Report;
use super::Renderer;
use anyhow::Result;
use escape::{html_format, html_write, Html};

/// The page of `kdelta report`, as a [`Renderer`]: it takes the reports of
/// the runs shown and the reports comparing the first run with each later
/// one ([`Report::compares_runs`]), runs first.
pub(crate) struct Page<'a> {
    pub(crate) title: String,
    /// Tables built elsewhere (a study's), shown before the runs.
    pub(crate) extra: &'a [ExtraTable],
}

impl Renderer for Page<'_> {
    fn render(&self, reports: &[Report]) -> Result<String> {
        let (comparisons, runs): (Vec<&Report>, Vec<&Report>) = reports.iter().partition(|r| r.compares_runs());
        Ok(render(&Contents { title: &self.title, runs: &runs, comparisons: &comparisons, extra: self.extra }))
    }
}

/// What one page shows.
struct Contents<'a> {
    title: &'a str,
    /// One report per run, as `kdelta show` builds it.
    runs: &'a [&'a Report],
    /// Run-against-run reports (the first run against each later one).
    comparisons: &'a [&'a Report],
    /// Tables built elsewhere (a study's), shown before the runs.
    extra: &'a [ExtraTable],
}

const CSS: &str = "
body{font-family:system-ui,sans-serif;margin:0 auto;max-width:1100px;padding:0 16px 40px;color:#111;background:#fff}
h1{font-size:1.6em;margin:18px 0 4px}h2{border-bottom:2px solid #0072B2;padding-bottom:3px;margin-top:36px}h3{margin-top:22px}
nav ul{columns:2;padding-left:18px}table{border-collapse:collapse;margin:8px 0;font-size:13px}
th,td{padding:3px 8px;border-bottom:1px solid #e4e4e4;text-align:left;vertical-align:top}
thead th{border-bottom:2px solid #999;background:#f6f6f6;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.geo td{border-top:2px solid #999;font-weight:600}td.better{color:#067d3c;font-weight:600}td.worse{color:#b3261e;font-weight:600}
.notes{font-size:12px;color:#444;margin:4px 0 14px;padding-left:18px}.na{color:#777;font-style:italic}
pre.cmd{background:#f3f3f3;padding:6px 10px;white-space:pre-wrap;word-break:break-all;font-size:13px}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:2px 14px;font-size:14px}dl.meta dt{font-weight:600}dl.meta dd{margin:0}
.chart{display:block;max-width:100%;height:auto;margin:10px 0;border:1px solid #eee}
table.host th{white-space:nowrap;width:1%}ul.warnings{font-size:13px}ul.warnings li{margin:2px 0}
.scroll{overflow-x:auto}footer{margin-top:40px;font-size:12px;color:#555}
tr.cp td{border-top:2px solid #D55E00;color:#D55E00;font-weight:600}td.meta{word-break:break-all}p.outcome{font-weight:600}
";

/// The document up to the opening `<body>`: the title and the inline CSS.
fn head(title: &str) -> Html {
    html_format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>{}</title><style>{}{}</style></head><body>\n",
        Html::text(title),
        Html::lit(CSS),
        Html::lit(crate::report::flame::CSS)
    )
}

/// The whole page.
fn render(page: &Contents) -> String {
    let mut s = head(page.title);
    html_write!(
        s,
        "<header><h1>{}</h1><p>kdelta {}: {} run(s)",
        Html::text(page.title),
        Html::lit(env!("CARGO_PKG_VERSION")),
        page.runs.len()
    );
    s.push_lit(". Every figure is a median of clean samples; nothing here was estimated.</p></header>\n");
    s.push(&nav(page));
    if !page.extra.is_empty() {
        s.push_lit("<section id=\"extra\" class=\"extra\"><h2>Study tables</h2>\n");
        for t in page.extra {
            s.push(&extra_table(t));
        }
        s.push_lit("</section>\n");
    }
    for rep in page.runs {
        s.push(&run_section(rep));
    }
    if !page.comparisons.is_empty() {
        s.push_lit("<section id=\"compare\" class=\"compare\"><h2>Runs compared</h2>\n");
        for rep in page.comparisons {
            let names: Vec<String> = rep.runs.iter().map(run_name).collect();
            html_write!(s, "<h3>{}</h3>\n", Html::text(&names.join(" against ")));
            if rep.tables.is_empty() {
                s.push_lit("<p class=\"na\">no table: the runs share no configuration</p>\n");
            }
            for t in &rep.tables {
                s.push(&grid_table(&grid::comparison(t, rep.threshold_pct, rep.verbose)));
                for c in charts::speedups(t) {
                    s.push(&c);
                    s.push_lit("\n");
                }
            }
            if !rep.why.is_empty() {
                s.push(&lines_list("why", rep.why.iter().cloned()));
            }
            s.push(&lines_list("warnings", rep.remarks.iter().map(|r| format!("warning: {r}"))));
        }
        s.push_lit("</section>\n");
    }
    s.push_lit("<footer>Generated by kdelta from the stored runs named above. Charts: medians of clean samples; \"higher is better\" or \"lower is better\" is on every chart; speedups are ratios of medians oriented so that above 1 is better, with 95% bootstrap intervals.</footer>\n");
    s.push_lit("</body></html>\n");
    s.into_string()
}

fn nav(page: &Contents) -> Html {
    let mut s = Html::lit("<nav><ul>");
    if !page.extra.is_empty() {
        s.push_lit("<li><a href=\"#extra\">Study tables</a></li>");
    }
    for rep in page.runs {
        for r in &rep.runs {
            html_write!(s, "<li><a href=\"#run-{}\">{}</a></li>", r.id, Html::text(&run_name(r)));
        }
    }
    if !page.comparisons.is_empty() {
        s.push_lit("<li><a href=\"#compare\">Runs compared</a></li>");
    }
    s.push_lit("</ul></nav>\n");
    s
}

/// One run: what produced it, tables, charts, host, warnings.
fn run_section(rep: &Report) -> Html {
    let run = &rep.runs[0];
    let id = run.id;
    let mut s = Html::new();
    html_write!(s, "<section class=\"run\" id=\"run-{}\"><h2>{}</h2>\n", id, Html::text(&run_name(run)));
    s.push_lit("<dl class=\"meta\">");
    let mut meta = |k: &'static str, v: Html| {
        html_write!(s, "<dt>{}</dt><dd>{}</dd>", Html::lit(k), v);
    };
    let na = |what: &'static str| html_format!("<span class=\"na\">{}</span>", Html::lit(what));
    meta("started", Html::text(&run.started));
    meta("finished", run.finished.as_deref().map(Html::text).unwrap_or_else(|| na("not finished")));
    meta("status", Html::text(run.status.as_str()));
    meta("kdelta", Html::text(&run.kdelta_version));
    let cfgs: Vec<String> =
        if run.configs.is_empty() { configs_of(rep) } else { run.configs.iter().map(|c| c.describe()).collect() };
    meta("configurations", if cfgs.is_empty() { na("none recorded") } else { Html::text(&cfgs.join("; ")) });
    html_write!(s, "</dl>\n<h3 id=\"run-{}-command\">Command</h3>\n", id);
    if run.command.trim().is_empty() {
        s.push_lit("<p class=\"cmd na\">the command: not recorded (this run was stored by a version that did not keep it)</p>\n");
    } else {
        html_write!(s, "<pre class=\"cmd\">{}</pre>\n", Html::text(&run.command));
    }
    html_write!(s, "<h3 id=\"run-{}-tables\">Tables</h3>\n", id);
    if rep.results.is_empty() {
        s.push_lit("<p class=\"na\">no results stored</p>\n");
    } else if rep.tables.is_empty() {
        s.push(&grid_table(&grid::results(rep, rep.verbose)));
    }
    for t in &rep.tables {
        s.push(&grid_table(&grid::comparison(t, rep.threshold_pct, rep.verbose)));
    }
    if !rep.why.is_empty() {
        s.push(&lines_list("why", rep.why.iter().cloned()));
    }
    if !rep.summaries.is_empty() || !rep.notes.is_empty() {
        s.push(&lines_list("notes", rep.summaries.iter().chain(rep.notes.iter()).cloned()));
    }
    let cs = charts::for_run(rep);
    html_write!(s, "<h3 id=\"run-{}-charts\">Charts ({})</h3>\n", id, cs.len());
    if cs.is_empty() {
        s.push_lit("<p class=\"na\">nothing to chart: no result has a figure</p>\n");
    }
    for c in cs {
        s.push(&c);
        s.push_lit("\n");
    }
    s.push(&profiles::section(rep));
    html_write!(s, "<h3 id=\"run-{}-host\">Host</h3>\n", id);
    s.push(&host::render(&run.host));
    html_write!(s, "<h3 id=\"run-{}-warnings\">Warnings</h3>\n", id);
    let w = super::text::warnings(rep);
    s.push(&lines_list("warnings", w.lines().map(|l| l.to_string())));
    s.push_lit("</section>\n");
    s
}

/// `name [cpus X]` of every configuration the results name, for runs that
/// did not record their configurations.
fn configs_of(rep: &Report) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in &rep.results {
        let d = format!("{} [cpus {}]", r.config, r.cpus);
        if !v.contains(&d) {
            v.push(d);
        }
    }
    v
}

fn lines_list(class: &'static str, lines: impl Iterator<Item = String>) -> Html {
    let mut s = html_format!("<ul class=\"{}\">", Html::lit(class));
    let mut any = false;
    for l in lines {
        any = true;
        html_write!(s, "<li>{}</li>", Html::text(&l));
    }
    if !any {
        return html_format!("<p class=\"{} na\">none</p>\n", Html::lit(class));
    }
    s.push_lit("</ul>\n");
    s
}

/// A terminal table as HTML: the same cells, figures right-aligned,
/// significant changes coloured, geometric means after a rule, the notes.
fn grid_table(g: &Grid) -> Html {
    let mut s = Html::lit("<div class=\"scroll\"><table class=\"results\"><thead><tr>");
    for h in &g.header {
        html_write!(s, "<th>{}</th>", Html::text(h));
    }
    s.push_lit("</tr></thead><tbody>");
    for (i, row) in g.rows.iter().enumerate() {
        s.push_lit(if i >= g.geo_from { "<tr class=\"geo\">" } else { "<tr>" });
        let mut change = 0;
        for (j, c) in row.iter().enumerate() {
            let kind = g.cols.get(j).copied().unwrap_or(Col::Text);
            let mark = if kind == Col::Change {
                change += 1;
                g.marks.get(i).and_then(|m| m.get(change - 1)).copied().flatten()
            } else {
                None
            };
            let class = match (kind.right(), mark) {
                (true, Some(true)) => "num better",
                (true, Some(false)) => "num worse",
                (true, None) => "num",
                (false, Some(true)) => "better",
                (false, Some(false)) => "worse",
                (false, None) => "",
            };
            html_write!(s, "<td class=\"{}\">{}</td>", Html::lit(class), Html::text(c.trim_end()));
        }
        s.push_lit("</tr>");
    }
    s.push_lit("</tbody></table></div>\n");
    if !g.notes.is_empty() {
        s.push(&lines_list("notes", g.notes.iter().cloned()));
    }
    s
}

/// A caller's table, drawn as the others are.
fn extra_table(t: &ExtraTable) -> Html {
    let mut s = html_format!("<h3>{}</h3>\n", Html::text(&t.title));
    if !t.before.is_empty() {
        s.push(&lines_list("notes", t.before.iter().cloned()));
    }
    let numeric = |c: &str| {
        let c = c.trim().trim_end_matches(['%', '*', '?', ' ', 'x']);
        !c.is_empty() && c.trim_start_matches(['+', '-', '<', ' ']).parse::<f64>().is_ok()
    };
    s.push_lit("<div class=\"scroll\"><table class=\"results extra\"><thead><tr>");
    for h in &t.header {
        html_write!(s, "<th>{}</th>", Html::text(h));
    }
    s.push_lit("</tr></thead><tbody>");
    for row in &t.rows {
        let geo = row.first().is_some_and(|c| c.starts_with("geomean"));
        s.push_lit(if geo { "<tr class=\"geo\">" } else { "<tr>" });
        for c in row {
            s.push_lit(if numeric(c) { "<td class=\"num\">" } else { "<td>" });
            html_write!(s, "{}</td>", Html::text(c));
        }
        s.push_lit("</tr>");
    }
    s.push_lit("</tbody></table></div>\n");
    if !t.after.is_empty() {
        s.push(&lines_list("notes", t.after.iter().cloned()));
    }
    s
}

#[cfg(test)]
mod browser;
#[cfg(test)]
mod tests;
