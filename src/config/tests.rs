//! Unit tests of `config/`: configurations resolved against fake topologies, and applied.

use super::*;
use crate::topology::{Core, Cpu};

/// A topology from a list of cores (each a list of CPU ids), one package.
pub(crate) fn topo(cores: &[&[u32]]) -> Topology {
    let mut cpus = Vec::new();
    let mut cs = Vec::new();
    for (i, c) in cores.iter().enumerate() {
        let set = CpuSet::from_iter(c.iter().copied());
        for &id in *c {
            cpus.push(Cpu {
                id,
                core: i,
                package: 0,
                die: None,
                core_id: Some(i as i64),
                siblings: set.clone(),
                node: Some(0),
            });
        }
        cs.push(Core { package: 0, core_id: Some(i as i64), cpus: set });
    }
    cpus.sort_by_key(|c| c.id);
    Topology {
        online: CpuSet::from_iter(cpus.iter().map(|c| c.id)),
        offline: CpuSet::new(),
        cpus,
        cores: cs,
        packages: vec![0],
        caches: vec![],
        nodes: vec![],
        smt_control: None,
        smt_active: None,
        restriction: None,
    }
}

fn cpus(spec: &str, t: &Topology) -> String {
    resolve(spec, t).unwrap().cpus.to_string()
}

/// A worker parked on the highest CPU it may use starts, once its
/// configuration is applied, on the lowest (where `up` runs), its
/// affinity widened to all. In a thread of its own, so the test's
/// affinity is left as found.
#[test]
fn a_worker_starts_on_its_configurations_lowest_cpu() {
    let allowed = sys::get_affinity().unwrap();
    let (Some(low), Some(high)) = (allowed.first(), allowed.iter().last()) else { return };
    if low == high {
        return; // one CPU: nowhere else to start
    }
    let cfg = crate::model::config::tests::cfg("all", &allowed.to_string(), None);
    let seen = std::thread::spawn(move || {
        // The scheduler may move a thread at any moment: five tries.
        (0..5)
            .map(|_| {
                sys::set_affinity(&CpuSet::from_iter([high])).unwrap();
                sys::set_affinity(&cfg.cpus).unwrap();
                apply(&cfg).unwrap();
                (sys::task::current_cpu(), sys::get_affinity().unwrap())
            })
            .collect::<Vec<_>>()
    })
    .join()
    .unwrap();
    assert!(seen.iter().all(|(_, aff)| *aff == allowed), "{seen:?}");
    assert!(seen.iter().any(|(cpu, _)| *cpu == Some(low)), "never on CPU {low}: {seen:?}");
}

/// On a machine of the `cores` given, each configuration resolves to the
/// CPU list paired with it.
#[track_caller]
fn derives(cores: &[&[u32]], cases: &[(&str, &str)]) {
    let t = topo(cores);
    for (spec, want) in cases {
        assert_eq!(cpus(spec, &t), *want, "{spec} on cores {cores:?}");
    }
}

#[test]
fn derives_from_siblings_0_1() {
    derives(
        &[&[0, 1], &[2, 3]],
        &[
            ("up", "0"),
            ("noht", "0,2"),
            ("smp", "0,2"),
            ("ht", "0-3"),
            ("noht1", "0"),
            ("ht1", "0-1"),
            ("smp1", "0"),
            ("cpus=1,3", "1,3"),
        ],
    );
}

#[test]
fn derives_from_siblings_0_2() {
    derives(&[&[0, 2], &[1, 3]], &[("noht", "0-1"), ("ht1", "0,2"), ("smp2", "0-1")]);
}

#[test]
fn refuses_smt_without_siblings() {
    let t = topo(&[&[0], &[1]]);
    assert_eq!(cpus("noht", &t), "0-1");
    let e = resolve("ht", &t).unwrap_err();
    assert!(e.downcast_ref::<Unavailable>().is_some());
    assert!(e.to_string().contains("SMT siblings"), "{e}");
    assert!(resolve("ht1", &t).unwrap_err().downcast_ref::<Unavailable>().is_some());
    assert!(resolve("smp4", &t).unwrap_err().downcast_ref::<Unavailable>().is_some());
}

#[test]
fn bad_names_are_bad_input() {
    let t = topo(&[&[0], &[1]]);
    for bad in
        ["bogus", "cpus=7", "cpus=a", "cpus=", "smp0", "noht+sched=turbo", "noht+x=y", "noht+sched", "tunables=", ""]
    {
        let e = resolve(bad, &t).unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{bad}: {e}");
    }
    let e = resolve("cpus=0-7", &t).unwrap_err().to_string();
    assert!(e.contains("2-7") && e.contains("0-1"), "{e}");
}

#[test]
fn modifiers() {
    let t = topo(&[&[0], &[1]]);
    let c = resolve("smp+sched=batch", &t).unwrap();
    assert_eq!(c.name, "noht+sched=batch");
    assert_eq!(c.policy, Some(Policy::Batch));
    let c = resolve("sched=idle", &t).unwrap();
    assert_eq!(c.name, "all+sched=idle");
    let c = resolve("up+tunables=glibc.cpu.x86_non_temporal_threshold=0x1000000", &t).unwrap();
    assert_eq!(c.env, vec![("GLIBC_TUNABLES".into(), "glibc.cpu.x86_non_temporal_threshold=0x1000000".into())]);
    assert!(c.describe().starts_with("up+tunables="));
    // preload=tuned: LD_PRELOAD, or unavailable with the reason (a unit
    // test binary has no libkdelta_mem.so beside it); never bad input.
    match resolve("up+preload=tuned", &t) {
        Ok(c) => assert!(
            c.env[0].0 == "LD_PRELOAD" && c.env[0].1.ends_with("libkdelta_mem.so") && c.name == "up+preload=tuned"
        ),
        Err(e) => {
            assert!(e.downcast_ref::<Unavailable>().is_some_and(|u| u.reason.contains("libkdelta_mem.so")), "{e}")
        }
    }
    assert!(crate::error::is_bad_input(&resolve("up+preload=", &t).unwrap_err()));
}

