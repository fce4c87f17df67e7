//! The HTML report on fixed records (the renderers' fixtures in
//! `report/tests.rs`, plus a `mem.memcpy`-shaped sweep with cache sizes and a
//! hand-built study table): every section present, every chart framed with
//! units, direction and legend, nothing that would reach the network, and
//! the pieces (host, command, study table) as written here.

use super::super::extra::ExtraTable;
use super::super::model::Report;
use super::super::tests as fx;
use super::super::Renderer;
use super::Page;
use crate::model::record::{ResultRecord, RunRecord};
use crate::model::Better;
use crate::stats::CompareOptions;

pub(super) fn host() -> serde_json::Value {
    serde_json::json!({
        "hostname": "lab1",
        "cpu_model": "Example CPU @ 2.0GHz",
        "kernel_release": "6.18.0",
        "kernel_version": "#1 SMP PREEMPT_DYNAMIC",
        "preempt_model": "voluntary",
        "preempt_source": "/sys/kernel/debug/sched/preempt",
        "glibc_version": "2.36",
        "mitigations": [["meltdown", "Not affected"], ["spectre_v2", "Mitigation: Retpolines"]],
        "arch": "x86_64",
        "mem_total_bytes": 4294967296u64,
        "ht_flag": true,
        "topology": {
            "online": "0-1", "offline": "", "packages": [0],
            "cores": [{"package": 0, "core_id": 0, "cpus": "0"}, {"package": 0, "core_id": 1, "cpus": "1"}],
            "caches": [{"level": 1, "kind": "Data", "size_bytes": 49152, "shared": "0"}, {"level": 2, "kind": "Unified", "size_bytes": 2097152, "shared": "0"}],
            "nodes": [{"id": 0, "cpus": "0-1", "mem_bytes": null}],
            "smt_control": "notsupported", "smt_active": false, "restriction": null
        },
        "notes": ["preemption read from debugfs"]
    })
}

/// `mem.memcpy` over sizes from 4K to 64M on `up` and `smp2`, each result
/// carrying the caches and working set `mem.*` records.
pub(super) fn mem_run() -> (RunRecord, Vec<ResultRecord>) {
    let mut run = fx::run_record();
    run.id = 14;
    run.label = Some("mem".into());
    run.command = "kdelta run mem.memcpy --param size=4k,64k,1m,16m,64m -c up,smp2".into();
    run.configs = vec![fx::config("up", "0"), fx::config("smp2", "0-1")];
    run.host = host();
    run.environment = Default::default();
    let mut rs = Vec::new();
    for (cfg, cpus, f) in [("up", "0", 1.0), ("smp2", "0-1", 1.04)] {
        for (size, bytes, gbs) in [
            ("4k", 4096.0, 40.0),
            ("64k", 65536.0, 30.0),
            ("1m", 1048576.0, 20.0),
            ("16m", 16777216.0, 12.0),
            ("64m", 67108864.0, 9.0),
        ] {
            let m = gbs * f;
            let mut r = fx::ok(
                "mem.memcpy",
                &[("size", size), ("impl", "libc")],
                cfg,
                cpus,
                "GB/s",
                Better::Higher,
                &[m * 0.99, m, m * 1.01, m * 1.002, m * 0.998, m * 1.005],
            );
            r.extras.insert("working_set_bytes".into(), serde_json::json!(bytes * 2.0));
            r.extras
                .insert("caches".into(), serde_json::json!([{"level": 1, "bytes": 49152}, {"level": 2, "bytes": 2097152}, {"level": 3, "bytes": 33554432}]));
            rs.push(r);
        }
    }
    (run, rs)
}

pub(super) fn study_table() -> ExtraTable {
    ExtraTable {
        title: "Table 1: LMbench latencies (us), up against smp2 (substitute for noht1 against ht1)".into(),
        before: vec!["this machine has no SMT: the pair is up against smp2".into()],
        header: crate::study::tables::HEADER.map(String::from).to_vec(),
        rows: vec![
            ["simple syscall", "0.33", "0.35", "-5.7%", "0.21", "0.18", "+16.7%", "no"].map(String::from).to_vec(),
            ["geomean (1 rows)", "", "", "-5.7%", "", "", "+16.7%", ""].map(String::from).to_vec(),
        ],
        after: vec!["direction agrees in 0 of 1 rows; differs in: simple syscall".into()],
    }
}

