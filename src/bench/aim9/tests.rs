//! Tests of the aim9 family: the table, the factors against the counted
//! work, a short run of every test, failures and clean-up.

use super::runner::{one_period, Ctx};
use super::*;
use crate::measure::sampler::{SampleSet, Sampler, SamplerSettings};
use crate::model::params::{expand, Params};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// Table 2 of the study, in its order, plus new_raph.
const TABLE2: [&str; 60] = [
    "add_double",
    "add_float",
    "add_long",
    "add_int",
    "add_short",
    "creat-clo",
    "page_test",
    "brk_test",
    "jmp_test",
    "signal_test",
    "exec_test",
    "fork_test",
    "link_test",
    "disk_rr",
    "disk_rw",
    "disk_rd",
    "disk_wrt",
    "disk_cp",
    "sync_disk_rw",
    "sync_disk_wrt",
    "sync_disk_cp",
    "disk_src",
    "div_double",
    "div_float",
    "div_long",
    "div_int",
    "div_short",
    "fun_cal",
    "fun_cal1",
    "fun_cal2",
    "fun_cal15",
    "sieve",
    "mul_double",
    "mul_float",
    "mul_long",
    "mul_int",
    "mul_short",
    "num_rtns_1",
    "trig_rtns",
    "matrix_rtns",
    "array_rtns",
    "string_rtns",
    "mem_rtns_1",
    "mem_rtns_2",
    "sort_rtns_1",
    "misc_rtns_1",
    "dir_rtns_1",
    "shell_rtns_1",
    "shell_rtns_2",
    "shell_rtns_3",
    "series_1",
    "shared_memory",
    "tcp_test",
    "udp_test",
    "fifo_test",
    "stream_pipe",
    "dgram_pipe",
    "pipe_cpy",
    "ram_copy",
    "new_raph",
];

fn settings(dir: &Path, samples: usize) -> SamplerSettings {
    SamplerSettings { llc_bytes: Some(32 << 20), ..SamplerSettings::direct(samples, dir) }
}

/// Default parameters of a test with a 20 ms period and an 8 KB file.
fn tiny(b: &dyn Benchmark, extra: &[(&str, &str)]) -> Params {
    let info = b.info();
    let mut o = BTreeMap::new();
    o.insert("period".to_string(), "20ms".to_string());
    if info.params.iter().any(|p| p.name == "filesize") {
        o.insert("filesize".to_string(), "8K".to_string());
    }
    for (k, v) in extra {
        o.insert(k.to_string(), v.to_string());
    }
    let mut pts = expand(&info.params, &o, true, info.name).unwrap();
    assert_eq!(pts.len(), 1);
    pts.remove(0)
}

fn run(b: &dyn Benchmark, p: &Params, tmp: &Path, samples: usize) -> anyhow::Result<SampleSet> {
    b.check(p)?;
    let mut s = Sampler::new(settings(tmp, samples));
    b.run(p, &mut s)?;
    Ok(s.finish())
}

/// Tests that install the SIGUSR1 handler (signal_test) run one at a time:
/// one test restoring the default action while another raises would kill us.
static SIGNALS: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SIGNALS.lock().unwrap_or_else(|e| e.into_inner())
}

fn empty(dir: &Path) -> bool {
    // The sampler's list of the directories it made (for the harness) may stay.
    std::fs::read_dir(dir).unwrap().flatten().all(|e| e.file_name() == crate::measure::owned::LIST)
}

#[test]
fn table_has_every_test_of_table_2_once() {
    assert_eq!(TESTS.len(), 60);
    for (d, want) in TESTS.iter().zip(TABLE2) {
        assert_eq!(d.name, format!("aim9.{want}"));
        assert!(!d.unit.is_empty() && !d.work.is_empty());
    }
    let bs = benchmarks();
    assert_eq!(bs.len(), 60);
    for b in &bs {
        let i = b.info();
        assert_eq!(i.family, "aim9");
        assert_eq!(i.better, crate::bench::Better::Higher);
    }
}