#[test]
fn conflicting_modifiers_are_bad_input() {
    let t = topo(&[&[0], &[1]]);
    for bad in [
        "sched=fifo+sched=rr",
        "up+sched=batch+sched=batch",
        "up+tunables=a=1+tunables=b=2",
        "up+env=A=1+env=A=2",
        "up+tunables=a=1+env=GLIBC_TUNABLES=x",
        "up+preload=tuned+env=LD_PRELOAD=x",
        "preload=tuned+preload=/x.so",
    ] {
        let e = resolve(bad, &t).unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{bad}: {e}");
        assert!(e.to_string().contains("conflicting modifiers"), "{bad}: {e}");
    }
    assert_eq!(resolve("up+env=A=1+env=B=2+sched=batch", &t).unwrap().env.len(), 2);
}

#[test]
fn cgroup_limits_are_modifiers() {
    let t = topo(&[&[0], &[1]]);
    let c = resolve("up+cpu.max=50000/100000", &t).unwrap();
    assert_eq!(c.name, "up+cpu.max=50000/100000");
    assert_eq!(c.cgroup, vec![crate::model::config::CgroupLimit::CpuMax { quota_us: 50000, period_us: 100000 }]);
    assert_eq!(resolve("cpus=1+cpus=1.5", &t).unwrap().name, "cpus=1+cpu.max=150000/100000");
    assert_eq!(resolve("cpuset=1", &t).unwrap().name, "all+cpuset=1");
    assert_eq!(resolve("memory.max=64M+cpu.weight=50", &t).unwrap().cgroup.len(), 2);
    assert_eq!(split_list("up,up+cpus=1.5,cpus=0,1"), ["up", "up+cpus=1.5", "cpus=0,1"]);
    for bad in ["up+cpuset=1", "up+cpuset=5", "up+cpus=1.5+cpu.max=1000/2000", "up+cpu.weight=0"] {
        assert!(crate::error::is_bad_input(&resolve(bad, &t).unwrap_err()), "{bad}");
    }
}

#[test]
fn lists_split_around_cpu_lists() {
    let s = |v: &str| split_list(v).join(" | ");
    assert_eq!(s("up,noht"), "up | noht");
    assert_eq!(s("cpus=0,2-3"), "cpus=0,2-3");
    assert_eq!(s("up,cpus=0,2-3,noht,cpus=1"), "up | cpus=0,2-3 | noht | cpus=1");
    assert_eq!(s("cpus=0,2+sched=batch,up"), "cpus=0,2+sched=batch | up");
    assert_eq!(s("cpus=0+sched=batch,1"), "cpus=0+sched=batch | 1");
    assert_eq!(s("up,,noht"), "up |  | noht");
}

#[test]
fn derives_from_the_usable_cpus() {
    let mut t = topo(&[&[0, 1], &[2, 3], &[4, 5]]);
    t.restriction = Some(crate::topology::Restriction {
        cpus: CpuSet::parse_list("2-5").unwrap(),
        source: "cgroup cpuset 2-5".into(),
    });
    assert_eq!(cpus("all", &t), "2-5");
    assert_eq!(cpus("up", &t), "2");
    assert_eq!(cpus("noht", &t), "2,4");
    assert_eq!(cpus("ht1", &t), "2-3");
    assert_eq!(cpus("smp2", &t), "2,4");
    assert!(resolve("smp3", &t).unwrap_err().downcast_ref::<Unavailable>().is_some());
    let e = resolve("cpus=0", &t).unwrap_err().to_string();
    assert!(e.contains("kdelta may use CPUs 2-5") && e.contains("cgroup cpuset"), "{e}");
}

#[test]
fn what_a_configuration_reaches_is_read_from_its_modifiers() {
    let classes = |spec: &str| reach(spec).into_iter().map(|(r, _)| r).collect::<Vec<_>>();
    for harmless in ["up", "cpus=0", "cpus=0-1", "noht+sched=fifo+tunables=a.b=1+counters=on+preload=tuned"] {
        assert!(classes(harmless).is_empty(), "{harmless}");
    }
    assert_eq!(classes("up+thp=never"), [Reach::Settings]);
    assert_eq!(classes("up+cpus=1"), [Reach::Settings], "a cgroup's CPU limit, not the base");
    assert_eq!(classes("memory.max=1G"), [Reach::Settings]);
    assert_eq!(classes("env=LD_PRELOAD=/x.so"), [Reach::Commands]);
    assert_eq!(classes("up+preload=/tmp/x.so+sysctl=kernel.a=1"), [Reach::Commands, Reach::Settings]);
    assert!(reach("up+thp=never")[0].1.contains("up+thp=never"));
}

/// Every modifier kdelta takes reaches a class, unless listed here as
/// reaching nothing: a new one must be classified (`reach`), or an agent
/// would run it whatever its `--allow`.
#[test]
fn every_modifier_is_classified_for_agents() {
    const NOTHING: &[&str] = &["sched", "tunables", "counters"];
    let keys: Vec<&str> = MODIFIERS.split(", ").filter_map(|m| m.split_once('=').map(|(k, _)| k)).collect();
    assert!(keys.len() >= 18, "{keys:?}");
    for k in keys {
        let classified = !reach(&format!("up+{k}=1")).is_empty();
        assert!(classified != NOTHING.contains(&k), "modifier {k}= is not classified (config::reach)");
    }
}
