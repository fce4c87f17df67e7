//! Snapshot tests of the renderers, in the manner of hyperfine's exporter
//! tests: fixed records in, the whole output compared with the text written
//! here. The fixture is one run of two configurations (`up` on CPU 0, `noht`
//! on CPUs 0-1) whose results carry every kind of remark a table can show: a
//! significant change each way, an outlier, a placement split, a figure
//! below resolution, a noisy result with disturbed samples, a change that
//! does not hold across rounds, a failure, benchmark notes and a busy-machine warning. Every
//! figure is fixed; nothing is measured and nothing reads the clock. The
//! snapshots are `expect-test` literals: when a rendering changes on purpose,
//! `UPDATE_EXPECT=1 cargo test --release --lib report::tests` rewrites them
//! in place; read the diff line by line before committing it. The SVG chart is long and belongs to
//! plotters: its tests check what it says, not every coordinate.

use super::asciidoc::Asciidoc;
use super::chart::{Chart, NothingToChart};
use super::csv::Csv;
use super::json::Json;
use super::markdown::Markdown;
use super::model::Report;
use super::orgmode::Orgmode;
use super::text::{self, Text};
use super::{fmt_num, fmt_pct, html, Renderer};
use crate::cpuset::CpuSet;
use crate::model::config::Config;
use crate::model::record::{Quality, ResultRecord, RunRecord, RunStatus, SampleMeta, Status};
use crate::model::sample::TaskKind;
use crate::model::{Better, Params, Warning};
use crate::stats::CompareOptions;
use expect_test::expect;

pub(super) fn config(name: &str, cpus: &str) -> Config {
    Config {
        name: name.into(),
        cpus: CpuSet::parse_list(cpus).unwrap(),
        policy: None,
        env: vec![],
        knobs: vec![],
        counters: None,
        cgroup: vec![],
    }
}

/// Run 12 "baseline": `--runs auto` with a 2 % target, one result stopped at
/// the cap, and a machine that was busy.
pub(super) fn run_record() -> RunRecord {
    RunRecord {
        id: 12,
        label: Some("baseline".into()),
        started: "2024-05-01T10:00:00Z".into(),
        finished: Some("2024-05-01T10:04:31Z".into()),
        status: RunStatus::Complete,
        kdelta_version: "0.1.0".into(),
        command: "kdelta run lat.syscall lat.pipe lat.ctx lat.proc.exec bw.mem.rd bw.mem.wr -c up,noht --runs auto"
            .into(),
        pid: None,
        configs: vec![config("up", "0"), config("noht", "0-1")],
        host: serde_json::json!({}),
        environment: crate::model::RunEnvironment::from_json(serde_json::json!({
            "runs": "auto",
            "ci_target_pct": 2.0,
            "auto_met": 10,
            "auto_capped": ["lat.pipe [noht]"],
            "warnings": [{"kind": "busy_machine", "load_before": 1.25, "load_after": 1.5, "others_cpus": 0.4}],
        })),
        meta: Default::default(),
        job: None,
    }
}

pub(super) fn params(kv: &[(&str, &str)]) -> Params {
    let mut p = Params::default();
    for (k, v) in kv {
        p.set(k, *v);
    }
    p
}

/// A clean result: every sample used, as many as wanted.
pub(super) fn ok(
    bench: &str,
    p: &[(&str, &str)],
    cfg: &str,
    cpus: &str,
    unit: &str,
    better: Better,
    samples: &[f64],
) -> ResultRecord {
    ResultRecord {
        params: params(p),
        config: cfg.into(),
        cpus: cpus.into(),
        unit: unit.into(),
        better,
        quality: Some(Quality {
            kind: TaskKind::Solo,
            wanted: samples.len(),
            clean: samples.len(),
            ..Default::default()
        }),
        summary: crate::stats::summarize(samples, better == Better::Higher),
        ..crate::testing::stored::ok_result(bench, samples)
    }
}

pub(super) fn us(bench: &str, p: &[(&str, &str)], cfg: &str, cpus: &str, samples: &[f64]) -> ResultRecord {
    ok(bench, p, cfg, cpus, "us", Better::Lower, samples)
}

fn mbs(bench: &str, cfg: &str, cpus: &str, samples: &[f64]) -> ResultRecord {
    ok(bench, &[("size", "64m")], cfg, cpus, "MB/s", Better::Higher, samples)
}

/// Where a sample's tasks ran, its round, and whether it was disturbed.
fn meta(start: &[u32], end: &[u32], round: u32, disturbed: bool) -> SampleMeta {
    SampleMeta { cpus_start: start.to_vec(), cpus_end: end.to_vec(), round, disturbed, ..Default::default() }
}

