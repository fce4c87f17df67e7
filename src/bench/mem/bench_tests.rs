//! Tests of `bench.rs`.

use super::*;
use crate::measure::sampler::SamplerSettings;
use crate::model::params::{expand, parse_size};
use std::collections::BTreeMap;

#[test]
fn size_lists_step_by_sqrt2() {
    for list in [SIZES, PAGE_SIZES, QUICK_SIZES] {
        let v: Vec<u64> = list.split(',').map(|x| parse_size(x).unwrap()).collect();
        assert!(v.windows(2).all(|w| w[1] > w[0]));
        if list != QUICK_SIZES {
            for w in v.windows(2) {
                let r = w[1] as f64 / w[0] as f64;
                assert!((1.37..1.46).contains(&r), "{} -> {}", w[0], w[1]);
            }
            assert_eq!(*v.last().unwrap(), 512 << 20);
        }
    }
    assert!(PAGE_SIZES.split(',').all(|x| parse_size(x).unwrap() >= 4096));
    assert!(SIZES.ends_with(PAGE_SIZES));
}

fn run_one(b: &MemBench, over: &[(&str, &str)]) -> crate::measure::sampler::SampleSet {
    let info = b.info();
    let o: BTreeMap<String, String> = over.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let pts = expand(&info.params, &o, true, info.name).unwrap();
    assert_eq!(pts.len(), 1, "{:?}", pts);
    let t = tempfile::tempdir().unwrap();
    let mut s = Sampler::new(SamplerSettings {
        target: Duration::from_micros(500),
        llc_bytes: Some(1 << 20),
        ..SamplerSettings::direct(2, t.path())
    });
    b.check(&pts[0]).unwrap();
    b.run(&pts[0], &mut s).unwrap();
    s.finish()
}

#[test]
fn every_routine_and_impl_runs() {
    for r in [Routine::Memcpy, Routine::Memset, Routine::ClearPage, Routine::Strlen] {
        for imp in <ImplName as crate::model::params::Choice>::NAMES {
            for cache in ["warm", "cold"] {
                let b = MemBench::new(r);
                let out = run_one(&b, &[("impl", imp), ("size", "8K"), ("cache", cache)]);
                assert_eq!(out.samples.len(), 2);
                assert!(out.samples.iter().all(|v| *v > 0.0 && v.is_finite()), "{r:?} {imp}: {:?}", out.samples);
                assert!(out.extras["regime"].is_string());
                let bufs = out.extras["buffers"].as_u64().unwrap();
                assert_eq!(bufs > 1, cache == "cold");
            }
        }
    }
}

#[test]
fn offsets_and_thresholds_are_used() {
    let b = MemBench::new(Routine::Memcpy);
    let out = run_one(
        &b,
        &[
            ("impl", "tuned"),
            ("size", "1000"),
            ("cache", "warm"),
            ("offset", "3"),
            ("dst_offset", "61"),
            ("nt_threshold", "512"),
        ],
    );
    assert_eq!(out.extras["nt_threshold_bytes"], 512);
    let out = run_one(
        &MemBench::new(Routine::Strlen),
        &[("impl", "tuned"), ("size", "100"), ("cache", "cold"), ("offset", "7")],
    );
    assert_eq!(out.samples.len(), 2);
}

#[test]
fn bad_sizes_are_bad_input() {
    let b = MemBench::new(Routine::ClearPage);
    let mut p = Params::default();
    p.set("size", "100");
    assert!(crate::error::is_bad_input(&b.check(&p).unwrap_err()));
    p.set("size", "1T");
    assert!(crate::error::is_bad_input(&b.check(&p).unwrap_err()));
    let b = MemBench::new(Routine::Memcpy);
    p.set("size", "0");
    assert!(crate::error::is_bad_input(&b.check(&p).unwrap_err()));
}
