use super::*;
use crate::model::record::Status;
use crate::model::sample::Quality;
use crate::model::Better;
use crate::report::model::cell_of;
use proptest::prelude::*;
use serde_json::json;

fn record(samples: &[f64], better: Better, status: Status, noisy: bool) -> ResultRecord {
    ResultRecord {
        unit: "ms".into(),
        better,
        status,
        reason: (status == Status::Failed).then(|| "exit status 3".into()),
        quality: Some(Quality { wanted: samples.len(), clean: samples.len(), noisy, ..Default::default() }),
        ..crate::testing::stored::ok_result("cmd.run", samples)
    }
}

fn limits(max: f64) -> Limits {
    Limits {
        opt: CompareOptions { rounds_paired: false, bootstrap: 200, ..Default::default() },
        max_regression_pct: max,
        drift_pct: 0.0,
    }
}

/// The verdict on A against B as `check` reaches it: cells, the comparison
/// of two runs, then `judge`.
fn verdict(a: &ResultRecord, b: &ResultRecord, max: f64) -> Verdict {
    let lim = limits(max);
    let change = if a.status == Status::Ok && b.status == Status::Ok {
        crate::stats::compare::compare_results(a, b, &lim.opt)
    } else {
        None
    };
    judge(&cell_of(a), &cell_of(b), change.as_ref(), &lim)
}

/// Ten samples around `m`, spread by 1 %.
fn around(m: f64) -> Vec<f64> {
    (0..10).map(|i| m * (1.0 + (i as f64 - 4.5) / 450.0)).collect()
}

fn ok(s: &[f64], better: Better) -> ResultRecord {
    record(s, better, Status::Ok, false)
}

/// Against a stored run the limit is --max-regression plus --drift: a
/// significant 1.5 % slowdown is ok within 1 % + 2 %, regressed within 1 %
/// alone, and a 5 % one regressed either way.
#[test]
fn the_drift_widens_the_limit_and_is_named() {
    let judged = |b: f64, drift: f64| {
        let lim = Limits { drift_pct: drift, ..limits(1.0) };
        let (a, b) = (ok(&around(10.0), Better::Lower), ok(&around(b), Better::Lower));
        let change = crate::stats::compare::compare_results(&a, &b, &lim.opt);
        judge(&cell_of(&a), &cell_of(&b), change.as_ref(), &lim)
    };
    assert_eq!(judged(10.15, 0.0), Verdict::Regressed);
    assert_eq!(judged(10.15, 2.0), Verdict::Ok(Some("worse, within --max-regression 1% + --drift 2%".into())));
    assert_eq!(judged(10.5, 2.0), Verdict::Regressed);
    assert_eq!(limits(1.0).named(), "--max-regression 1%");
}

#[test]
fn a_row_is_judged_in_its_benchmarks_direction() {
    let lower = |a: f64, b: f64| verdict(&ok(&around(a), Better::Lower), &ok(&around(b), Better::Lower), 1.0);
    let higher = |a: f64, b: f64| verdict(&ok(&around(a), Better::Higher), &ok(&around(b), Better::Higher), 1.0);
    assert_eq!(lower(10.0, 20.0), Verdict::Regressed, "twice the time");
    assert_eq!(lower(20.0, 10.0), Verdict::Improved, "half the time");
    assert_eq!(higher(20.0, 10.0), Verdict::Regressed, "half the rate");
    assert_eq!(higher(10.0, 20.0), Verdict::Improved, "twice the rate");
    assert_eq!(lower(10.0, 10.0), Verdict::Ok(Some("same".into())), "the same");
}

#[test]
fn a_significant_slowdown_within_the_limit_is_ok() {
    let (a, b) = (ok(&around(10.0), Better::Lower), ok(&around(10.5), Better::Lower));
    assert_eq!(verdict(&a, &b, 1.0), Verdict::Regressed);
    assert!(matches!(verdict(&a, &b, 10.0), Verdict::Ok(Some(w)) if w.contains("within --max-regression 10%")));
}

#[test]
fn a_worse_change_that_is_not_significant_is_unknown_not_ok() {
    // Worse by the medians, but the samples overlap: no evidence either
    // way, and the interval reaches past the limit: not known (125).
    let a: Vec<f64> = (0..12).map(|i| 10.0 + (i % 6) as f64 * 3.0).collect();
    let b: Vec<f64> = a.iter().enumerate().map(|(i, x)| if i == 0 { x + 1.0 } else { x + 0.6 }).collect();
    let v = verdict(&ok(&a, Better::Lower), &ok(&b, Better::Lower), 1.0);
    assert!(matches!(&v, Verdict::CannotTell(w) if w.contains("reaches past --max-regression 1%")), "{v:?}");
    assert!(matches!(&v, Verdict::CannotTell(w) if w.ends_with("give more --budget")), "{v:?}");
    // Let go of by the futility stop: more budget, not the same one again,
    // and no claim that the budget ran out.
    let mut futile = ok(&b, Better::Lower);
    futile.quality.as_mut().unwrap().futile = true;
    let v = verdict(&ok(&a, Better::Lower), &futile, 1.0);
    assert!(
        matches!(&v, Verdict::CannotTell(w) if w.contains("stopped early") && !w.contains("give more --budget")),
        "{v:?}"
    );
    // With a limit the whole interval lies within, it is ok.
    let v = verdict(&ok(&a, Better::Lower), &ok(&b, Better::Lower), 60.0);
    assert!(matches!(&v, Verdict::Ok(Some(w)) if w.contains("within --max-regression 60%")), "{v:?}");
}