/// Both configurations' results, in the order a run stores them.
pub(super) fn results() -> Vec<ResultRecord> {
    // lat.syscall: noht is 17 % faster; one outlier on up.
    let mut syscall_up = us("lat.syscall", &[], "up", "0", &[0.210, 0.211, 0.209, 0.212, 0.210, 0.245]);
    syscall_up.warnings = vec![Warning::Outliers { count: 1, n: 6 }];
    let syscall_noht = us("lat.syscall", &[], "noht", "0-1", &[0.180, 0.182, 0.181, 0.179, 0.180, 0.181]);

    // lat.pipe: on noht the two tasks share a CPU in 6 samples (7.1 us) and
    // sit on two CPUs in 4 (19.6 us): a placement split, and high variation.
    let mut pipe_up = us("lat.pipe", &[], "up", "0", &[5.20, 5.18, 5.25, 5.21, 5.19, 5.22]);
    pipe_up.samples_meta = (0..6).map(|_| meta(&[0, 0], &[0, 0], 0, false)).collect();
    let pipe_values = [7.05, 19.2, 7.10, 7.12, 19.8, 7.08, 7.15, 19.5, 7.11, 20.1];
    let mut pipe_noht = us("lat.pipe", &[], "noht", "0-1", &pipe_values);
    pipe_noht.quality.as_mut().unwrap().kind = TaskKind::Waits;
    pipe_noht.samples_meta = pipe_values
        .iter()
        .map(|&v| if v < 10.0 { meta(&[1, 1], &[1, 1], 0, false) } else { meta(&[0, 1], &[0, 1], 0, false) })
        .collect();
    pipe_noht.placement =
        crate::stats::trust::placement_split(&pipe_noht.samples, &pipe_noht.samples_meta).expect("the fixture splits");
    pipe_noht.warnings = vec![Warning::HighVariation { cv: pipe_noht.summary.as_ref().unwrap().cv, threshold: 0.05 }];

    // lat.ctx: on noht the net figure's interval reaches zero.
    let ctx = [("procs", "2"), ("size", "16")];
    let ctx_up = us("lat.ctx", &ctx, "up", "0", &[1.52, 1.48, 1.55, 1.50, 1.51, 1.49]);
    let ctx_net = [-0.20, 0.31, 0.10, 0.25, -0.05, 0.15];
    let mut ctx_noht = us("lat.ctx", &ctx, "noht", "0-1", &ctx_net);
    ctx_noht.below_resolution = crate::stats::trust::below_resolution(&ctx_net);
    assert_eq!(ctx_noht.below_resolution, Some(0.31));

    // lat.proc.exec: fails on noht.
    let exec_up = us("lat.proc.exec", &[], "up", "0", &[410.5, 415.2, 408.9, 412.0, 411.3, 409.7]);
    let mut exec_noht = us("lat.proc.exec", &[], "noht", "0-1", &[]);
    exec_noht.status = Status::Failed;
    exec_noht.reason = Some("child failed (wait status 0x100): the program could not be run".into());
    exec_noht.quality = None;

    // bw.mem.rd: noht 4 % faster, but only in two of three rounds (+8 %, +4 %, -0.5 %).
    let rounds = [1, 1, 2, 2, 3, 3];
    let note = "buffer of 64 MiB, 4 x the last-level cache";
    let mut rd_up = mbs("bw.mem.rd", "up", "0", &[9690.0, 9710.0, 9990.0, 10010.0, 10290.0, 10310.0]);
    rd_up.samples_meta = rounds.iter().map(|&r| meta(&[0], &[0], r, false)).collect();
    rd_up.notes = vec![note.into()];
    let mut rd_noht = mbs("bw.mem.rd", "noht", "0-1", &[10470.0, 10490.0, 10390.0, 10410.0, 10240.0, 10260.0]);
    rd_noht.samples_meta = rounds.iter().map(|&r| meta(&[1], &[1], r, false)).collect();
    rd_noht.notes = vec![note.into()];

    // bw.mem.wr: on noht 3 of 8 samples disturbed, 2 retaken: 5 clean of 6 wanted.
    let wr_up = mbs("bw.mem.wr", "up", "0", &[8000.0, 8050.0, 7980.0, 8020.0, 8010.0, 7990.0]);
    let wr_values = [9400.0, 7200.0, 9450.0, 9380.0, 6900.0, 9420.0, 7500.0, 9410.0];
    let mut wr_noht = mbs("bw.mem.wr", "noht", "0-1", &wr_values);
    wr_noht.samples_meta = wr_values.iter().map(|&v| meta(&[1], &[1], 0, v < 9000.0)).collect();
    wr_noht.summary = crate::stats::summarize(&wr_noht.clean_samples(), true);
    wr_noht.quality = Some(Quality {
        kind: TaskKind::Solo,
        wanted: 6,
        clean: 5,
        disturbed: 3,
        retaken: 2,
        noisy: true,
        ..Default::default()
    });

    vec![
        syscall_up,
        pipe_up,
        ctx_up,
        exec_up,
        rd_up,
        wr_up,
        syscall_noht,
        pipe_noht,
        ctx_noht,
        exec_noht,
        rd_noht,
        wr_noht,
    ]
}

pub(super) fn opt() -> CompareOptions {
    CompareOptions { bootstrap: 0, ..Default::default() }
}

