//! The `--config` list and its modifiers: splitting and resolving never
//! panic; a resolved configuration lies within the CPUs kdelta may use, and
//! its canonical name resolves to the same configuration.
#![no_main]
use kdelta::fuzzing::{resolve, split_list};
use kdelta::fuzzing::CpuSet;
use kdelta::fuzzing::{Restriction, Topology};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

/// Eight single-CPU cores, whole and restricted to CPUs 2-5.
fn topologies() -> &'static [Topology; 2] {
    static T: OnceLock<[Topology; 2]> = OnceLock::new();
    T.get_or_init(|| {
        let whole = kdelta::fuzzing::flat(&CpuSet::parse_list("0-7").unwrap());
        let mut part = whole.clone();
        part.restriction = Some(Restriction { cpus: CpuSet::parse_list("2-5").unwrap(), source: "fuzz".into() });
        [whole, part]
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else { return };
    let Ok(s) = std::str::from_utf8(rest) else { return };
    let topo = &topologies()[usize::from(pick & 1)];
    let usable = topo.usable().online.clone();
    for name in split_list(s) {
        let Ok(cfg) = resolve(&name, topo) else { continue };
        assert!(!cfg.cpus.is_empty(), "{name:?}");
        assert!(cfg.cpus.difference(&usable).is_empty(), "{name:?} gave {} outside {usable}", cfg.cpus);
        let again = resolve(&cfg.name, topo).unwrap_or_else(|e| panic!("{name:?} -> {:?}: {e}", cfg.name));
        assert_eq!((again.cpus, again.policy, again.env), (cfg.cpus, cfg.policy, cfg.env), "{name:?}");
    }
});