/// A page with every kind of content: the two-configuration fixture (bars,
/// speedups without intervals), the mem sweep (lines with cache bands,
/// speedups with intervals), a single-configuration run, run 12 against
/// run 13, and a study table.
pub(super) fn full_page() -> String {
    let mut a = fx::comparison();
    a.runs[0].host = host();
    let (mr, mres) = mem_run();
    let mem = Report::for_run(mr, mres, &CompareOptions::default());
    let (pr, pres) = fx::patched_run();
    let single = Report::for_run(pr.clone(), pres.clone(), &fx::opt());
    let two = Report::for_two_runs((a.runs[0].clone(), a.results.clone()), (pr, pres), &CompareOptions::default());
    let page = Page { title: "kdelta report".into(), extra: &[study_table()] };
    page.render(&[a, mem, single, two]).expect("the page renders")
}

fn count(s: &str, pat: &str) -> usize {
    s.matches(pat).count()
}

#[test]
fn every_section_is_present() {
    let h = full_page();
    assert!(h.starts_with("<!DOCTYPE html>"));
    for id in ["id=\"extra\"", "id=\"run-12\"", "id=\"run-14\"", "id=\"run-13\"", "id=\"compare\""] {
        assert!(h.contains(id), "missing {id}");
    }
    for run in [12, 13, 14] {
        for part in ["command", "tables", "charts", "host", "warnings"] {
            assert!(h.contains(&format!("id=\"run-{run}-{part}\"")), "run {run}: missing {part}");
        }
    }
    // The exact commands.
    assert!(h.contains("<pre class=\"cmd\">kdelta run mem.memcpy --param size=4k,64k,1m,16m,64m -c up,smp2</pre>"));
    assert!(h.contains("<pre class=\"cmd\">kdelta run lat.syscall lat.pipe lat.ctx -c up</pre>"));
    // The tables as in the terminal: units, cv, changes with stars, geomeans.
    assert!(h.contains("<th>cv</th>") && h.contains("<th>change</th>") && h.contains("<th>unit</th>"));
    assert!(
        h.contains("class=\"num better\">+16.6% (1.17x faster) *</td>"),
        "the significant lat.syscall change is marked"
    );
    assert!(h.contains("<tr class=\"geo\">"));
    assert!(h.contains("* different: where the two sides took turns in one worker"), "the rule is stated");
    // Host snapshot and warnings.
    assert!(
        h.contains("6.18.0 (#1 SMP PREEMPT_DYNAMIC)") && h.contains("voluntary (from /sys/kernel/debug/sched/preempt)")
    );
    assert!(h.contains("<th>C library</th><td>2.36</td>") && h.contains("spectre_v2"));
    assert!(
        h.contains("<th>memory</th><td>4GiB</td>")
            && h.contains("<th>packages</th><td>1 (ids 0)</td>")
            && h.contains("L1 Data 48KiB, shared by cpus 0")
    );
    assert!(h.contains("busy"), "the busy-machine warning is listed");
    assert!(h.contains("run 13 is incomplete"));
    // The study table, drawn as the others.
    assert!(h.contains("<h3>Table 1: LMbench latencies (us), up against smp2 (substitute for noht1 against ht1)</h3>"));
    assert!(h.contains("<td class=\"num\">+16.7%</td><td>no</td>"));
    assert!(h.contains("direction agrees in 0 of 1 rows; differs in: simple syscall"));
    // Balanced structure.
    for (o, c) in
        [("<section", "</section>"), ("<table", "</table>"), ("<svg", "</svg>"), ("<ul", "</ul>"), ("<tr", "</tr>")]
    {
        assert_eq!(count(&h, o), count(&h, c), "{o} unbalanced");
    }
}

