//! AsciiDoc and Org-mode snapshots (hyperfine's `--export-asciidoc` and
//! `--export-orgmode`): the tables Markdown draws, in each one's syntax.

use super::*;

#[test]
fn asciidoc_comparison_of_two_configurations() {
    expect![[r#"
        *run 12* "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

        [cols="<,<,>,>,>,>,>",options="header"]
        |===
        |benchmark |unit |up |cv |noht |cv |change
        |lat.syscall |us |0.2105 |6.6% |0.1805 |0.6% |+16.6% (1.17x faster) *
        |lat.pipe |us |5.205 |0.5% |7.135 |53.5% |-27.0% (1.37x slower) *
        |lat.ctx |us |1.505 |1.6% |< 0.3100 |- |-
        |lat.proc.exec |us |410.9 |0.5% |failed | |-
        |bw.mem.rd |MB/s |10,000 |2.7% |10,400 |1.0% |+4.0% (1.04x faster)
        |bw.mem.wr |MB/s |8005 |0.3% |9410 ? |0.3% |+17.6% (1.18x faster)
        |*geomean lat (2 of 4 rows)* |*us* |*1.047* | |*1.135* | |*-7.8% (1.08x slower)*
        |*geomean bw (2 rows)* |*MB/s* |*8947* | |*9893* | |*+10.6% (1.11x faster)*
        |===

        * up: cpus 0
        * noht: cpus 0-1
        * change: + means noht is better (speedup - 1; in brackets as a factor); * different: where the two sides took turns in one worker, the 99.5% interval of the adjacent pairs' change lies beyond +-1%; otherwise \|change\| >= 1% on the log scale (a slowdown and a speedup of one factor alike), Mann-Whitney p < 0.05, the change holds across rounds (sign test over the rounds whose ratio passes 1% its way, p < 0.05: 9 of 10 suffice; with 3-5 rounds every round, a t-test on the log ratios and no overlap between the sides' workers), and neither side is noisy nor busy unless the change is 2x or more or beyond twice what disturbance did to that side; no star: same (the interval within +-1%) or unknown, counted on the answers line; cv: coefficient of variation of the clean samples; geomean rows invert lower-is-better ratios first
        * ?: noisy, fewer clean samples than wanted even after retakes
        * parameters of lat.ctx: procs=2 size=16
        * parameters of bw.mem.rd, bw.mem.wr: size=64m
        * lat.proc.exec [noht]: failed: child failed (wait status 0x100): the program could not be run
        * lat.pipe [noht]: 7.105 us on one CPU (60% of samples), 19.65 us across CPUs (40%)
        * below resolution (the subtracted overhead is as large as the difference) in 1 of 11 results: lat.ctx [noht] < 0.3100 us
        * noisy (fewer clean samples than wanted; never marked significant) in 1 of 11 results (worst: bw.mem.wr [noht], 5 of 6 clean)
        * disturbed samples (other work on the CPU; kept, not used) in 1 of 11 results: 3 in all, 2 retaken (most: bw.mem.wr [noht], 3)
        * high variation in 1 of 11 results (worst: lat.pipe [noht], cv 53.5%)
        * outliers beyond 1.5 IQR in 1 of 11 results (worst: lat.syscall [up], 1 of 6 samples)
        * bw.mem.rd [up] and bw.mem.rd [noht]: buffer of 64 MiB, 4 x the last-level cache
        * lat.pipe [noht] by where its tasks ran: on one CPU 5.205 -> 7.105 us (-26.7% *); across CPUs only in noht, 19.65 us (40% of samples); moved: on one CPU, across CPUs
        * not marked significant although beyond the threshold: 2 changes (1 held in too few rounds: bw.mem.rd [noht] 2 of 3 rounds; 1 a side is noisy: bw.mem.wr [noht])
        * (every remark of every result: --verbose, or kdelta show RUN --warnings)

        * runs auto: 10 of 11 results settled (comparisons different or same, other medians within +-2%); 1 still unknown when sampling stopped (at the cap of 3x the planned time or the budget, or where the cap's samples could not settle them): lat.pipe [noht]
        * answers: 2 different (*), 0 same, 2 unknown
        * warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
    "#]].assert_eq(&rendered(&Asciidoc, &[comparison()]));
}

#[test]
fn orgmode_comparison_of_two_configurations() {
    expect![[r#"
        *run 12* "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

        | benchmark                   | unit   | up      | cv   | noht     | cv    | change                  |
        |-----------------------------+--------+---------+------+----------+-------+-------------------------|
        | lat.syscall                 | us     |  0.2105 | 6.6% |   0.1805 |  0.6% | +16.6% (1.17x faster) * |
        | lat.pipe                    | us     |   5.205 | 0.5% |    7.135 | 53.5% | -27.0% (1.37x slower) * |
        | lat.ctx                     | us     |   1.505 | 1.6% | < 0.3100 |     - |                       - |
        | lat.proc.exec               | us     |   410.9 | 0.5% |   failed |       |                       - |
        | bw.mem.rd                   | MB/s   |  10,000 | 2.7% |   10,400 |  1.0% |    +4.0% (1.04x faster) |
        | bw.mem.wr                   | MB/s   |    8005 | 0.3% |   9410 ? |  0.3% |   +17.6% (1.18x faster) |
        |-----------------------------+--------+---------+------+----------+-------+-------------------------|
        | *geomean lat (2 of 4 rows)* | *us*   | *1.047* |      |  *1.135* |       |  *-7.8% (1.08x slower)* |
        | *geomean bw (2 rows)*       | *MB/s* |  *8947* |      |   *9893* |       | *+10.6% (1.11x faster)* |

        - up: cpus 0
        - noht: cpus 0-1
        - change: + means noht is better (speedup - 1; in brackets as a factor); * different: where the two sides took turns in one worker, the 99.5% interval of the adjacent pairs' change lies beyond +-1%; otherwise \vert{}change\vert{} >= 1% on the log scale (a slowdown and a speedup of one factor alike), Mann-Whitney p < 0.05, the change holds across rounds (sign test over the rounds whose ratio passes 1% its way, p < 0.05: 9 of 10 suffice; with 3-5 rounds every round, a t-test on the log ratios and no overlap between the sides' workers), and neither side is noisy nor busy unless the change is 2x or more or beyond twice what disturbance did to that side; no star: same (the interval within +-1%) or unknown, counted on the answers line; cv: coefficient of variation of the clean samples; geomean rows invert lower-is-better ratios first
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
        - lat.pipe [noht] by where its tasks ran: on one CPU 5.205 -> 7.105 us (-26.7% *); across CPUs only in noht, 19.65 us (40% of samples); moved: on one CPU, across CPUs
        - not marked significant although beyond the threshold: 2 changes (1 held in too few rounds: bw.mem.rd [noht] 2 of 3 rounds; 1 a side is noisy: bw.mem.wr [noht])
        - (every remark of every result: --verbose, or kdelta show RUN --warnings)

        - runs auto: 10 of 11 results settled (comparisons different or same, other medians within +-2%); 1 still unknown when sampling stopped (at the cap of 3x the planned time or the budget, or where the cap's samples could not settle them): lat.pipe [noht]
        - answers: 2 different (*), 0 same, 2 unknown
        - warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
    "#]].assert_eq(&rendered(&Orgmode, &[comparison()]));
}

#[test]
fn orgmode_of_a_single_configuration_run() {
    expect![[r#"
        *run 12* "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

        | benchmark     | config | cpus | median   | unit | cv    | min     | max    | n  |
        |---------------+--------+------+----------+------+-------+---------+--------+----|
        | lat.syscall   | noht   | 0-1  |   0.1805 | us   |  0.6% |  0.1790 | 0.1820 |  6 |
        | lat.pipe      | noht   | 0-1  |    7.135 | us   | 53.5% |   7.050 |  20.10 | 10 |
        | lat.ctx       | noht   | 0-1  | < 0.3100 | us   |     - | -0.2000 | 0.3100 |  6 |
        | lat.proc.exec | noht   | 0-1  |   failed | us   |       |         |        |  0 |
        | bw.mem.rd     | noht   | 0-1  |   10,400 | MB/s |  1.0% |  10,240 | 10,490 |  6 |
        | bw.mem.wr     | noht   | 0-1  |   9410 ? | MB/s |  0.3% |    9380 |   9450 |  5 |

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

        - runs auto: 10 of 11 results settled (comparisons different or same, other medians within +-2%); 1 still unknown when sampling stopped (at the cap of 3x the planned time or the budget, or where the cap's samples could not settle them): lat.pipe [noht]
        - warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
    "#]].assert_eq(&rendered(&Orgmode, &[single_config()]));
}

/// A cell's `|` would end it: each format escapes it its own way, and a
/// control character is shown, not obeyed.
#[test]
fn a_bar_or_a_control_character_in_a_cell_stays_in_its_cell() {
    let mut run = run_record();
    run.configs.retain(|c| c.name == "noht");
    let mut rs: Vec<ResultRecord> = results().into_iter().filter(|r| r.config == "noht").collect();
    rs[0].benchmark = "lat.a|b\u{1b}[2J".into();
    let rep = Report::for_run(run, rs, &opt());
    let adoc = rendered(&Asciidoc, std::slice::from_ref(&rep));
    assert!(adoc.contains("lat.a\\|b\\x1b[2J"), "{adoc}");
    let org = rendered(&Orgmode, std::slice::from_ref(&rep));
    assert!(org.contains("lat.a\\vert{}b\\x1b[2J"), "{org}");
    assert!(!adoc.contains('\u{1b}') && !org.contains('\u{1b}'));
}
