//! Markdown and CSV snapshots of the same fixture.

use super::*;

#[test]
fn markdown_comparison_of_two_configurations() {
    expect![[r#"
**run 12** "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

| benchmark | unit | up | cv | noht | cv | change |
|:---|:---|---:|---:|---:|---:|---:|
| lat.syscall | us | 0.2105 | 6.6% | 0.1805 | 0.6% | +16.6% (1.17x faster) * |
| lat.pipe | us | 5.205 | 0.5% | 7.135 | 53.5% | -27.0% (1.37x slower) * |
| lat.ctx | us | 1.505 | 1.6% | < 0.3100 | - | - |
| lat.proc.exec | us | 410.9 | 0.5% | failed |  | - |
| bw.mem.rd | MB/s | 10,000 | 2.7% | 10,400 | 1.0% | +4.0% (1.04x faster) |
| bw.mem.wr | MB/s | 8005 | 0.3% | 9410 ? | 0.3% | +17.6% (1.18x faster) |
| **geomean lat (2 of 4 rows)** | **us** | **1.047** |  | **1.135** |  | **-7.8% (1.08x slower)** |
| **geomean bw (2 rows)** | **MB/s** | **8947** |  | **9893** |  | **+10.6% (1.11x faster)** |

- up: cpus 0
- noht: cpus 0-1
- change: + means noht is better (speedup - 1; in brackets as a factor); * different: where the two sides took turns in one worker, the 99.5% interval of the adjacent pairs' change lies beyond +-1%; otherwise \|change\| >= 1% on the log scale (a slowdown and a speedup of one factor alike), Mann-Whitney p < 0.05, the change holds across rounds (sign test over the rounds whose ratio passes 1% its way, p < 0.05: 9 of 10 suffice; with 3-5 rounds every round, a t-test on the log ratios and no overlap between the sides' workers), and neither side is noisy nor busy unless the change is 2x or more or beyond twice what disturbance did to that side; no star: same (the interval within +-1%) or unknown, counted on the answers line; cv: coefficient of variation of the clean samples; geomean rows invert lower-is-better ratios first
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
"#]]
    .assert_eq(&rendered(&Markdown, &[comparison()]));
}

#[test]
fn markdown_of_a_single_configuration_run() {
    expect![[r#"
**run 12** "baseline" — 2024-05-01T10:00:00Z (complete), kdelta 0.1.0

| benchmark | config | cpus | median | unit | cv | min | max | n |
|:---|:---|:---|---:|:---|---:|---:|---:|---:|
| lat.syscall | noht | 0-1 | 0.1805 | us | 0.6% | 0.1790 | 0.1820 | 6 |
| lat.pipe | noht | 0-1 | 7.135 | us | 53.5% | 7.050 | 20.10 | 10 |
| lat.ctx | noht | 0-1 | < 0.3100 | us | - | -0.2000 | 0.3100 | 6 |
| lat.proc.exec | noht | 0-1 | failed | us |  |  |  | 0 |
| bw.mem.rd | noht | 0-1 | 10,400 | MB/s | 1.0% | 10,240 | 10,490 | 6 |
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

- runs auto: 10 of 11 results settled (comparisons different or same, other medians within +-2%); 1 still unknown when sampling stopped (at the cap of 3x the planned time or the budget, or where the cap's samples could not settle them): lat.pipe [noht]
- warning: the machine was busy: load average 1.25 before, 1.50 after; other processes used 0.40 CPUs on average
"#]]
    .assert_eq(&rendered(&Markdown, &[single_config()]));
}

#[test]
fn csv_comparison_of_two_configurations() {
    expect![[r#"
benchmark,params,unit,better,a,a_cpus,a_median,a_cv,b,b_cpus,b_median,b_cv,change_pct,p_welch,ci_low,ci_high,significant,a_noisy,a_below_resolution,b_noisy,b_below_resolution,withheld,p_mann_whitney,rounds,rounds_held,p_rounds,param.procs,param.size,a_meta,b_meta
lat.syscall,,us,lower,up,0,0.2105,0.06551498602016824,noht,0-1,0.1805,0.005810575336122728,16.620498614958446,0.0015870818511587448,,,true,false,,false,,,0.004846601210286794,,,,,,,
lat.pipe,,us,lower,up,0,5.205,0.004767892616240423,noht,0-1,7.135,0.5349260620226706,-27.049754730203222,0.008238300231932172,,,true,false,,false,,,0.0013755912673600879,,,,,,,
lat.ctx,procs=2 size=16,us,lower,up,0,1.505,0.016463717597515307,noht,0-1,,2.040408122440814,,,,,,false,,false,0.31,,,,,,2,16,,
lat.proc.exec,,us,lower,up,0,410.9,0.005399198699527286,noht,0-1,,,,,,,,false,,false,,,,,,,,,,
bw.mem.rd,size=64m,MB/s,higher,up,0,10000,0.026855167100578614,noht,0-1,10400,0.010119621221459903,4.0000000000000036,0.016688815475644825,,,false,false,,false,,held in too few rounds,0.030638987936359774,3,2,1,,64m,,
bw.mem.wr,size=64m,MB/s,higher,up,0,8005,0.003100866685900383,noht,0-1,9410,0.0027501443063206086,17.55153029356653,0.00000000000005262457136723242,,,false,false,,true,,a side is noisy,0.008113117265224457,,,,,64m,,
geomean lat,,us,,up,0,1.0467342069503605,,noht,0-1,1.1348425000853641,,-7.763922582065463,,,,,,,,,,,,,,,,
geomean bw,,MB/s,,up,0,8947.066558375436,,noht,0-1,9892.623514518293,,10.56834606039343,,,,,,,,,,,,,,,,
"#]]
    .assert_eq(&rendered(&Csv, &[comparison()]));
}

#[test]
fn csv_of_a_single_configuration_run() {
    expect![[r#"
run,benchmark,family,params,config,cpus,unit,better,status,reason,n,median,mean,min,max,stddev,cv,samples,taken,disturbed,noisy,below_resolution,param.procs,param.size,meta
12,lat.syscall,lat,,noht,0-1,us,lower,ok,,6,0.1805,0.1805,0.179,0.182,0.0010488088481701524,0.005810575336122728,0.18;0.182;0.181;0.179;0.18;0.181,6,0,false,,,,
12,lat.pipe,lat,,noht,0-1,us,lower,ok,,10,7.135,12.120999999999999,7.05,20.1,6.483838797776789,0.5349260620226706,7.05;19.2;7.1;7.12;19.8;7.08;7.15;19.5;7.11;20.1,10,0,false,,,,
12,lat.ctx,lat,procs=2 size=16,noht,0-1,us,lower,ok,,6,,0.09333333333333334,-0.2,0.31,0.19043809142780935,2.040408122440814,-0.2;0.31;0.1;0.25;-0.05;0.15,6,0,false,0.31,2,16,
12,lat.proc.exec,lat,,noht,0-1,us,lower,failed,child failed (wait status 0x100): the program could not be run,0,,,,,,,,0,0,false,,,,
12,bw.mem.rd,bw,size=64m,noht,0-1,MB/s,higher,ok,,6,10400,10375.778256143149,10240,10490,105.00793620801558,0.010119621221459903,10470;10490;10390;10410;10240;10260,6,0,false,,,64m,
12,bw.mem.wr,bw,size=64m,noht,0-1,MB/s,higher,ok,,5,9410,9411.943098151984,9380,9450,25.88435821108957,0.0027501443063206086,9400;7200;9450;9380;6900;9420;7500;9410,8,3,true,,,64m,
"#]]
    .assert_eq(&rendered(&Csv, &[single_config()]));
}

fn meta(pairs: &[(&str, &str)]) -> crate::model::meta::RunMeta {
    let p: Vec<(String, String)> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    crate::model::meta::RunMeta::from_pairs(&p).unwrap()
}

/// A run's metadata is in the run line of text and Markdown, the run of
/// JSON, and the last column of every CSV line (each side's, when two runs
/// are compared).
#[test]
fn a_runs_metadata_is_in_every_format() {
    let mut rep = single_config();
    rep.runs[0].meta = meta(&[("commit", "abc123"), ("branch", "main")]);
    let csv = rendered(&Csv, std::slice::from_ref(&rep));
    let cell = r#""{""branch"":""main"",""commit"":""abc123""}""#;
    assert!(csv.lines().next().unwrap().ends_with(",noisy,below_resolution,param.procs,param.size,meta"), "{csv}");
    assert!(csv.lines().skip(1).all(|l| l.ends_with(cell)), "{csv}");
    let text = rendered(&Text { color: false }, std::slice::from_ref(&rep));
    assert!(text.contains("(complete), kdelta 0.1.0\n  meta: branch=main commit=abc123\n"), "{text}");
    let md = rendered(&Markdown, std::slice::from_ref(&rep));
    assert!(md.contains("\n\nmeta: branch=main commit=abc123\n\n"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&rendered(&Json, std::slice::from_ref(&rep))).unwrap();
    assert_eq!(json["run"]["meta"], serde_json::json!({"branch": "main", "commit": "abc123"}));
    // Without metadata the field is absent and the cell empty.
    let plain: serde_json::Value = serde_json::from_str(&rendered(&Json, &[single_config()])).unwrap();
    assert!(plain["run"].get("meta").is_none());

    let (mut a, mut b) = (run_record(), patched_run());
    a.meta = meta(&[("commit", "aaa")]);
    b.0.meta = meta(&[("commit", "bbb")]);
    let two = Report::for_two_runs((a, results()), b, &opt());
    let csv = rendered(&Csv, &[two]);
    assert!(csv.lines().skip(1).all(|l| l.ends_with(r#","{""commit"":""aaa""}","{""commit"":""bbb""}""#)), "{csv}");
}