#[test]
fn every_chart_has_axes_direction_and_a_legend_with_cpu_sets() {
    let h = full_page();
    let charts: Vec<&str> = h.split("<svg ").skip(1).map(|s| s.split("</svg>").next().unwrap()).collect();
    let kinds: Vec<&str> =
        charts.iter().map(|c| c.split("data-kind=\"").nth(1).unwrap().split('"').next().unwrap()).collect();
    for k in ["lines", "bars", "speedup"] {
        assert!(kinds.contains(&k), "no {k} chart in {kinds:?}");
    }
    for c in &charts {
        assert!(
            c.contains("class=\"better\"") && (c.contains("higher is better") || c.contains("lower is better")),
            "no direction: {}",
            &c[..200]
        );
        assert!(c.contains("[cpus "), "legend without CPU sets: {}", &c[..200]);
        assert!(c.contains("rotate(-90"), "no y axis name");
    }
    // Run 12 (two configs): lat bars in us, bw bars in MB/s, a speedup chart.
    let r12 = h.split("id=\"run-12\"").nth(1).unwrap().split("id=\"run-14\"").next().unwrap();
    assert!(r12.contains("Charts (3)"), "{}", &r12[r12.find("Charts").unwrap()..][..20]);
    assert!(r12.contains(">median us (log scale)</text>") && r12.contains(">median MB/s</text>"));
    assert!(
        r12.contains("lat.proc.exec [noht]") || r12.contains("noht failed"),
        "the failed cell is said in its chart"
    );
    assert!(r12.contains("noht &lt; 0.310 (below resolution)") || r12.contains("(below resolution)"));
    // The mem sweep: a line chart over size with cache bands, and speedups with intervals.
    let r14 = h.split("id=\"run-14\"").nth(1).unwrap().split("id=\"run-13\"").next().unwrap();
    assert!(
        r14.contains("mem.memcpy over size")
            && r14.contains(">size (bytes, log scale)</text>")
            && r14.contains(">median GB/s</text>")
    );
    assert!(count(r14, "class=\"band\"") == 4, "L1, L2, L3 and memory bands");
    assert!(r14.contains(">L1</text>") && r14.contains(">memory</text>"));
    assert!(r14.contains("class=\"ci\""), "speedup intervals drawn");
    assert!(r14.contains("smp2 [cpus 0-1] against up [cpus 0]"));
}

#[test]
fn the_page_reaches_for_nothing_outside_itself() {
    let h = full_page();
    for bad in ["<script", "http:", "https:", "src=", "<link", "@import", "url("] {
        assert!(!h.contains(bad), "found {bad}");
    }
}

#[test]
fn missing_command_host_and_results_say_not_recorded() {
    let mut run = fx::run_record();
    run.command = String::new();
    run.configs.clear();
    let rep = Report::for_run(run, Vec::new(), &fx::opt());
    let h = Page { title: "t".into(), extra: &[] }.render(&[rep]).unwrap();
    assert!(h.contains("the command: not recorded"));
    assert!(h.contains("host snapshot: not recorded for this run"));
    assert!(h.contains("no results stored") && h.contains("Charts (0)") && h.contains("nothing to chart"));
    assert!(h.contains("none recorded"));
}

#[test]
fn host_snapshot_of_an_older_run_marks_what_it_lacks() {
    let h = super::host::render(&serde_json::json!({"hostname": "old", "kernel_release": "2.4.19"}));
    assert!(h.contains("<th>host name</th><td>old</td>"));
    assert!(h.contains("<th>kernel</th><td>2.4.19 ()</td>"));
    assert!(h.contains("<th>C library</th><td><span class=\"na\">not recorded</span></td>"));
    assert!(h.contains("mitigations: not recorded"));
}

#[test]
fn study_table_snapshot() {
    let got = super::extra_table(&study_table());
    let want = "<h3>Table 1: LMbench latencies (us), up against smp2 (substitute for noht1 against ht1)</h3>\n\
<ul class=\"notes\"><li>this machine has no SMT: the pair is up against smp2</li></ul>\n\
<div class=\"scroll\"><table class=\"results extra\"><thead><tr><th>row</th><th>published A</th><th>published B</th><th>published change</th><th>here A</th><th>here B</th><th>here change</th><th>same direction?</th></tr></thead><tbody>\
<tr><td>simple syscall</td><td class=\"num\">0.33</td><td class=\"num\">0.35</td><td class=\"num\">-5.7%</td><td class=\"num\">0.21</td><td class=\"num\">0.18</td><td class=\"num\">+16.7%</td><td>no</td></tr>\
<tr class=\"geo\"><td>geomean (1 rows)</td><td></td><td></td><td class=\"num\">-5.7%</td><td></td><td></td><td class=\"num\">+16.7%</td><td></td></tr>\
</tbody></table></div>\n\
<ul class=\"notes\"><li>direction agrees in 0 of 1 rows; differs in: simple syscall</li></ul>\n";
    assert_eq!(got.as_str(), want);
}

#[test]
fn long_tables_split_into_several_bar_charts() {
    let rs: Vec<ResultRecord> = (0..40)
        .map(|i| fx::us(&format!("aim9.t{i:02}"), &[], "up", "0", &[1.0 + i as f64, 1.1 + i as f64, 1.05 + i as f64]))
        .collect();
    let rep = Report::for_run(fx::run_record(), rs, &fx::opt());
    let cs = super::charts::for_run(&rep);
    assert_eq!(cs.len(), 40usize.div_ceil(super::charts::BARS_PER_CHART));
    assert!(cs[0].contains("aim9 (us), part 1 of 3") && cs[2].contains("aim9.t39"));
}

/// What an attacker or an unlucky user might plant in a stored field.
const MARK: &str = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>&amp;&\u{202e}'x";

