use super::*;
use crate::testing::fake::{self, snapshot};

fn find<'a>(r: &'a Report, setting: &str) -> &'a Finding {
    r.findings.iter().find(|f| f.setting == setting).unwrap_or_else(|| panic!("no {setting}: {r:#?}"))
}

#[test]
fn names_what_moves_measurements_on_a_vm() {
    let d = tempfile::tempdir().unwrap();
    fake::vm(d.path());
    let all = CpuSet::parse_list("0-1").unwrap();
    let r = examine(d.path(), &all, Duration::from_millis(20));
    let vm = find(&r, "virtual machine");
    assert!(vm.value.contains("hypervisor CPU flag") && vm.value.contains("haltpoll"), "{vm:?}");
    let idle = find(&r, "cpuidle");
    assert!(idle.value.contains("driver haltpoll") && idle.value.contains("guest_halt_poll_ns=0"), "{idle:?}");
    assert!(idle.why.contains("haltpoll"), "{idle:?}");
    assert_eq!(idle.apply, ["sysfs=/sys/devices/system/cpu/cpu1/cpuidle/state2/disable=1"]);
    assert!(find(&r, "cpufreq driver").value.starts_with("none"));
    assert_eq!(find(&r, "transparent huge pages (enabled)").apply, ["thp=madvise"]);
    assert_eq!(find(&r, "ASLR (kernel.randomize_va_space)").verdict, Verdict::Change);
    assert!(find(&r, "steal time").value.contains("did not advance"), "a fake /proc/stat stands still");
    let irq = find(&r, "IRQs on the measured CPUs");
    assert!(irq.value.contains("irq 4 IO-APIC 4-edge ttyS0 (30 on measured CPUs"), "{irq:?}");
    assert_eq!(find(&r, "swap").verdict, Verdict::Ok);
    // Measuring on CPU 0 only: CPU 1's deep state is not in the way.
    let r0 = examine(d.path(), &CpuSet::parse_list("0").unwrap(), Duration::from_millis(1));
    assert!(find(&r0, "cpuidle").apply.is_empty());
    assert!(find(&r0, "IRQs on the measured CPUs").value.contains("10 on measured CPUs"));
    let text = render(&r);
    for s in [
        "[change] cpuidle: driver haltpoll",
        "[change] transparent huge pages",
        "[note] cpufreq driver: none",
        "steal time",
    ] {
        assert!(text.contains(s), "{s}: {text}");
    }
    let j = serde_json::to_value(&r).unwrap();
    assert_eq!(j["measured_cpus"], "0-1");
    assert!(j["findings"].as_array().unwrap().iter().any(|f| f["setting"] == "steal time"));
}

#[test]
fn steal_and_busy_processes_from_two_samples() {
    let f = checks_steal(Some((1000, 10)), Some((1200, 16)));
    assert!(f.value.starts_with("3.0 %"), "{}", f.value);
    assert_eq!(f.verdict, Verdict::Change);
    let f = checks_steal(Some((1000, 10)), Some((1200, 10)));
    assert_eq!(f.verdict, Verdict::Ok);
}

fn checks_steal(a: Option<(u64, u64)>, b: Option<(u64, u64)>) -> Finding {
    checks::steal_for_tests(a, b, Duration::from_secs(1))
}

#[test]
fn apply_then_reset_leaves_every_file_as_it_was() {
    let d = tempfile::tempdir().unwrap();
    fake::vm(d.path());
    let before = snapshot(d.path());
    let all = CpuSet::parse_list("0-1").unwrap();
    let r = examine(d.path(), &all, Duration::from_millis(1));
    let lines = apply(d.path(), &r).unwrap();
    assert!(lines.iter().any(|l| l == "applied thp=madvise (was always)"), "{lines:?}");
    let read = |rel: &str| std::fs::read_to_string(d.path().join(rel)).unwrap();
    assert_eq!(read("proc/sys/kernel/randomize_va_space"), "2");
    assert_eq!(read("proc/sys/kernel/perf_event_max_sample_rate"), "100000", "left for --profile");
    assert_eq!(read("sys/kernel/mm/transparent_hugepage/defrag"), "madvise");
    assert_eq!(read("sys/devices/system/cpu/cpu1/cpuidle/state2/disable"), "1");
    let e = journal::read(&journal::path(d.path())).unwrap().unwrap();
    assert!(e.tuned, "the doctor's journal is marked to outlive it");
    assert_eq!(e.wrote.len(), 4);
    // A second --apply is refused while the first holds.
    let again = apply(d.path(), &r).unwrap_err();
    assert!(crate::error::is_bad_input(&again) && again.to_string().contains("--reset"), "{again}");
    let done = reset(d.path()).unwrap();
    assert!(done.last().unwrap().starts_with("restored;"), "{done:?}");
    assert_eq!(snapshot(d.path()), before, "every file as it was");
    assert!(!journal::path(d.path()).exists());
    assert!(reset(d.path()).unwrap()[0].starts_with("nothing to reset"));
}

