//! Manual comparison runs (ignored by default): run kdelta's dbench or tbench
//! once through the library and print MB/s and the extras, for comparing with
//! Debian's dbench/tbench on the same loadfile. Configure with environment
//! variables:
//!
//! ```text
//! KD_BENCH=dbench.throughput|tbench.throughput  KD_PARAMS="clients=2 time=10s loadfile=/usr/share/dbench/client.txt"
//! cargo test --release --test it dbench_compare:: -- --ignored --nocapture
//! ```

use kdelta::testing::{Sampler, SamplerSettings};
use std::collections::BTreeMap;
use std::time::Duration;

#[test]
#[ignore]
fn compare_run() {
    let name = std::env::var("KD_BENCH").unwrap_or_else(|_| "dbench.throughput".into());
    let mut o = BTreeMap::new();
    for kv in std::env::var("KD_PARAMS").unwrap_or_default().split_whitespace() {
        let (k, v) = kv.split_once('=').expect("KEY=VALUE");
        o.insert(k.to_string(), v.to_string());
    }
    let b = kdelta::testing::find(&name).expect("benchmark");
    let pts = kdelta::testing::expand(&b.info().params, &o, true, &name).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for p in pts {
        b.check(&p).unwrap();
        let mut s = Sampler::new(SamplerSettings {
            target: Duration::from_millis(10),
            ..SamplerSettings::direct(1, dir.path())
        });
        b.run(&p, &mut s).unwrap();
        let out = s.finish();
        println!("{name} {} -> {:.2} MB/s", p.display(), out.samples[0]);
        println!("{}", serde_json::to_string_pretty(&out.extras).unwrap());
        for n in out.notes {
            println!("note: {n}");
        }
    }
}