/// Every string leaf of a JSON value with the marker appended.
fn marked(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(format!("{s}{MARK}")),
        Value::Array(a) => Value::Array(a.iter().map(marked).collect()),
        Value::Object(o) => Value::Object(o.iter().map(|(k, v)| (k.clone(), marked(v))).collect()),
        other => other.clone(),
    }
}

/// A page made from markers holding `markup` shows them as text: none of
/// it is live, no bidi control reaches the page and every `&` starts an
/// entity.
#[track_caller]
pub(super) fn assert_clean(h: &str, markup: &[&str]) {
    for bad in markup {
        assert!(!h.contains(bad), "unescaped {bad:?} at {}", &h[h.find(bad).unwrap().saturating_sub(120)..][..200]);
    }
    assert!(!h.chars().any(crate::model::text::is_bidi_control), "a bidi control reached the page");
    for (i, _) in h.match_indices('&') {
        let r = &h[i..];
        assert!(
            ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"].iter().any(|e| r.starts_with(e)),
            "a bare & at {}",
            &r[..r.len().min(40)]
        );
    }
}

/// Markers in every stored field: configuration names (and their
/// environment values), label, command, times, version, host fields (every
/// string of the snapshot), benchmark, family, parameter names and values,
/// CPU sets, units, failure reasons, notes, summaries, remarks, a study
/// table's every cell, and the title. None comes out unescaped; the
/// configuration name in the bar chart's tooltip was finding 1.
#[test]
fn markers_in_every_stored_field_come_out_escaped() {
    let cfg_a = format!("up+env=Q={MARK}");
    let cfg_b = format!("noht{MARK}");
    let mut run = fx::run_record();
    run.label = Some(format!("label{MARK}"));
    run.command = format!("kdelta run x --config {cfg_a}");
    run.started = format!("2024{MARK}");
    run.finished = Some(format!("2025{MARK}"));
    run.kdelta_version = format!("0.1{MARK}");
    let mut c = fx::config(&cfg_a, "0");
    c.env = vec![("Q".into(), MARK.into())];
    run.configs = vec![c, fx::config(&cfg_b, "0-1")];
    run.host = marked(&host());
    let bench = format!("lat.sys{MARK}");
    let p = |v: &str| vec![("size".to_string(), v.to_string()), (format!("k{MARK}"), format!("v{MARK}"))];
    let mut rs = Vec::new();
    for (cfg, f) in [(&cfg_a, 1.0), (&cfg_b, 1.3)] {
        // Bars (no sweep): two parameter points that differ in a marked value.
        for v in [format!("a{MARK}"), format!("b{MARK}")] {
            let kv = p(&v);
            let kv: Vec<(&str, &str)> = kv.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            let mut r = fx::ok(
                &bench,
                &kv,
                cfg,
                &format!("0{MARK}"),
                &format!("us{MARK}"),
                Better::Lower,
                &[f, f * 1.01, f * 0.99, f * 1.002],
            );
            r.notes = vec![format!("note{MARK}")];
            rs.push(r);
        }
        // A line chart: a numeric sweep.
        for n in [1, 2, 4, 8] {
            let nv = n.to_string();
            let mut r = fx::ok(
                "thread.create",
                &[("threads", nv.as_str())],
                cfg,
                "0",
                &format!("us{MARK}"),
                Better::Lower,
                &[f * n as f64, f * n as f64 * 1.01, f * n as f64 * 0.99],
            );
            r.family = format!("thread{MARK}");
            rs.push(r);
        }
        // A failure with its reason.
        let mut r = fx::ok("lat.fail", &[], cfg, "0", "us", Better::Lower, &[]);
        r.status = crate::model::record::Status::Failed;
        r.summary = None;
        r.reason = Some(format!("worker said {MARK}"));
        rs.push(r);
    }
    let mut rep = Report::for_run(run.clone(), rs.clone(), &CompareOptions::default());
    rep.summaries.push(format!("summary{MARK}"));
    rep.notes.push(format!("note{MARK}"));
    rep.remarks.push(format!("remark{MARK}"));
    let mut run2 = run.clone();
    run2.id = 13;
    let mut two = Report::for_two_runs((run.clone(), rs.clone()), (run2, rs), &CompareOptions::default());
    two.remarks.push(format!("remark{MARK}"));
    let extra = ExtraTable {
        title: format!("title{MARK}"),
        before: vec![format!("before{MARK}")],
        header: vec![format!("h{MARK}"), "x".into()],
        rows: vec![vec![format!("r{MARK}"), format!("1.5{MARK}")], vec![format!("geomean{MARK}"), "2".into()]],
        after: vec![format!("after{MARK}")],
    };
    let h = Page { title: format!("page{MARK}"), extra: &[extra] }.render(&[rep, two]).unwrap();
    for kind in ["bars", "lines", "speedup"] {
        assert!(h.contains(&format!("data-kind=\"{kind}\"")), "no {kind} chart");
    }
    assert!(h.contains("up+env=Q=&lt;script&gt;alert(1)&lt;/script&gt;"), "the configuration name is shown, escaped");
    assert_clean(&h, &["<script", "<img", "'x"]);
    assert!(h.contains("&amp;amp;&amp;[U+202E]&#39;x"), "the marker's tail is shown, escaped and neutralised");
}

