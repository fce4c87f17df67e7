use super::*;
use crate::testing::fake;
use std::os::unix::fs::PermissionsExt;

fn set(k: &str, v: &str) -> KnobSetting {
    parse(k, v).unwrap()
}

#[test]
fn parses_each_modifier() {
    assert_eq!(set("thp", "never").name(), "thp=never");
    assert_eq!(set("preempt", "lazy").name(), "preempt=lazy");
    assert_eq!(set("smt", "off").name(), "smt=off");
    assert_eq!(set("boost", "off").name(), "boost=off");
    assert_eq!(set("governor", "performance").name(), "governor=performance");
    assert_eq!(set("sysctl", "kernel/sched_autogroup_enabled=0").name(), "sysctl=kernel.sched_autogroup_enabled=0");
    assert_eq!(
        set("sysfs", "/sys/kernel/mm/transparent_hugepage/defrag=never").name(),
        "sysfs=/sys/kernel/mm/transparent_hugepage/defrag=never"
    );
}

#[test]
fn refuses_malformed_modifiers() {
    for (k, v) in [
        ("thp", "sometimes"),
        ("preempt", "rt"),
        ("smt", "forceoff"),
        ("boost", "1"),
        ("governor", ""),
        ("governor", "../x"),
        ("sysctl", "kernel.x"),
        ("sysctl", "=1"),
        ("sysctl", "kernel..x=1"),
        ("sysctl", "../etc/passwd=1"),
        ("sysctl", "kernel.x="),
        ("sysfs", "/etc/passwd=1"),
        ("sysfs", "/sys/../etc/passwd=1"),
        ("sysfs", "/sys/=1"),
        ("sysfs", "sys/kernel/x=1"),
        ("sysfs", "/sys/kernel//x=1"),
        ("sysfs", "/proc/self/x=1"),
        ("sysfs", "/sys/kernel/x=a\nb"),
    ] {
        let e = parse(k, v).unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{k}={v}: {e}");
        assert!(!e.to_string().contains('\n'), "one line: {e}");
    }
}

#[test]
fn fake_tree_every_knob_available() {
    let d = tempfile::tempdir().unwrap();
    fake::knobs(d.path());
    for &(kk, v) in fake::KNOB_SETTINGS {
        check(&set(kk, v), d.path()).unwrap_or_else(|e| panic!("{kk}={v}: {e}"));
    }
    assert_eq!(read_back(&Knob::Thp, d.path()).unwrap(), "madvise");
    assert_eq!(read_back(&Knob::Preempt, d.path()).unwrap(), "full");
    assert_eq!(read_back(&Knob::Boost, d.path()).unwrap(), "on");
    assert_eq!(read_back(&Knob::Governor, d.path()).unwrap(), "schedutil");
    assert_eq!(read_back(&Knob::Sysctl("net.ipv4.tcp_rmem".into()), d.path()).unwrap(), "4096 131072 6291456");
    let t = targets(&set("boost", "off"), d.path()).unwrap();
    assert_eq!(t, vec![(d.path().join(k::BOOST), "0".to_string())]);
    assert_eq!(targets(&set("governor", "performance"), d.path()).unwrap().len(), 2);
}

#[test]
fn fake_tree_refusals_name_the_reason() {
    let d = tempfile::tempdir().unwrap();
    // Absent: nothing at all.
    for (kk, v, says) in [
        ("preempt", "none", "debugfs is not mounted"),
        ("smt", "off", "smt/control does not exist"),
        ("governor", "performance", "no CPU frequency driver"),
        ("boost", "on", "no cpufreq driver with boost control"),
        ("thp", "never", "transparent_hugepage/enabled does not exist"),
        ("sysctl", "kernel.nope=1", "no such sysctl"),
        ("sysfs", "/sys/nope=1", "No such file"),
    ] {
        let e = check(&set(kk, v), d.path()).unwrap_err();
        assert!(e.contains(says) && e.starts_with(&format!("{kk}=")), "{kk}={v}: {e}");
    }
    fake::knobs(d.path());
    // Values the kernel does not offer.
    std::fs::write(d.path().join(k::PREEMPT), "none voluntary (full)\n").unwrap();
    let e = check(&set("preempt", "lazy"), d.path()).unwrap_err();
    assert_eq!(e, "preempt=lazy: this kernel offers none, voluntary, full");
    let e = check(&set("governor", "ondemand"), d.path()).unwrap_err();
    assert!(e.contains("offers performance, powersave, schedutil"), "{e}");
    // SMT that cannot be switched, as on this VM.
    std::fs::write(d.path().join(k::SMT_CONTROL), "notsupported\n").unwrap();
    let e = check(&set("smt", "off"), d.path()).unwrap_err();
    assert!(e.contains("smt/control reads notsupported: this CPU has no SMT"), "{e}");
    std::fs::write(d.path().join(k::SMT_CONTROL), "forceoff\n").unwrap();
    assert!(check(&set("smt", "on"), d.path()).unwrap_err().contains("nosmt=force"));
    // Read-only files.
    std::fs::set_permissions(d.path().join(k::THP), std::fs::Permissions::from_mode(0o444)).unwrap();
    let e = check(&set("thp", "never"), d.path()).unwrap_err();
    assert!(e.contains("read-only (mode 444)"), "{e}");
    // A link out of /sys.
    std::fs::create_dir_all(d.path().join("etc")).unwrap();
    std::fs::write(d.path().join("etc/secret"), "x").unwrap();
    std::os::unix::fs::symlink(d.path().join("etc/secret"), d.path().join("sys/escape")).unwrap();
    let e = check(&set("sysfs", "/sys/escape=1"), d.path()).unwrap_err();
    assert!(e.contains("outside /sys and /proc/sys"), "{e}");
}