/// Two sides that took turns in workers of four pairs each: `b / a` per
/// pair is `ratio` times a wobble of +-6 %.
fn in_turns(ratio: f64, workers: u32) -> (ResultRecord, ResultRecord) {
    let (mut a, mut b) = (ok(&[], Better::Lower), ok(&[], Better::Lower));
    let mut t = 0.0;
    for w in 1..=workers {
        for i in 0..4 {
            let base = 50.0 * (1.0 + 0.2 * ((w + i) % 3) as f64);
            let wobble = 1.0 + 0.06 * [(-1.0), 0.5, 1.0, -0.5][i as usize] * if w % 2 == 0 { 1.0 } else { -1.0 };
            for (r, v) in [(&mut a, base), (&mut b, base * ratio * wobble)] {
                t += 0.1;
                r.samples.push(v);
                r.samples_meta.push(crate::model::sample::SampleMeta { job: w, t, round: w, ..Default::default() });
            }
        }
    }
    for r in [&mut a, &mut b] {
        r.quality = Some(Quality { wanted: r.samples.len(), clean: r.samples.len(), ..Default::default() });
    }
    (a, b)
}

#[test]
fn sides_in_turns_are_judged_on_their_pairs() {
    // The machine's speed moves 40 % from worker to worker under both:
    // pooled, a 3 % slowdown drowns; paired, it is found.
    let (a, b) = in_turns(1.03, 20);
    assert_eq!(verdict(&a, &b, 1.0), Verdict::Regressed);
    let (a, b) = in_turns(1.0, 20);
    assert!(!matches!(verdict(&a, &b, 1.0), Verdict::Regressed | Verdict::Improved));
    let (a, b) = in_turns(1.0, 20);
    assert!(matches!(verdict(&a, &b, 5.0), Verdict::Ok(_)), "within 5 %");
}

/// A row's line gives the change judged: its percent and its factor come
/// from one number, named as the adjacent pairs' where it is theirs, even
/// when the medians' ratio says otherwise.
#[test]
fn a_rows_percent_and_factor_are_one_change() {
    let (a, b) = in_turns(1.03, 20);
    let lim = limits(1.0);
    let mut change = crate::stats::compare::compare_results(&a, &b, &lim.opt).expect("compared");
    assert!(change.paired.is_some());
    let row = Row {
        family: "cmd".into(),
        benchmark: "cmd.run".into(),
        params: Default::default(),
        unit: "ms".into(),
        better: Better::Lower,
        cells: vec![],
        changes: vec![],
        counter: None,
    };
    // The medians read +0.2 % (as a --within try did on a VM).
    let (mut ca, mut cb) = (cell_of(&a), cell_of(&b));
    (ca.median, cb.median) = (Some(34.33), Some(34.40));
    change.speedup = 1.0 / 1.02;
    let line = figures(&ca, &cb, &row, Some(&change));
    assert_eq!(line, "34.33 -> 34.40 ms (+2.0% in adjacent pairs, 1.02x slower, worse)");
    change.speedup = 1.005;
    let line = figures(&ca, &cb, &row, Some(&change));
    assert_eq!(line, "34.33 -> 34.40 ms (-0.5% in adjacent pairs, 1.00x faster, better)");
    // Not paired: the medians' change, the same number either way.
    change.paired = None;
    change.speedup = 34.33 / 34.40;
    assert_eq!(figures(&ca, &cb, &row, Some(&change)), "34.33 -> 34.40 ms (+0.2%, 1.00x slower, worse)");
    let higher = Row { better: Better::Higher, ..row };
    change.speedup = 34.40 / 34.33;
    assert_eq!(figures(&ca, &cb, &higher, Some(&change)), "34.33 -> 34.40 ms (+0.2%, 1.00x faster, better)");
}

#[test]
fn a_noisy_side_cannot_tell_a_slowdown_but_not_a_speedup() {
    let noisy = |m: f64| record(&around(m), Better::Lower, Status::Ok, true);
    let v = verdict(&ok(&around(10.0), Better::Lower), &noisy(20.0), 1.0);
    assert!(matches!(&v, Verdict::CannotTell(w) if w.starts_with("a side is noisy")), "{v:?}");
    let v = verdict(&noisy(10.0), &ok(&around(20.0), Better::Lower), 1.0);
    assert!(matches!(&v, Verdict::CannotTell(w) if w.starts_with("a side is noisy")), "{v:?}");
    assert!(matches!(verdict(&noisy(20.0), &noisy(10.0), 1.0), Verdict::Ok(Some(_))));
}