/// A profile of `samples` stacks of a pipe round trip, `idle` of them in
/// the kernel's idle path, named with a hostile frame.
fn pipe_profile(samples: u64, idle: u64) -> crate::model::profile::Profile {
    let mut p = crate::model::profile::Profile {
        event: "cpu-clock".into(),
        hz: 1999,
        workers: 2,
        figures: vec![5.0; 10],
        ..Default::default()
    };
    p.add_folded(&format!(
        "kdelta;main;round_trip;__GI___libc_write;entry_SYSCALL_64_after_hwframe_[k];anon_pipe_write_[k];try_to_wake_up_[k] {}\n\
         kdelta;main;round_trip;__GI___libc_read;entry_SYSCALL_64_after_hwframe_[k];anon_pipe_read_[k];schedule_[k] {}\n\
         kdelta;main;<script>alert(1)</script>\u{202e} 3\n\
         kdelta;do_idle_[k] {idle}\n",
        (samples - idle - 3) / 2,
        samples - idle - 3 - (samples - idle - 3) / 2
    ));
    p
}

/// A run of lat.pipe under up and smp2 with profiles.
pub(super) fn profiled_page() -> String {
    let mut run = fx::run_record();
    run.id = 21;
    run.configs = vec![fx::config("up", "0"), fx::config("smp2", "0-1")];
    let mut a = fx::us("lat.pipe", &[], "up", "0", &[5.0, 5.1, 5.0, 4.9, 5.0]);
    a.profile = Some(pipe_profile(1000, 100));
    let mut b = fx::us("lat.pipe", &[], "smp2", "0-1", &[9.0, 9.1, 9.0, 8.9, 9.0]);
    b.profile = Some(pipe_profile(1200, 500));
    let rep = Report::for_run(run, vec![a, b], &CompareOptions::default());
    Page { title: "profiles".into(), extra: &[] }.render(&[rep]).expect("the page renders")
}

#[test]
fn profiled_benchmarks_get_a_flame_graph_per_configuration_and_a_differential_one() {
    let h = profiled_page();
    assert!(h.contains("id=\"run-21-profiles\""));
    assert_eq!(count(&h, "<svg class=\"flame\""), 3, "up, smp2 and up -> smp2");
    assert!(!h.contains("<script") && !h.contains("onload=") && !h.contains("onclick="), "no script");
    assert!(h.contains("&lt;script&gt;alert(1)&lt;/script&gt;[U+202E]"), "frame names escaped and neutralised");
    // The widths add up to the samples taken: the root frame holds them all.
    assert!(
        h.contains("<title>all (1,000 samples, 100%)</title>") || h.contains("<title>all (1000 samples, 100%)</title>"),
        "root of up"
    );
    assert!(h.contains("total_samples=\"1000\"") && h.contains("total_samples=\"1200\""));
    // Kernel frames are drawn.
    assert!(h.contains("<title>try_to_wake_up ("));
    // Every id in the page is unique.
    let mut ids: Vec<&str> = h.split(" id=\"").skip(1).map(|s| &s[..s.find('"').unwrap()]).collect();
    let n = ids.len();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ids");
    // Each graph has its table: the top functions, or the change of each.
    assert_eq!(count(&h, "<table class=\"profile-top\">"), 2);
    assert_eq!(count(&h, "<table class=\"profile-diff\">"), 1);
    assert!(h.contains("<th>up %</th><th>smp2 %</th>"));
    assert!(
        h.contains("<td class=\"num\">+31.7</td><td>*</td><td>do_idle [k]</td>"),
        "the idle path's change is starred"
    );
    // The change in the idle path is named under the differential graph.
    assert!(
        h.contains("lat.pipe [up -&gt; smp2]: time in do_idle x4.2"),
        "{}",
        &h[h.find("run-21-profiles").unwrap()..][..3000]
    );
}

#[test]
fn a_run_without_profiles_has_no_profile_section() {
    assert!(!full_page().contains("-profiles\""));
}
