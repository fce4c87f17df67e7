//! Snapshot tests of the renderers, in the manner of hyperfine's exporter
//! tests: fixed records in, the whole output compared with the text written
//! here. The fixture is one run of two configurations (`up` on CPU 0, `noht`
//! on CPUs 0-1) whose results carry every kind of remark a table can show: a
//! significant change each way, an outlier, a placement split, a figure
//! below resolution, a noisy result with disturbed samples, a change within
//! the A/A noise, a failure, benchmark notes and a busy-machine warning. Every
//! figure is fixed; nothing is measured and nothing reads the clock. When a
//! rendering changes on purpose, read the new output line by line before
//! pasting it over the old snapshot. The SVG chart is long and belongs to
//! plotters: its tests check what it says, not every coordinate.

use super::model::Report;
use super::{chart, csv, fmt_num, fmt_pct, json, markdown, text};
use crate::cpuset::CpuSet;
use crate::model::config::Config;
use crate::model::record::{Quality, ResultRecord, RunRecord, RunStatus, SampleMeta, Status};
use crate::model::{Better, Params, TaskKind, Warning};
use crate::stats::CompareOptions;

pub(super) fn config(name: &str, cpus: &str) -> Config {
    Config { name: name.into(), cpus: CpuSet::parse_list(cpus).unwrap(), policy: None, env: vec![], knobs: vec![] }
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
        command: "kdelta run lat.syscall lat.pipe lat.ctx lat.proc.exec bw.mem.rd bw.mem.wr -c up,noht --runs auto".into(),
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
pub(super) fn ok(bench: &str, p: &[(&str, &str)], cfg: &str, cpus: &str, unit: &str, better: Better, samples: &[f64]) -> ResultRecord {
    ResultRecord {
        benchmark: bench.into(),
        family: bench.split('.').next().unwrap().into(),
        params: params(p),
        config: cfg.into(),
        cpus: cpus.into(),
        unit: unit.into(),
        better,
        status: Status::Ok,
        reason: None,
        samples: samples.to_vec(),
        samples_meta: vec![],
        quality: Some(Quality { kind: TaskKind::Solo, wanted: samples.len(), clean: samples.len(), ..Default::default() }),
        placement: vec![],
        below_resolution: None,
        summary: crate::stats::summarize(samples, better == Better::Higher),
        iterations: None,
        extras: Default::default(),
        notes: vec![],
        warnings: vec![],
        simulated: false,
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
    let pipe_up = us("lat.pipe", &[], "up", "0", &[5.20, 5.18, 5.25, 5.21, 5.19, 5.22]);
    let pipe_values = [7.05, 19.2, 7.10, 7.12, 19.8, 7.08, 7.15, 19.5, 7.11, 20.1];
    let mut pipe_noht = us("lat.pipe", &[], "noht", "0-1", &pipe_values);
    pipe_noht.quality.as_mut().unwrap().kind = TaskKind::Waits;
    pipe_noht.samples_meta =
        pipe_values.iter().map(|&v| if v < 10.0 { meta(&[1, 1], &[1, 1], 0, false) } else { meta(&[0, 1], &[0, 1], 0, false) }).collect();
    pipe_noht.placement = crate::stats::trust::placement_split(&pipe_noht.samples, &pipe_noht.samples_meta).expect("the fixture splits");
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

    // bw.mem.rd: noht 4 % faster, but the rounds of each side differ by 6 %.
    let rounds = [1, 1, 2, 2, 3, 3];
    let note = "buffer of 64 MiB, 4 x the last-level cache";
    let mut rd_up = mbs("bw.mem.rd", "up", "0", &[9690.0, 9710.0, 9990.0, 10010.0, 10290.0, 10310.0]);
    rd_up.samples_meta = rounds.iter().map(|&r| meta(&[0], &[0], r, false)).collect();
    rd_up.notes = vec![note.into()];
    let mut rd_noht = mbs("bw.mem.rd", "noht", "0-1", &[10090.0, 10110.0, 10390.0, 10410.0, 10690.0, 10710.0]);
    rd_noht.samples_meta = rounds.iter().map(|&r| meta(&[1], &[1], r, false)).collect();
    rd_noht.notes = vec![note.into()];

    // bw.mem.wr: on noht 3 of 8 samples disturbed, 2 retaken: 5 clean of 6 wanted.
    let wr_up = mbs("bw.mem.wr", "up", "0", &[8000.0, 8050.0, 7980.0, 8020.0, 8010.0, 7990.0]);
    let wr_values = [9400.0, 7200.0, 9450.0, 9380.0, 6900.0, 9420.0, 7500.0, 9410.0];
    let mut wr_noht = mbs("bw.mem.wr", "noht", "0-1", &wr_values);
    wr_noht.samples_meta = wr_values.iter().map(|&v| meta(&[1], &[1], 0, v < 9000.0)).collect();
    wr_noht.summary = crate::stats::summarize(&wr_noht.clean_samples(), true);
    wr_noht.quality = Some(Quality { kind: TaskKind::Solo, wanted: 6, clean: 5, disturbed: 3, retaken: 2, noisy: true, ..Default::default() });

    vec![syscall_up, pipe_up, ctx_up, exec_up, rd_up, wr_up, syscall_noht, pipe_noht, ctx_noht, exec_noht, rd_noht, wr_noht]
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

/// Compare a whole rendering with its snapshot, written after a newline so
/// that it starts in the first column. A backslash at the end of a snapshot
/// line joins it to the next one (no rendered line ends in one): long lines
/// are cut after a space or a comma. On a mismatch, name the first line that
/// differs and show both.
#[track_caller]
fn assert_snapshot(actual: &str, expected: &str) {
    let expected = expected.strip_prefix('\n').unwrap_or(expected).replace("\\\n", "");
    let expected = expected.as_str();
    if actual != expected {
        let (a, e): (Vec<&str>, Vec<&str>) = (actual.lines().collect(), expected.lines().collect());
        let at = a.iter().zip(&e).position(|(x, y)| x != y).unwrap_or(a.len().min(e.len()));
        panic!("the output differs from the snapshot at line {}\n--- actual\n{actual}--- expected\n{expected}", at + 1);
    }
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

fn write_chart(rep: &Report) -> String {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("chart.svg");
    chart::write_svg(rep, &path).unwrap();
    std::fs::read_to_string(&path).unwrap()
}

#[test]
fn text_comparison_of_two_configurations() {
    assert_snapshot(
        &text::render(&comparison(), false),
        r#"
run 12 "baseline": 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

benchmark                  unit      up    cv      noht     cv    change
------------------------------------------------------------------------
lat.syscall                us    0.2105  6.6%    0.1805   0.6%  +16.6% *
lat.pipe                   us     5.205  0.5%     7.135  53.5%  -27.0% *
lat.ctx                    us     1.505  1.6%  < 0.3100      -       -
lat.proc.exec              us     410.9  0.5%    failed              -
bw.mem.rd                  MB/s  10,000  2.7%    10,400   2.6%   +4.0%
bw.mem.wr                  MB/s    8005  0.3%    9410 ?   0.3%  +17.6%
------------------------------------------------------------------------
geomean lat (2 of 4 rows)  us     1.047           1.135          -7.8%
geomean bw (2 rows)        MB/s    8947            9893         +10.6%
up: cpus 0
noht: cpus 0-1
change: + means noht is better (speedup - 1); * significant: Welch and Mann-Whitney p < 0.05, |change| >= 1% and beyond the A/A noise (the \
spread between one configuration's rounds), neither side noisy nor busy; cv: coefficient of variation of the clean samples; geomean rows \
invert lower-is-better ratios first
?: noisy, fewer clean samples than wanted even after retakes
parameters of lat.ctx: procs=2 size=16
parameters of bw.mem.rd, bw.mem.wr: size=64m
lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
below resolution (the subtracted overhead is as large as the difference) in 1 of 11 results: lat.ctx [noht] < 0.3100 us
noisy (fewer clean samples than wanted; never marked significant) in 1 of 11 results (worst: bw.mem.wr [noht], 5 of 6 clean)
disturbed samples (other work on the CPU; kept, not used) in 1 of 11 results: 3 in all, 2 retaken (most: bw.mem.wr [noht], 3)
high variation in 1 of 11 results (worst: lat.pipe [noht], cv 53.5%)
outliers beyond 1.5 IQR in 1 of 11 results (worst: lat.syscall [up], 1 of 6 samples)
bw.mem.rd [up] and bw.mem.rd [noht]: buffer of 64 MiB, 4 x the last-level cache
not marked significant although the test passed: 2 changes (1 within the A/A noise, 1 a side is noisy)
(every remark of every result: --verbose, or kdelta show RUN --warnings)

runs auto: 10 of 11 results have a median known to +-2% (95% interval); 1 stopped at the cap (3x the samples, or the time budget): lat.pipe \
[noht]
warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#,
    );
}

#[test]
fn text_of_a_single_configuration_run() {
    assert_snapshot(
        &text::render(&single_config(), false),
        r#"
run 12 "baseline": 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

benchmark      config  cpus    median  unit     cv      min     max   n
-----------------------------------------------------------------------
lat.syscall    noht    0-1     0.1805  us     0.6%   0.1790  0.1820   6
lat.pipe       noht    0-1      7.135  us    53.5%    7.050   20.10  10
lat.ctx        noht    0-1   < 0.3100  us        -  -0.2000  0.3100   6
lat.proc.exec  noht    0-1     failed  us                             0
bw.mem.rd      noht    0-1     10,400  MB/s   2.6%   10,090  10,710   6
bw.mem.wr      noht    0-1     9410 ?  MB/s   0.3%     9380    9450   5
parameters of lat.ctx: procs=2 size=16
parameters of bw.mem.rd, bw.mem.wr: size=64m
?: noisy, fewer clean samples than wanted even after retakes
lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
below resolution (the subtracted overhead is as large as the difference) in 1 of 5 results: lat.ctx [noht] < 0.3100 us
noisy (fewer clean samples than wanted; never marked significant) in 1 of 5 results (worst: bw.mem.wr [noht], 5 of 6 clean)
disturbed samples (other work on the CPU; kept, not used) in 1 of 5 results: 3 in all, 2 retaken (most: bw.mem.wr [noht], 3)
high variation in 1 of 5 results (worst: lat.pipe [noht], cv 53.5%)
bw.mem.rd [noht]: buffer of 64 MiB, 4 x the last-level cache
(every remark of every result: --verbose, or kdelta show RUN --warnings)

runs auto: 10 of 11 results have a median known to +-2% (95% interval); 1 stopped at the cap (3x the samples, or the time budget): lat.pipe \
[noht]
warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#,
    );
}

#[test]
fn text_verbose_lists_every_remark_and_every_withheld_star() {
    let mut rep = comparison();
    rep.verbose = true;
    assert_snapshot(
        &text::render(&rep, false),
        r#"
run 12 "baseline": 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

benchmark                  unit      up    cv      noht     cv    change
------------------------------------------------------------------------
lat.syscall                us    0.2105  6.6%    0.1805   0.6%  +16.6% *
lat.pipe                   us     5.205  0.5%     7.135  53.5%  -27.0% *
lat.ctx                    us     1.505  1.6%  < 0.3100      -       -
lat.proc.exec              us     410.9  0.5%    failed              -
bw.mem.rd                  MB/s  10,000  2.7%    10,400   2.6%   +4.0%
bw.mem.wr                  MB/s    8005  0.3%    9410 ?   0.3%  +17.6%
------------------------------------------------------------------------
geomean lat (2 of 4 rows)  us     1.047           1.135          -7.8%
geomean bw (2 rows)        MB/s    8947            9893         +10.6%
up: cpus 0
noht: cpus 0-1
change: + means noht is better (speedup - 1); * significant: Welch and Mann-Whitney p < 0.05, |change| >= 1% and beyond the A/A noise (the \
spread between one configuration's rounds), neither side noisy nor busy; cv: coefficient of variation of the clean samples; geomean rows \
invert lower-is-better ratios first
?: noisy, fewer clean samples than wanted even after retakes
parameters of lat.ctx: procs=2 size=16
parameters of bw.mem.rd, bw.mem.wr: size=64m
lat.syscall [up]: 1 of 6 samples are outliers (beyond 1.5 IQR)
lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
lat.pipe [noht]: high variation: cv 53.5% (above 5%)
lat.ctx [noht]: below resolution (< 0.3100 us): the interval of the net figure reaches zero
lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
bw.mem.rd [up]: buffer of 64 MiB, 4 x the last-level cache
bw.mem.rd [noht]: buffer of 64 MiB, 4 x the last-level cache
bw.mem.wr [noht]: 3 samples disturbed by other work (kept, not used), 2 retaken
bw.mem.wr [noht]: noisy: 5 clean samples of 6 wanted; never marked significant
bw.mem.rd [noht]: change +4.0% not marked significant: within the A/A noise (6.0%)
bw.mem.wr [noht]: change +17.6% not marked significant: a side is noisy

runs auto: 10 of 11 results have a median known to +-2% (95% interval); 1 stopped at the cap (3x the samples, or the time budget): lat.pipe \
[noht]
warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#,
    );
}

#[test]
fn text_comparison_of_two_runs() {
    let rep = Report::for_two_runs((run_record(), results()), patched_run(), &opt());
    assert_snapshot(
        &text::render(&rep, false),
        r#"
run 12 "baseline": 2024-05-01T10:00:00Z (complete), kdelta 0.1.0
run 13 "patched": 2024-05-02T09:30:00Z (incomplete), kdelta 0.1.0

benchmark                  unit  run 12 (baseline) up    cv  run 13 (patched) up    cv    change
------------------------------------------------------------------------------------------------
lat.syscall                us                  0.2105  6.6%               0.1905  0.6%  +10.5% *
lat.pipe                   us                   5.205  0.5%                5.205  0.4%   +0.0%
lat.ctx                    us                   1.505  1.6%                1.405  1.0%   +7.1% *
lat.proc.exec              us                   410.9  0.5%                    -             -
bw.mem.rd                  MB/s                10,000  2.7%                    -             -
bw.mem.wr                  MB/s                  8005  0.3%                    -             -
------------------------------------------------------------------------------------------------
geomean lat (3 of 4 rows)  us                   1.181                      1.117         +5.8%
run 12 (baseline) up: cpus 0
run 13 (patched) up: cpus 0
change: + means run 13 (patched) up is better (speedup - 1); * significant: Welch and Mann-Whitney p < 0.05, |change| >= 1% and beyond the \
A/A noise (the spread between one configuration's rounds), neither side noisy nor busy; cv: coefficient of variation of the clean samples; \
geomean rows invert lower-is-better ratios first
parameters of lat.ctx: procs=2 size=16
parameters of bw.mem.rd, bw.mem.wr: size=64m
outliers beyond 1.5 IQR in 1 of 9 results (worst: lat.syscall [run 12 (baseline) up], 1 of 6 samples)
bw.mem.rd [run 12 (baseline) up]: buffer of 64 MiB, 4 x the last-level cache
(every remark of every result: --verbose, or kdelta show RUN --warnings)

run 12: runs auto: 10 of 11 results have a median known to +-2% (95% interval); 1 stopped at the cap (3x the samples, or the time budget): \
lat.pipe [noht]
warning: run 12: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
warning: run 13 is incomplete: it was interrupted, so its results are partial
"#,
    );
}

#[test]
fn text_in_colour_marks_significant_changes_and_dims_the_notes() {
    let coloured = text::render(&comparison(), true);
    assert_eq!(strip_colour(&coloured), text::render(&comparison(), false), "colour adds escape sequences and nothing else");
    let lines: Vec<&str> = coloured.lines().collect();
    assert!(lines.contains(&"lat.syscall                us    0.2105  6.6%    0.1805   0.6%  \x1b[32m+16.6% *\x1b[0m"), "better: green");
    assert!(lines.contains(&"lat.pipe                   us     5.205  0.5%     7.135  53.5%  \x1b[31m-27.0% *\x1b[0m"), "worse: red");
    // Changes without a star stay plain, the withheld ones included.
    assert!(lines.contains(&"bw.mem.rd                  MB/s  10,000  2.7%    10,400   2.6%   +4.0%"));
    assert!(lines.contains(&"bw.mem.wr                  MB/s    8005  0.3%    9410 ?   0.3%  +17.6%"));
    assert!(lines.contains(&"\x1b[2mup: cpus 0\x1b[0m"), "notes under the table are dimmed");
    assert!(lines.contains(&"warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average"));
}

#[test]
fn warnings_list_every_remark_of_every_result() {
    assert_snapshot(
        &text::warnings(&comparison()),
        r#"
lat.syscall [up]: 1 of 6 samples are outliers (beyond 1.5 IQR)
bw.mem.rd size=64m [up]: buffer of 64 MiB, 4 x the last-level cache
lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
lat.pipe [noht]: high variation: cv 53.5% (above 5%)
lat.ctx procs=2 size=16 [noht]: below resolution (< 0.3100 us): the interval of the net figure reaches zero
lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
bw.mem.rd size=64m [noht]: buffer of 64 MiB, 4 x the last-level cache
bw.mem.wr size=64m [noht]: 3 samples disturbed by other work (kept, not used), 2 retaken
bw.mem.wr size=64m [noht]: noisy: 5 clean samples of 6 wanted; never marked significant
warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#,
    );
}

#[test]
fn warnings_of_a_clean_run() {
    let rs: Vec<ResultRecord> = results().into_iter().filter(|r| r.benchmark == "lat.syscall" && r.config == "noht").collect();
    let mut run = run_record();
    run.environment = Default::default();
    assert_eq!(text::warnings(&Report::for_run(run, rs, &opt())), "no warnings\n");
}

#[test]
fn markdown_comparison_of_two_configurations() {
    assert_snapshot(
        &markdown::render(&comparison()),
        r#"
**run 12** "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

| benchmark | unit | up | cv | noht | cv | change |
|:---|:---|---:|---:|---:|---:|---:|
| lat.syscall | us | 0.2105 | 6.6% | 0.1805 | 0.6% | +16.6% * |
| lat.pipe | us | 5.205 | 0.5% | 7.135 | 53.5% | -27.0% * |
| lat.ctx | us | 1.505 | 1.6% | < 0.3100 | - | - |
| lat.proc.exec | us | 410.9 | 0.5% | failed |  | - |
| bw.mem.rd | MB/s | 10,000 | 2.7% | 10,400 | 2.6% | +4.0% |
| bw.mem.wr | MB/s | 8005 | 0.3% | 9410 ? | 0.3% | +17.6% |
| **geomean lat (2 of 4 rows)** | **us** | **1.047** |  | **1.135** |  | **-7.8%** |
| **geomean bw (2 rows)** | **MB/s** | **8947** |  | **9893** |  | **+10.6%** |

- up: cpus 0
- noht: cpus 0-1
- change: + means noht is better (speedup - 1); * significant: Welch and Mann-Whitney p < 0.05, \|change\| >= 1% and beyond the A/A noise \
(the spread between one configuration's rounds), neither side noisy nor busy; cv: coefficient of variation of the clean samples; geomean \
rows invert lower-is-better ratios first
- ?: noisy, fewer clean samples than wanted even after retakes
- parameters of lat.ctx: procs=2 size=16
- parameters of bw.mem.rd, bw.mem.wr: size=64m
- lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
- lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
- below resolution (the subtracted overhead is as large as the difference) in 1 of 11 results: lat.ctx [noht] < 0.3100 us
- noisy (fewer clean samples than wanted; never marked significant) in 1 of 11 results (worst: bw.mem.wr [noht], 5 of 6 clean)
- disturbed samples (other work on the CPU; kept, not used) in 1 of 11 results: 3 in all, 2 retaken (most: bw.mem.wr [noht], 3)
- high variation in 1 of 11 results (worst: lat.pipe [noht], cv 53.5%)
- outliers beyond 1.5 IQR in 1 of 11 results (worst: lat.syscall [up], 1 of 6 samples)
- bw.mem.rd [up] and bw.mem.rd [noht]: buffer of 64 MiB, 4 x the last-level cache
- not marked significant although the test passed: 2 changes (1 within the A/A noise, 1 a side is noisy)
- (every remark of every result: --verbose, or kdelta show RUN --warnings)

- runs auto: 10 of 11 results have a median known to +-2% (95% interval); 1 stopped at the cap (3x the samples, or the time budget): \
lat.pipe [noht]
- warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#,
    );
}

#[test]
fn markdown_of_a_single_configuration_run() {
    assert_snapshot(
        &markdown::render(&single_config()),
        r#"
**run 12** "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

| benchmark | config | cpus | median | unit | cv | min | max | n |
|:---|:---|:---|---:|:---|---:|---:|---:|---:|
| lat.syscall | noht | 0-1 | 0.1805 | us | 0.6% | 0.1790 | 0.1820 | 6 |
| lat.pipe | noht | 0-1 | 7.135 | us | 53.5% | 7.050 | 20.10 | 10 |
| lat.ctx | noht | 0-1 | < 0.3100 | us | - | -0.2000 | 0.3100 | 6 |
| lat.proc.exec | noht | 0-1 | failed | us |  |  |  | 0 |
| bw.mem.rd | noht | 0-1 | 10,400 | MB/s | 2.6% | 10,090 | 10,710 | 6 |
| bw.mem.wr | noht | 0-1 | 9410 ? | MB/s | 0.3% | 9380 | 9450 | 5 |

- parameters of lat.ctx: procs=2 size=16
- parameters of bw.mem.rd, bw.mem.wr: size=64m
- ?: noisy, fewer clean samples than wanted even after retakes
- lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
- lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
- below resolution (the subtracted overhead is as large as the difference) in 1 of 5 results: lat.ctx [noht] < 0.3100 us
- noisy (fewer clean samples than wanted; never marked significant) in 1 of 5 results (worst: bw.mem.wr [noht], 5 of 6 clean)
- disturbed samples (other work on the CPU; kept, not used) in 1 of 5 results: 3 in all, 2 retaken (most: bw.mem.wr [noht], 3)
- high variation in 1 of 5 results (worst: lat.pipe [noht], cv 53.5%)
- bw.mem.rd [noht]: buffer of 64 MiB, 4 x the last-level cache
- (every remark of every result: --verbose, or kdelta show RUN --warnings)

- runs auto: 10 of 11 results have a median known to +-2% (95% interval); 1 stopped at the cap (3x the samples, or the time budget): lat.pipe [noht]
- warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#,
    );
}

#[test]
fn csv_comparison_of_two_configurations() {
    assert_snapshot(
        &csv::render(&comparison()),
        r#"
benchmark,params,unit,better,a,a_cpus,a_median,a_cv,b,b_cpus,b_median,b_cv,change_pct,p_welch,ci_low,ci_high,significant,a_noisy,a_below_resolution,b_noisy,b_below_resolution,withheld
lat.syscall,,us,lower,up,0,0.2105,0.06551498602016824,noht,0-1,0.1805,0.005810575336122728,16.620498614958446,0.0015870818511587448,,,true,false,,false,,
lat.pipe,,us,lower,up,0,5.205,0.004767892616240423,noht,0-1,7.135,0.5349260620226706,-27.049754730203222,0.008238300231932172,,,true,false,,false,,
lat.ctx,procs=2 size=16,us,lower,up,0,1.505,0.016463717597515307,noht,0-1,,2.040408122440814,,,,,,false,,false,0.31,
lat.proc.exec,,us,lower,up,0,410.9,0.005399198699527286,noht,0-1,,,,,,,,false,,false,,
bw.mem.rd,size=64m,MB/s,higher,up,0,10000,0.026855167100578614,noht,0-1,10400,0.025822276058248668,4.0000000000000036,0.027423835857863565,,,false,false,,false,,within the A/A noise
bw.mem.wr,size=64m,MB/s,higher,up,0,8005,0.003100866685900383,noht,0-1,9410,0.0027501443063206086,17.55153029356653,0.00000000000005262457136723242,,,false,false,,true,,a side is noisy
geomean lat,,us,,up,0,1.0467342069503605,,noht,0-1,1.1348425000853641,,-7.763922582065463,,,,,,,,
geomean bw,,MB/s,,up,0,8947.066558375436,,noht,0-1,9892.623514518293,,10.56834606039343,,,,,,,,
"#,
    );
}

#[test]
fn csv_of_a_single_configuration_run() {
    assert_snapshot(
        &csv::render(&single_config()),
        r#"
run,benchmark,family,params,config,cpus,unit,better,status,reason,n,median,mean,min,max,stddev,cv,samples,taken,disturbed,noisy,below_resolution
12,lat.syscall,lat,,noht,0-1,us,lower,ok,,6,0.1805,0.1805,0.179,0.182,0.0010488088481701524,0.005810575336122728,0.18;0.182;0.181;0.179;0.18;0.181,6,0,false,
12,lat.pipe,lat,,noht,0-1,us,lower,ok,,10,7.135,12.120999999999999,7.05,20.1,6.483838797776789,0.5349260620226706,7.05;19.2;7.1;7.12;19.8;7.08;7.15;19.5;7.11;20.1,10,0,false,
12,lat.ctx,lat,procs=2 \
size=16,noht,0-1,us,lower,ok,,6,,0.09333333333333334,-0.2,0.31,0.19043809142780935,2.040408122440814,-0.2;0.31;0.1;0.25;-0.05;0.15,6,0,false,0.31
12,lat.proc.exec,lat,,noht,0-1,us,lower,failed,child failed (wait status 0x100): the program could not be run,0,,,,,,,,0,0,false,
12,bw.mem.rd,bw,size=64m,noht,0-1,MB/s,higher,ok,,6,10400,10394.219531841713,10090,10710,268.55167100578615,0.025822276058248668,10090;10110;10390;10410;10690;10710,6,0,false,
12,bw.mem.wr,bw,size=64m,noht,0-1,MB/s,higher,ok,,5,9410,9411.943098151984,9380,9450,25.88435821108957,0.0027501443063206086,9400;7200;9450;9380;6900;9420;7500;9410,8,3,true,
"#,
    );
}

#[test]
fn json_of_a_comparison_of_two_configurations() {
    let out = json::render(&short_run());
    serde_json::from_str::<serde_json::Value>(&out).expect("the output is JSON");
    assert_snapshot(
        &out,
        r#"
{
  "comparisons": [
    {
      "columns": [
        {
          "cpus": "0",
          "name": "up"
        },
        {
          "cpus": "0-1",
          "name": "noht"
        }
      ],
      "geomeans": [],
      "rows": [
        {
          "benchmark": "lat.syscall",
          "better": "lower",
          "cells": [
            {
              "cv": 0.007262402052227961,
              "median": 0.21,
              "n": 3,
              "status": "ok"
            },
            {
              "cv": 0.0055248618784530445,
              "median": 0.181,
              "n": 3,
              "status": "ok"
            }
          ],
          "changes": [
            {
              "change_pct": 16.022099447513803,
              "ci_high": null,
              "ci_low": null,
              "p_mann_whitney": 0.08085559837341072,
              "p_welch": 0.000035096706832549174,
              "significant": false,
              "speedup": 1.160220994475138
            }
          ],
          "family": "lat",
          "params": {},
          "unit": "us"
        },
        {
          "benchmark": "lat.ctx",
          "better": "lower",
          "cells": [
            {
              "cv": 0.013333333333333345,
              "median": 1.5,
              "n": 3,
              "status": "ok"
            },
            {
              "below_resolution": 0.31,
              "cv": 3.0096000245368666,
              "median": 0.15,
              "n": 3,
              "status": "ok"
            }
          ],
          "changes": [
            null
          ],
          "family": "lat",
          "params": {
            "procs": "2",
            "size": "16"
          },
          "unit": "us"
        },
        {
          "benchmark": "lat.proc.exec",
          "better": "lower",
          "cells": [
            {
              "cv": 0.0028427657666185795,
              "median": 410.5,
              "n": 3,
              "status": "ok"
            },
            {
              "cv": null,
              "median": null,
              "n": 0,
              "reason": "child failed (wait status 0x100): the program could not be run",
              "status": "failed"
            }
          ],
          "changes": [
            null
          ],
          "family": "lat",
          "params": {},
          "unit": "us"
        }
      ]
    }
  ],
  "notes": [],
  "results": [
    {
      "benchmark": "lat.syscall",
      "better": "lower",
      "config": "up",
      "cpus": "0",
      "cv": 0.007262402052227961,
      "extras": {},
      "family": "lat",
      "max": 0.212,
      "mean": 0.21033333333333334,
      "mean_kind": "arithmetic",
      "median": 0.21,
      "min": 0.209,
      "n": 3,
      "notes": [],
      "p5": 0.20909999999999998,
      "p95": 0.2118,
      "p99": 0.21195999999999998,
      "params": {},
      "samples": [
        0.21,
        0.212,
        0.209
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.001527525231651948,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.ctx",
      "better": "lower",
      "config": "up",
      "cpus": "0",
      "cv": 0.013333333333333345,
      "extras": {},
      "family": "lat",
      "max": 1.52,
      "mean": 1.5,
      "mean_kind": "arithmetic",
      "median": 1.5,
      "min": 1.48,
      "n": 3,
      "notes": [],
      "p5": 1.482,
      "p95": 1.518,
      "p99": 1.5196,
      "params": {
        "procs": "2",
        "size": "16"
      },
      "samples": [
        1.52,
        1.5,
        1.48
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.020000000000000018,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.proc.exec",
      "better": "lower",
      "config": "up",
      "cpus": "0",
      "cv": 0.0028427657666185795,
      "extras": {},
      "family": "lat",
      "max": 412.0,
      "mean": 410.73333333333335,
      "mean_kind": "arithmetic",
      "median": 410.5,
      "min": 409.7,
      "n": 3,
      "notes": [],
      "p5": 409.78,
      "p95": 411.85,
      "p99": 411.97,
      "params": {},
      "samples": [
        410.5,
        412.0,
        409.7
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 1.167618659209138,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.syscall",
      "better": "lower",
      "config": "noht",
      "cpus": "0-1",
      "cv": 0.0055248618784530445,
      "extras": {},
      "family": "lat",
      "max": 0.182,
      "mean": 0.18099999999999997,
      "mean_kind": "arithmetic",
      "median": 0.181,
      "min": 0.18,
      "n": 3,
      "notes": [],
      "p5": 0.18009999999999998,
      "p95": 0.1819,
      "p99": 0.18198,
      "params": {},
      "samples": [
        0.18,
        0.182,
        0.181
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.0010000000000000009,
      "unit": "us",
      "warnings": []
    },
    {
      "below_resolution": 0.31,
      "benchmark": "lat.ctx",
      "better": "lower",
      "config": "noht",
      "cpus": "0-1",
      "cv": 3.0096000245368666,
      "extras": {},
      "family": "lat",
      "max": 0.31,
      "mean": 0.08666666666666667,
      "mean_kind": "arithmetic",
      "median": 0.15,
      "min": -0.2,
      "n": 3,
      "notes": [],
      "p5": -0.165,
      "p95": 0.294,
      "p99": 0.30679999999999996,
      "params": {
        "procs": "2",
        "size": "16"
      },
      "samples": [
        -0.2,
        0.31,
        0.15
      ],
      "samples_meta": [],
      "simulated": false,
      "status": "ok",
      "stddev": 0.26083200212652846,
      "unit": "us",
      "warnings": []
    },
    {
      "benchmark": "lat.proc.exec",
      "better": "lower",
      "config": "noht",
      "cpus": "0-1",
      "extras": {},
      "family": "lat",
      "notes": [],
      "params": {},
      "reason": "child failed (wait status 0x100): the program could not be run",
      "samples": [],
      "samples_meta": [],
      "simulated": false,
      "status": "failed",
      "unit": "us",
      "warnings": []
    }
  ],
  "run": {
    "command": "kdelta run lat.syscall lat.ctx lat.proc.exec -c up,noht",
    "configs": [
      {
        "cpus": "0",
        "env": [],
        "name": "up",
        "policy": null
      },
      {
        "cpus": "0-1",
        "env": [],
        "name": "noht",
        "policy": null
      }
    ],
    "environment": {},
    "finished": "2024-05-01T10:04:31Z",
    "host": {},
    "id": 12,
    "kdelta_version": "0.1.0",
    "label": "baseline",
    "started": "2024-05-01T10:00:00Z",
    "status": "complete"
  },
  "runs": [
    {
      "configs": [
        {
          "cpus": "0",
          "env": [],
          "name": "up",
          "policy": null
        },
        {
          "cpus": "0-1",
          "env": [],
          "name": "noht",
          "policy": null
        }
      ],
      "id": 12,
      "label": "baseline",
      "started": "2024-05-01T10:00:00Z",
      "status": "complete"
    }
  ],
  "summaries": [],
  "warnings": []
}
"#,
    );
}

#[test]
fn svg_chart_of_speedups_names_every_benchmark_and_configuration() {
    let svg = write_chart(&comparison());
    assert!(svg.starts_with("<svg width=\"900\" height=\"252\" "), "{}", &svg[..80]);
    assert!(svg.ends_with("</svg>\n"));
    let texts = svg_texts(&svg);
    assert_eq!(texts[0], "speedup against up (above 1 = better)");
    assert!(texts.contains(&"speedup"), "the axis is named");
    // One label per row, from the bottom up; the failed row keeps its label.
    let labels: Vec<&str> = texts.iter().copied().filter(|t| t.starts_with("lat.") || t.starts_with("bw.")).collect();
    assert_eq!(labels, ["lat.syscall", "lat.pipe", "lat.ctx procs=2 size=16", "lat.proc.exec", "bw.mem.rd size=64m", "bw.mem.wr size=64m"]);
    // The legend names the configuration compared; the reference is in the caption.
    assert_eq!(texts.last(), Some(&"noht"));
    assert!(!texts.contains(&"up"));
}

#[test]
fn svg_chart_of_a_sweep_draws_one_line_per_configuration() {
    let svg = write_chart(&sweep());
    assert!(svg.starts_with("<svg width=\"900\" height=\"380\" "), "{}", &svg[..80]);
    assert!(svg.ends_with("</svg>\n"));
    let texts = svg_texts(&svg);
    assert_eq!(texts[..3], ["lat.ctx", "us (lower is better)", "size"], "title and axes");
    assert_eq!(texts[texts.len() - 2..], ["up", "noht"], "the legend");
    assert!(!texts.iter().any(|t| t.starts_with("speedup")), "no bar panel: every result is part of the sweep");
    // Two lines of three points, each point with its min and max whiskers.
    assert_eq!(svg.matches("<circle ").count(), 12);
    assert_eq!(svg.matches("stroke-width=\"2\" points=").count(), 4, "two lines and their two legend marks");
}

#[test]
fn numbers() {
    assert_eq!(fmt_num(164071.2), "164,071");
    assert_eq!(fmt_num(3051.28), "3051");
    assert_eq!(fmt_num(190.75), "190.8");
    assert_eq!(fmt_num(11.16), "11.16");
    assert_eq!(fmt_num(1.1), "1.100");
    assert_eq!(fmt_num(0.042134), "0.04213");
    assert_eq!(fmt_num(f64::NAN), "-");
    assert_eq!(fmt_pct(-1.3333), "-1.3%");
    assert_eq!(fmt_pct(250.0), "+250%");
}