#[test]
fn a_failed_result_on_either_side_cannot_be_told() {
    let failed = record(&[], Better::Lower, Status::Failed, false);
    let good = ok(&around(10.0), Better::Lower);
    assert_eq!(verdict(&failed, &good, 1.0), Verdict::CannotTell("the baseline's result failed: exit status 3".into()));
    assert_eq!(verdict(&good, &failed, 1.0), Verdict::CannotTell("this result failed: exit status 3".into()));
}

#[test]
fn too_few_samples_to_be_significant_cannot_be_told() {
    let v = verdict(&ok(&[10.0, 10.1], Better::Lower), &ok(&[20.0, 20.2], Better::Lower), 1.0);
    assert!(
        matches!(&v, Verdict::CannotTell(w) if w.contains("too few clean samples to be significant (2 and 2)")),
        "{v:?}"
    );
    // Few samples that show no change at all are the same.
    let same = verdict(&ok(&[10.0, 10.0], Better::Lower), &ok(&[10.0, 10.0], Better::Lower), 1.0);
    assert_eq!(same, Verdict::Ok(Some("same".into())));
}

#[test]
fn below_resolution_cannot_be_told() {
    let a = ok(&around(10.0), Better::Lower);
    let mut b = a.clone();
    b.below_resolution = Some(0.01);
    assert!(matches!(verdict(&a, &b, 1.0), Verdict::CannotTell(w) if w.contains("resolution")));
}

#[test]
fn the_exit_status_puts_a_regression_before_what_cannot_be_told() {
    let (ok, reg, cant, imp) =
        (Verdict::Ok(None), Verdict::Regressed, Verdict::CannotTell("x".into()), Verdict::Improved);
    assert_eq!(status(&[]), 0);
    assert_eq!(status(&[&ok, &imp]), 0);
    assert_eq!(status(&[&ok, &cant]), 125);
    assert_eq!(status(&[&cant, &reg, &ok]), 1);
    assert_eq!(status(&[&reg]), 1);
}

fn host(model: &str, mem_mib: u64, kernel: &str, cores: usize) -> serde_json::Value {
    let cores: Vec<serde_json::Value> = (0..cores).map(|_| json!({})).collect();
    json!({"cpu_model": model, "arch": "x86_64", "mem_total_bytes": mem_mib << 20, "kernel_release": kernel,
           "glibc_version": "2.36", "topology": {"packages": [0], "cores": cores, "cpus": cores}})
}

#[test]
fn a_machine_is_its_hardware_not_its_kernel() {
    let base = host("EPYC", 8000, "6.1", 2);
    // Another kernel, whose MemTotal is a few MiB different: the same machine.
    let (hw, other) = machine_differences(&base, &host("EPYC", 7990, "6.18", 2));
    assert!(hw.is_empty(), "{hw:?}");
    assert_eq!(other, ["kernel: 6.1 vs 6.18"]);
    let (hw, _) = machine_differences(&base, &host("Xeon", 16000, "6.1", 4));
    assert_eq!(
        hw,
        [
            "CPU model: EPYC vs Xeon",
            "topology: 1 package(s) x 2 core(s), 2 CPUs vs 1 package(s) x 4 core(s), 4 CPUs",
            "memory: 8000 MiB vs 16000 MiB"
        ]
    );
    // What an older snapshot lacks is not a difference.
    assert_eq!(machine_differences(&json!({}), &base), (vec![], vec![]));
}

#[test]
fn selectors_pick_families_names_and_globs() {
    let r = ok(&[1.0], Better::Lower);
    for s in ["cmd", "cmd.run", "cmd.*", "*"] {
        assert!(selected(&[s.to_string()], &r), "{s}");
    }
    for s in ["lat", "cmd.ru", "lat.*"] {
        assert!(!selected(&[s.to_string()], &r), "{s}");
    }
    assert!(selected(&[], &r));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A row regresses only when its median is worse, in the benchmark's
    /// direction, by more than the limit; it improves only when better.
    #[test]
    fn regressed_means_worse_beyond_the_limit(
        a in proptest::collection::vec(1.0f64..2.0, 2..16),
        factor in 0.3f64..3.0,
        jitter in proptest::collection::vec(0.9f64..1.1, 16),
        higher in any::<bool>(),
        max in 0.0f64..50.0,
    ) {
        let better = if higher { Better::Higher } else { Better::Lower };
        let b: Vec<f64> = a.iter().zip(&jitter).map(|(x, j)| x * factor * j).collect();
        let (ra, rb) = (ok(&a, better), ok(&b, better));
        let (ma, mb) = (crate::stats::summary::median(&a), crate::stats::summary::median(&b));
        let worse = if higher { ma / mb } else { mb / ma };
        match verdict(&ra, &rb, max) {
            Verdict::Regressed => prop_assert!(worse >= 1.0 + max / 100.0 - 1e-9, "{worse} {max}"),
            Verdict::Improved => prop_assert!(worse < 1.0),
            _ => {}
        }
    }
}