#[test]
fn smt_off_keeps_the_first_siblings() {
    let t = crate::config::tests::topo(&[&[0, 1], &[2, 3]]);
    assert!(check_smt_off("noht+smt=off", &CpuSet::parse_list("0,2").unwrap(), &t).is_ok());
    let e = check_smt_off("ht+smt=off", &CpuSet::parse_list("0-3").unwrap(), &t).unwrap_err();
    assert!(crate::error::is_bad_input(&e) && e.to_string().contains("uses CPUs 1,3"), "{e}");
    let c = crate::config::resolve("noht+smt=off", &t).unwrap();
    assert_eq!(c.name, "noht+smt=off");
    assert!(crate::config::resolve("ht+smt=off", &t).is_err());
}

#[test]
fn resolve_records_knobs() {
    let t = crate::config::tests::topo(&[&[0], &[1]]);
    let c = crate::config::resolve("up+thp=never+sysctl=vm/swappiness=10", &t).unwrap();
    assert_eq!(c.name, "up+thp=never+sysctl=vm.swappiness=10");
    assert_eq!(c.knobs.len(), 2);
    assert_eq!(crate::config::resolve("thp=always", &t).unwrap().name, "all+thp=always");
    for bad in [
        "up+thp=never+thp=always",
        "up+sysctl=vm.swappiness=1+sysctl=vm/swappiness=2",
        "up+sysfs=/sys/a=1+sysfs=/sys/a=2",
    ] {
        let e = crate::config::resolve(bad, &t).unwrap_err();
        assert!(e.to_string().contains("conflicting modifiers"), "{bad}: {e}");
    }
    assert_eq!(crate::config::resolve("up+sysctl=vm.a=1+sysctl=vm.b=2", &t).unwrap().knobs.len(), 2);
}

#[test]
fn states_for_topo() {
    let d = tempfile::tempdir().unwrap();
    fake::knobs(d.path());
    std::fs::write(d.path().join(k::SMT_CONTROL), "notsupported\n").unwrap();
    let t = states_text(d.path());
    for key in ["preempt", "smt", "governor", "boost", "thp", "sysctl", "sysfs"] {
        assert!(t.lines().any(|l| l.trim_start().starts_with(key)), "{key} missing:\n{t}");
    }
    assert!(t.contains("thp       madvise (offers always, madvise, never); can change ["), "{t}");
    assert!(t.contains("smt       notsupported; cannot change:"), "{t}");
    assert!(t.contains("reads notsupported"), "{t}");
    let empty = tempfile::tempdir().unwrap();
    let t = states_text(empty.path());
    assert!(t.contains("preempt   unavailable: debugfs is not mounted"), "{t}");
}

proptest::proptest! {
    #[test]
    fn parse_never_panics_and_errors_are_one_line(key in "(preempt|smt|governor|boost|thp|sysctl|sysfs)", v in "\\PC{0,40}") {
        if let Err(e) = parse(&key, &v) {
            proptest::prop_assert!(crate::error::is_bad_input(&e));
        } else {
            let s = parse(&key, &v).unwrap();
            proptest::prop_assert!(!s.value.is_empty() && !s.value.contains('\n'));
            if let Knob::Sysfs(p) = &s.knob {
                proptest::prop_assert!((p.starts_with("/sys/") || p.starts_with("/proc/sys/")) && !p.contains("/../"));
            }
        }
    }
}