#[test]
fn a_run_adopts_the_doctors_settings_and_restores_them_at_its_end() {
    use crate::harness::knobs::Session;
    let d = tempfile::tempdir().unwrap();
    fake::vm(d.path());
    let before = snapshot(d.path());
    let r = examine(d.path(), &CpuSet::parse_list("0").unwrap(), Duration::from_millis(1));
    apply(d.path(), &r).unwrap();
    let thp = || std::fs::read_to_string(d.path().join(k::THP)).unwrap();
    assert_eq!(thp(), "madvise");
    let mut s = Session::start(d.path(), true).unwrap().expect("adopted");
    let e = journal::read(&journal::path(d.path())).unwrap().unwrap();
    assert!(!e.tuned && e.owner == Some(crate::measure::owned::Owner::me()), "now the run's own journal");
    let cfg = |knobs: Vec<KnobSetting>| crate::config::Config {
        name: "c".into(),
        cpus: CpuSet::parse_list("0").unwrap(),
        policy: None,
        env: vec![],
        knobs,
        counters: None,
        cgroup: vec![],
    };
    s.switch(&cfg(vec![ck::parse("thp", "never").unwrap()])).unwrap();
    assert_eq!(thp(), "never");
    // Between configurations: back to the doctor's setting, not the original.
    s.switch(&cfg(vec![])).unwrap();
    assert_eq!(thp(), "madvise");
    s.restore().unwrap();
    assert_eq!(thp(), "madvise", "mid-run restores keep the doctor's settings");
    assert!(journal::path(d.path()).exists());
    s.finish().unwrap();
    assert_eq!(snapshot(d.path()), before, "the run's end restores the originals");
    assert!(!journal::path(d.path()).exists());
    // No doctor's journal and no settings to switch: no session.
    assert!(Session::start(d.path(), false).unwrap().is_none());
}

fn measured(pairs: &[(u32, u32, f64, f64)]) -> crate::measure::interfere::Record {
    use crate::measure::interfere::{MachineId, Pair, Record, LIMIT};
    Record {
        machine: MachineId { host: "vm".into(), cpu_model: "Intel(R) Xeon(R) Processor".into(), cpus: "0-1".into() },
        measured_at: 1.0,
        limit: LIMIT,
        pairing: None,
        pairs: pairs
            .iter()
            .map(|&(cpu, busy, shell, mult)| Pair {
                cpu,
                busy,
                slowdown: [("shell".into(), shell), ("memory".into(), shell + 0.06), ("multiply".into(), mult)].into(),
                pairs: 31,
                interferes: shell > LIMIT,
                other_work: None,
            })
            .collect(),
    }
}

#[test]
fn interference_is_shown_with_its_figures_and_the_records_place() {
    let all = CpuSet::parse_list("0-1").unwrap();
    let rec = measured(&[(0, 1, 0.24, 0.0), (1, 0, 0.31, 0.01)]);
    let f = interference_finding(Some(&rec), &all, Some("/home/u/.local/state/kdelta/interference.json"));
    assert_eq!(f.verdict, Verdict::Note);
    assert_eq!(
        f.value,
        "CPU 1 slows CPU 0 (shell +24 %, memory +30 %, multiply +0 %); CPU 0 slows CPU 1 (shell +31 %, memory +37 %, multiply +1 %)"
    );
    assert!(f.recommend.contains("interference.json") && f.recommend.contains("disturbance"), "{f:?}");
    // Nothing above the limit.
    let quiet = measured(&[(0, 1, 0.02, 0.0), (1, 0, -0.01, 0.0)]);
    let f = interference_finding(Some(&quiet), &all, None);
    assert_eq!(f.verdict, Verdict::Ok);
    assert_eq!(f.value, "no CPU slows another consistently by more than 5 % (largest median +8 %)");
    // Measured while other work kept CPU 0 busy: said, with the share.
    let mut busy = quiet.clone();
    busy.pairs[1].other_work = Some(0.43);
    let f = interference_finding(Some(&busy), &all, None);
    assert!(f.value.ends_with("other tasks used CPU 0 43 % of the time: run again on a quiet machine"), "{f:?}");
    assert_eq!(f.verdict, Verdict::Note);
    // Not measured (one CPU, or more than the doctor measures).
    let f = interference_finding(None, &CpuSet::parse_list("0").unwrap(), None);
    assert!(f.value.starts_with("not measured on 1 CPUs") && f.verdict == Verdict::Note, "{f:?}");
}

#[test]
fn the_report_carries_the_record_in_its_json() {
    let d = tempfile::tempdir().unwrap();
    fake::vm(d.path());
    let all = CpuSet::parse_list("0-1").unwrap();
    let mut r = examine(d.path(), &all, Duration::from_millis(1));
    let v = serde_json::to_value(&r).unwrap();
    assert!(v.get("interference").is_none(), "none measured, none shown");
    r.interference = Some(measured(&[(0, 1, 0.24, 0.0)]));
    let v = serde_json::to_value(&r).unwrap();
    assert_eq!(v["interference"]["pairs"][0]["busy"], 1);
    assert_eq!(v["interference"]["pairs"][0]["interferes"], true);
}