#[test]
fn factors_match_the_counted_work_of_one_call() {
    let _g = serial();
    let tmp = tempfile::tempdir().unwrap();
    for d in TESTS {
        let dir = tmp.path().join(d.name);
        std::fs::create_dir(&dir).unwrap();
        let ctx = Ctx { dir: dir.clone(), filesize: if d.disk { 8192 } else { 0 }, sync: false };
        let mut w = (d.make)(&ctx).unwrap_or_else(|e| panic!("{}: {e:#}", d.name));
        let done = w.call().unwrap_or_else(|e| panic!("{}: {e:#}", d.name));
        let want = d.factor.per_call(&ctx);
        assert!(want > 0.0, "{}", d.name);
        assert_eq!(done, want, "{}: counted work differs from the factor table", d.name);
    }
    // AIM9's factors (register_test in its sources) behind the table.
    assert_eq!(arith::kops(arith::iters::ADD_DOUBLE), 18_000.0);
    assert_eq!(arith::kops(arith::iters::MUL_SHORT), 300.0);
    assert_eq!(memory::COPY_BYTES, 25_020);
    assert_eq!(memory::PAGE_ROUNDS * memory::BRK_PER_ROUND, 1700);
    assert_eq!(memory::BRK_ROUNDS * memory::BRK_PER_ROUND, 17_000);
    assert_eq!(meta::CREATS, 1000);
    assert_eq!(meta::LINKS, 63);
    assert_eq!(meta::SEARCHES, 75);
    assert_eq!(meta::DIR_ENTRIES, 10_000);
    assert_eq!(funcall::CALLS, 512_000);
    assert_eq!((misc::JUMPS, misc::SIGNALS, proc::FORKS, proc::EXECS), (1000, 1000, 100, 5));
    assert_eq!((memory::SHM_OPS, ipc::TCP_MSGS, ipc::MSGS), (100, 89, 99));
    let ctx = Ctx { dir: tmp.path().into(), filesize: 5 << 20, sync: false };
    assert_eq!(Factor::FileKb.per_call(&ctx), 5120.0);
    assert_eq!(Factor::HalfFileKb.per_call(&ctx), 2560.0);
}

#[test]
fn every_test_yields_a_positive_figure_and_cleans_up() {
    let _g = serial();
    for b in benchmarks() {
        let name = b.info().name;
        let tmp = tempfile::tempdir().unwrap();
        let p = tiny(&*b, &[]);
        let out = run(&*b, &p, tmp.path(), 1).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(out.samples.len(), 1, "{name}");
        assert!(out.samples[0].is_finite() && out.samples[0] > 0.0, "{name}: {:?}", out.samples);
        assert!(out.extras.contains_key("overshoot_ms") && out.extras.contains_key("factor"), "{name}");
        assert!(empty(tmp.path()), "{name} left files in its directory");
    }
}

#[test]
fn disk_tests_use_the_given_dir_with_sync_and_leave_it_empty() {
    let user = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = user.path().to_str().unwrap();
    let mut n = 0;
    for b in benchmarks().into_iter().filter(|b| b.info().params.iter().any(|p| p.name == "dir")) {
        let data = b.info().params.iter().any(|p| p.name == "sync");
        let p = if data { tiny(&*b, &[("dir", dir), ("sync", "true")]) } else { tiny(&*b, &[("dir", dir)]) };
        let out = run(&*b, &p, tmp.path(), 1).unwrap_or_else(|e| panic!("{}: {e:#}", b.info().name));
        assert!(out.samples[0] > 0.0);
        assert!(out.notes.iter().any(|m| m.contains(dir)), "{:?}", out.notes);
        n += 1;
        assert!(empty(user.path()), "{} left files in the user's dir", b.info().name);
    }
    assert_eq!(n, 11);
    // Without sync, a data test says it measures the page cache.
    let b = crate::bench::find("aim9.disk_wrt").unwrap();
    let out = run(&*b, &tiny(&*b, &[("dir", dir)]), tmp.path(), 1).unwrap();
    assert!(out.notes.iter().any(|m| m.contains("page cache")), "{:?}", out.notes);
}

