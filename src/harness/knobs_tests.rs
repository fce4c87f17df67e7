use super::*;
use crate::sys::knobs as k;
use crate::testing::fake;

fn cfg(name: &str, mods: &[(&str, &str)]) -> Config {
    Config {
        name: name.into(),
        cpus: crate::cpuset::CpuSet::parse_list("0").unwrap(),
        policy: None,
        env: vec![],
        knobs: mods.iter().map(|(kk, v)| ck::parse(kk, v).unwrap()).collect(),
        counters: None,
        cgroup: vec![],
    }
}

/// Every file of the fake tree, for before-and-after comparisons.
fn snapshot(root: &Path) -> Vec<(PathBuf, String)> {
    let mut v = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.ends_with("knobs.journal") {
                v.push((p.clone(), k::current_value(&p).unwrap()));
            }
        }
    }
    v.sort();
    v
}

#[test]
fn each_knob_applied_read_back_and_restored() {
    let d = tempfile::tempdir().unwrap();
    fake::knobs(d.path());
    let before = snapshot(d.path());
    let jp = journal::path(d.path());
    let mut s = Session::new(d.path());
    let all = cfg("up+all", fake::KNOB_SETTINGS);
    s.switch(&all).unwrap();
    assert!(jp.exists(), "journaled before the change");
    assert_eq!(k::read_text(&d.path().join(k::THP)).unwrap(), "never");
    assert_eq!(k::read_text(&d.path().join(k::BOOST)).unwrap(), "0");
    assert_eq!(k::read_text(&d.path().join(k::PREEMPT)).unwrap(), "none");
    assert_eq!(k::read_text(&d.path().join(k::CPUFREQ).join("policy1/scaling_governor")).unwrap(), "performance");
    assert_eq!(
        s.read_back("up+all"),
        [
            "preempt=none",
            "smt=off",
            "governor=performance",
            "boost=off",
            "thp=never",
            "sysctl=kernel.sched_autogroup_enabled=0",
            "sysfs=/sys/kernel/mm/transparent_hugepage/defrag=never"
        ]
    );
    // A configuration without settings puts everything back.
    s.switch(&cfg("up", &[])).unwrap();
    assert!(!jp.exists());
    assert_eq!(snapshot(d.path()), before);
}

#[test]
fn switching_between_configurations_interleaved() {
    let d = tempfile::tempdir().unwrap();
    fake::knobs(d.path());
    let a = cfg("up+thp=never", &[("thp", "never")]);
    let b = cfg("up+thp=always+boost=off", &[("thp", "always"), ("boost", "off")]);
    let mut s = Session::new(d.path());
    for c in [&a, &b, &b, &a, &a, &b] {
        s.switch(c).unwrap();
        let thp = k::read_text(&d.path().join(k::THP)).unwrap();
        let boost = k::read_text(&d.path().join(k::BOOST)).unwrap();
        if c.name == a.name {
            assert_eq!((thp.as_str(), boost.as_str()), ("never", "1"), "b's boost=off undone for a");
        } else {
            assert_eq!((thp.as_str(), boost.as_str()), ("always", "0"));
        }
    }
    // The journal keeps the first originals however often a file changed.
    let e = journal::read(&journal::path(d.path())).unwrap().unwrap();
    assert_eq!(e.wrote.iter().map(|(_, o)| o.as_str()).collect::<Vec<_>>(), ["madvise", "1"]);
    drop(s);
    assert_eq!(k::read_text(&d.path().join(k::THP)).unwrap(), "madvise", "dropped: restored");
    assert_eq!(k::read_text(&d.path().join(k::BOOST)).unwrap(), "1");
    assert!(!journal::path(d.path()).exists());
}

#[test]
fn a_failed_change_is_reported_and_restored() {
    let d = tempfile::tempdir().unwrap();
    fake::knobs(d.path());
    let mut s = Session::new(d.path());
    s.switch(&cfg("a", &[("thp", "never")])).unwrap();
    // The governor's file vanishes under us: the switch fails, saying which.
    std::fs::remove_dir_all(d.path().join(k::CPUFREQ)).unwrap();
    let e = s.switch(&cfg("b", &[("thp", "always"), ("governor", "performance")])).unwrap_err();
    assert!(e.to_string().contains("governor=performance"), "{e}");
    s.restore().unwrap();
    assert_eq!(k::read_text(&d.path().join(k::THP)).unwrap(), "madvise");
}