/// One table: `up` against `noht`.
pub(super) fn comparison() -> Report {
    Report::for_run(run_record(), results(), &opt())
}

/// The run as if it had measured `noht` alone: no table, the results grid.
pub(super) fn single_config() -> Report {
    let mut run = run_record();
    run.configs.retain(|c| c.name == "noht");
    Report::for_run(run, results().into_iter().filter(|r| r.config == "noht").collect(), &opt())
}

/// Run 13 "patched", interrupted: `up` alone, three results.
pub(super) fn patched_run() -> (RunRecord, Vec<ResultRecord>) {
    let mut run = run_record();
    run.id = 13;
    run.label = Some("patched".into());
    run.started = "2024-05-02T09:30:00Z".into();
    run.finished = None;
    run.status = RunStatus::Incomplete;
    run.command = "kdelta run lat.syscall lat.pipe lat.ctx -c up".into();
    run.configs = vec![config("up", "0")];
    run.environment = Default::default();
    let ctx = [("procs", "2"), ("size", "16")];
    let results = vec![
        us("lat.syscall", &[], "up", "0", &[0.190, 0.191, 0.189, 0.192, 0.190, 0.191]),
        us("lat.pipe", &[], "up", "0", &[5.19, 5.22, 5.20, 5.24, 5.18, 5.21]),
        us("lat.ctx", &ctx, "up", "0", &[1.40, 1.42, 1.39, 1.41, 1.43, 1.40]),
    ];
    (run, results)
}

/// lat.ctx swept over size on both configurations.
pub(super) fn sweep() -> Report {
    let mut rs = Vec::new();
    for (cfg, cpus, base) in [("up", "0", 1.5), ("noht", "0-1", 1.9)] {
        for (size, extra) in [("0", 0.0), ("16", 0.1), ("64", 0.6)] {
            let m = base + extra;
            rs.push(us("lat.ctx", &[("procs", "2"), ("size", size)], cfg, cpus, &[m - 0.02, m, m + 0.03]));
        }
    }
    Report::for_run(run_record(), rs, &opt())
}

/// A short run for the JSON snapshot: three samples a result, no quality
/// counts, an empty environment; one change, one figure below resolution,
/// one failure.
pub(super) fn short_run() -> Report {
    let mut run = run_record();
    run.command = "kdelta run lat.syscall lat.ctx lat.proc.exec -c up,noht".into();
    run.environment = Default::default();
    let ctx = [("procs", "2"), ("size", "16")];
    let mut rs = vec![
        us("lat.syscall", &[], "up", "0", &[0.210, 0.212, 0.209]),
        us("lat.ctx", &ctx, "up", "0", &[1.52, 1.50, 1.48]),
        us("lat.proc.exec", &[], "up", "0", &[410.5, 412.0, 409.7]),
        us("lat.syscall", &[], "noht", "0-1", &[0.180, 0.182, 0.181]),
        us("lat.ctx", &ctx, "noht", "0-1", &[-0.20, 0.31, 0.15]),
        us("lat.proc.exec", &[], "noht", "0-1", &[]),
    ];
    rs[4].below_resolution = Some(0.31);
    rs[5].status = Status::Failed;
    rs[5].reason = Some("child failed (wait status 0x100): the program could not be run".into());
    for r in &mut rs {
        r.quality = None;
    }
    Report::for_run(run, rs, &opt())
}

/// The rendering without its ANSI colour sequences.
fn strip_colour(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find("\x1b[") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        rest = &after[after.find('m').expect("a colour sequence ends with m") + 1..];
    }
    out.push_str(rest);
    out
}

/// The text of every `<text>` element of an SVG, in document order.
fn svg_texts(svg: &str) -> Vec<&str> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>'))
        .filter_map(|(_, rest)| rest.split_once("</text>"))
        .map(|(body, _)| body.trim())
        .collect()
}

/// Every renderer, by name: the six `--format` choices (text with and
/// without colour), the SVG chart and the HTML page.
fn renderers() -> Vec<(&'static str, Box<dyn Renderer>)> {
    vec![
        ("text", Box::new(Text { color: false })),
        ("text in colour", Box::new(Text { color: true })),
        ("Markdown", Box::new(Markdown)),
        ("AsciiDoc", Box::new(Asciidoc)),
        ("Org mode", Box::new(Orgmode)),
        ("CSV", Box::new(Csv)),
        ("JSON", Box::new(Json)),
        ("SVG chart", Box::new(Chart)),
        ("HTML", Box::new(html::Page { title: "kdelta report".into(), extra: &[] })),
    ]
}

/// What `renderer` makes of `reports`; every snapshot is taken through here.
#[track_caller]
fn rendered(renderer: &dyn Renderer, reports: &[Report]) -> String {
    match renderer.render(reports) {
        Ok(out) => out,
        Err(e) => panic!("the renderer failed: {e:#}"),
    }
}

mod asciidoc_orgmode;
mod charts;
mod json_snapshot;
mod markdown_csv;
mod renderers;
mod text_snapshots;
