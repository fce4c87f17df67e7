//! Sampler tests: calibration, retakes, shortened samples, net figures.

use super::*;

fn settings(samples: usize) -> SamplerSettings {
    SamplerSettings::direct(samples, std::env::temp_dir())
}

#[test]
fn calibrates_to_target() {
    // A fake operation costing exactly 1 us per iteration (no real clock).
    let mut op = |n: u64| -> Result<Duration> { Ok(Duration::from_micros(n)) };
    let n = calibrate(&mut op, Duration::from_millis(10)).unwrap();
    assert!((10_000..=10_100).contains(&n), "{n}");
    let mut slow = |_n: u64| -> Result<Duration> { Ok(Duration::from_millis(50)) };
    assert_eq!(calibrate(&mut slow, Duration::from_millis(10)).unwrap(), 1);
}

#[test]
fn measure_records_every_sample() {
    let mut s = Sampler::new(settings(5));
    s.measure_us(|n| Ok(Duration::from_nanos(500 * n))).unwrap();
    let out = s.finish();
    assert_eq!(out.samples.len(), 5);
    for v in &out.samples {
        assert!((*v - 0.5).abs() < 0.01, "{v}");
    }
    assert!(out.iterations.unwrap() > 1);
}

#[test]
fn measure_reuses_given_iterations() {
    let mut st = settings(2);
    st.iterations = Some(7);
    let mut s = Sampler::new(st);
    let mut seen = Vec::new();
    s.measure_us(|n| {
        seen.push(n);
        Ok(Duration::from_micros(n))
    })
    .unwrap();
    assert!(seen.iter().all(|&n| n == 7));
    assert_eq!(seen.len(), 3); // warm-up + 2 samples
}

#[test]
fn disturbed_samples_are_kept_marked_and_retaken() {
    let mut st = settings(3);
    st.retake = true;
    st.iterations = Some(1000);
    let mut s = Sampler::new(st);
    let mut calls = 0;
    s.measure_us(|n| {
        calls += 1;
        let t = Instant::now();
        // A sleep inside the timed loop is time off the CPU: the second
        // sample (call 3, after the warm-up) is disturbed.
        if calls == 3 {
            std::thread::sleep(Duration::from_millis(3));
        }
        while t.elapsed() < Duration::from_micros(n) {
            std::hint::spin_loop();
        }
        Ok(t.elapsed())
    })
    .unwrap();
    let out = s.finish();
    assert_eq!(out.meta.len(), out.samples.len());
    assert!(out.meta[1].disturbed, "{:?}", out.meta[1]);
    assert!(out.samples.len() > 3, "retaken: {}", out.samples.len());
    assert_eq!(out.retaken, out.samples.len() - 3);
    assert!(out.clean() <= 3 && out.samples.len() <= 9);
    assert!(out.meta.iter().all(|m| m.wall_s > 0.0 && m.t > 1e9 && !m.cpus_start.is_empty()));
}

#[test]
fn a_cpu_never_free_shortens_samples_then_stops_at_the_cap() {
    let mut st = settings(2);
    st.retake = true;
    st.iterations = Some(64);
    st.target = Duration::from_millis(8);
    let mut s = Sampler::new(st);
    s.measure_us(|n| {
        std::thread::sleep(Duration::from_micros(20 * n));
        Ok(Duration::from_micros(20 * n))
    })
    .unwrap();
    let out = s.finish();
    assert_eq!(out.samples.len(), 6, "three times the samples asked for, then stop");
    assert!(out.meta.iter().all(|m| m.disturbed));
    let its: Vec<u64> = out.meta.iter().map(|m| m.iterations.unwrap_or(64)).collect();
    assert!(its[0] == 64 && its.last().unwrap() < &64, "{its:?}");
    assert!(its.iter().all(|&i| i >= 8), "not below about 1 ms: {its:?}");
}

#[test]
fn a_net_measure_keeps_both_halves_and_records_their_difference() {
    let mut st = settings(4);
    st.iterations = Some(10_000);
    let mut s = Sampler::new(st);
    let (mut g_calls, mut b_calls) = (0, 0);
    s.measure_net_us(
        |n| {
            g_calls += 1;
            Ok(Duration::from_nanos(3000 * n))
        },
        |n| {
            b_calls += 1;
            Ok(Duration::from_nanos(1000 * n))
        },
        ["gross_us", "base_us"],
    )
    .unwrap();
    assert_eq!((g_calls, b_calls), (5, 5), "warm-up + 4 samples, both halves each time");
    let out = s.finish();
    assert!(out.net_of_overhead);
    assert_eq!(out.samples.len(), 4);
    assert_eq!(out.parts["gross_us"].len(), 4);
    assert_eq!(out.parts["base_us"].len(), 4);
    for i in 0..4 {
        let (g, b) = (out.parts["gross_us"][i], out.parts["base_us"][i]);
        assert!((g - 3.0).abs() < 0.01 && (b - 1.0).abs() < 0.01, "{g} {b}");
        assert!((out.samples[i] - (g - b)).abs() < 1e-12);
        assert!((out.sample_secs[i] - 0.04).abs() < 1e-9, "the sample lasted both halves");
    }
    let mut more = out.clone();
    more.absorb(out);
    assert_eq!(more.parts["gross_us"].len(), 8);
}

#[test]
fn samplers_taking_turns_alternate_sample_by_sample() {
    use std::sync::{Arc, Mutex};
    let turns = Arc::new(turns::Turns::new(2));
    let log = Arc::new(Mutex::new(Vec::new()));
    std::thread::scope(|sc| {
        for me in 0..2usize {
            let (turns, log) = (&turns, log.clone());
            sc.spawn(move || {
                let mut st = settings(2);
                st.iterations = Some(8);
                let mut s = Sampler::new(st).taking_turns(turns.enter(me));
                s.measure_us(|n| {
                    log.lock().unwrap().push((me, n));
                    Ok(Duration::from_micros(n))
                })
                .unwrap();
                assert_eq!(s.finish().samples.len(), 2);
            });
        }
    });
    // Each warms up in its first turn; then before every sample the other
    // takes its turn, and each sample (8) follows a re-warming pass (8/4).
    let log = log.lock().unwrap().clone();
    assert_eq!(log, [(0, 8), (1, 8), (0, 2), (0, 8), (1, 2), (1, 8), (0, 2), (0, 8), (1, 2), (1, 8)]);
}

#[test]
fn only_a_solo_task_shortens_its_samples() {
    // Half the samples or more disturbed: a solo task's next sample is short.
    assert_eq!(next_iterations(TaskKind::Solo, 1000, 100, 1, 2), 100);
    assert_eq!(next_iterations(TaskKind::Solo, 1000, 100, 1, 3), 1000);
    // Tasks that wake each other, and whole runs, keep their length.
    assert_eq!(next_iterations(TaskKind::Waits, 1000, 100, 3, 3), 1000);
    assert_eq!(next_iterations(TaskKind::WholeRun, 1000, 100, 3, 3), 1000);
}

#[test]
fn a_warm_up_settles_when_its_last_calls_agree() {
    use super::settings::settled;
    // Still speeding up (a pipe round trip's first tens of milliseconds).
    assert!(!settled(&[12.0, 11.0, 10.4, 10.0]));
    // The last three within 2 %.
    assert!(settled(&[12.0, 10.1, 10.0, 10.05]));
    // Too few calls to tell.
    assert!(!settled(&[10.0, 10.0]));
    // A call that stalled: not settled until three agree again.
    assert!(!settled(&[10.0, 10.0, 13.0]));
    assert!(!settled(&[0.0, 0.0, 0.0]));
}