#[test]
fn a_missing_dir_is_refused_and_fails_with_the_reason() {
    let tmp = tempfile::tempdir().unwrap();
    let b = crate::bench::find("aim9.disk_rd").unwrap();
    let p = tiny(&*b, &[("dir", "/nonexistent/kdelta-aim9")]);
    let e = b.check(&p).unwrap_err();
    assert!(crate::error::is_bad_input(&e) && e.to_string().contains("/nonexistent/kdelta-aim9"), "{e}");
    let mut s = Sampler::new(settings(tmp.path(), 1));
    let e = b.run(&p, &mut s).unwrap_err();
    assert!(format!("{e:#}").contains("/nonexistent/kdelta-aim9"), "{e:#}");
    // A file where a directory is expected fails too, and others still run.
    let f = tmp.path().join("plainfile");
    std::fs::write(&f, b"x").unwrap();
    let p = tiny(&*b, &[("dir", f.to_str().unwrap())]);
    let mut s = Sampler::new(settings(tmp.path(), 1));
    assert!(b.run(&p, &mut s).is_err());
    let ok = crate::bench::find("aim9.add_int").unwrap();
    let out = run(&*ok, &tiny(&*ok, &[]), tmp.path(), 1).unwrap();
    assert!(out.samples[0] > 0.0);
    // Bad sizes and periods are the user's mistake.
    let p = tiny(&*b, &[("filesize", "1K")]);
    assert!(crate::error::is_bad_input(&b.check(&p).unwrap_err()));
    let p = tiny(&*b, &[("period", "0s")]);
    assert!(crate::error::is_bad_input(&b.check(&p).unwrap_err()));
}

#[test]
fn one_period_checks_the_deadline_after_every_call() {
    struct Slow(u32);
    impl runner::Work for Slow {
        fn call(&mut self) -> anyhow::Result<f64> {
            std::thread::sleep(Duration::from_millis(3));
            self.0 += 1;
            Ok(1.0)
        }
    }
    let mut w = Slow(0);
    let (calls, el) = one_period(&mut w, Duration::from_millis(10)).unwrap();
    assert_eq!(calls as u32, w.0);
    // Each call sleeps at least 3 ms: at most 4 calls fit before the check stops it.
    assert!((1..=4).contains(&calls), "{calls}");
    assert!(el >= Duration::from_millis(10));
}

#[test]
fn signal_handler_is_restored() {
    let _g = serial();
    let ctx = Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false };
    // SAFETY: reading the current action only.
    let before = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut sa);
        sa.sa_sigaction
    };
    let mut w = misc::signal_test(&ctx).unwrap();
    w.call().unwrap();
    drop(w);
    // SAFETY: as above, for SIGUSR2 which the test used.
    let after = unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        libc::sigaction(libc::SIGUSR2, std::ptr::null(), &mut sa);
        sa.sa_sigaction
    };
    assert_eq!(before, libc::SIG_DFL);
    assert_eq!(after, libc::SIG_DFL);
}

#[test]
fn jmp_test_longjmps_as_often_as_asked() {
    // Built with a C compiler (as CI and this project's machines are): the
    // C routine's count of setjmp returns from longjmp.
    misc::jmp_supported().unwrap();
    for (n, frames) in [(1, 0), (7, 3), (1000, 10)] {
        assert_eq!(misc::jumps(n, frames).unwrap(), n);
    }
    let mut w = misc::jmp_test(&Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false }).unwrap();
    assert_eq!(w.call().unwrap(), misc::JUMPS as f64);
}

#[test]
fn ram_copy_places_its_buffers_as_aim9s_build() {
    // AIM9's destination 32 bytes past a 64-byte line, its source 0x2020
    // bytes above on a line start: so (destination - source) mod 4 KiB is
    // 4096 - 32, no 4K aliasing of a load on the store before it.
    assert_eq!(memory::RAM_DST_OFFSET % 64, 32);
    assert_eq!(memory::RAM_SRC_OFFSET % 64, 0);
    assert_eq!(memory::RAM_SRC_OFFSET - memory::RAM_DST_OFFSET, 0x2020);
}
