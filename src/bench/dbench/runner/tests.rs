//! Runner tests: phases, errors, aborts and both client models over a fake backend.

use super::*;
use crate::bench::dbench::loadfile::parse;

/// A backend that fails on demand and counts bytes.
struct Fake {
    fail_line: Option<usize>,
}
impl Backend for Fake {
    fn reset(&mut self) {}
    fn exec(&mut self, op: &Op) -> Result<Outcome> {
        std::thread::sleep(Duration::from_micros(200));
        if Some(op.line) == self.fail_line {
            bail!("line {}: disk on fire", op.line);
        }
        Ok(Outcome { ok: op.line != 2, bytes: 10, why: None })
    }
}

fn lf() -> Loadfile {
    parse("t", "QUERY_FS_INFORMATION 1 NT_STATUS_OK\nQUERY_FS_INFORMATION 1 NT_STATUS_OK\nQUERY_FS_INFORMATION 1 *\n")
        .unwrap()
}

fn spec(threads: bool) -> Spec {
    Spec {
        clients: 2,
        threads,
        warmup: Duration::from_millis(20),
        time: Duration::from_millis(100),
        strict: false,
        liveness: Liveness::PerOp,
    }
}

#[test]
fn threads_count_and_mismatch() {
    let make = |_n: usize| -> Result<Box<dyn Backend>> { Ok(Box::new(Fake { fail_line: None })) };
    let t = run(&lf(), &spec(true), &make).unwrap();
    let q = t.ops[9];
    assert!(q.count > 0 && q.mismatches > 0, "{q:?}");
    assert_eq!(t.bytes, q.count * 10);
    assert!(t.secs >= 0.1);
    assert!(t.examples[0].contains("line 2: QUERY_FS_INFORMATION expected NT_STATUS_OK"), "{:?}", t.examples);
    // Strict stops at the first mismatch.
    let mut s = spec(true);
    s.strict = true;
    let e = run(&lf(), &s, &make).unwrap_err().to_string();
    assert!(e.contains("strict=true"), "{e}");
}

#[test]
fn figure_window_is_dbench_whole_seconds() {
    assert_eq!(figure_window(Duration::from_secs(10)), Duration::from_secs(9));
    assert_eq!(figure_window(Duration::from_millis(3500)), Duration::from_secs(3));
    assert_eq!(figure_window(Duration::from_secs(2)), Duration::from_secs(1));
    assert_eq!(figure_window(Duration::from_secs(1)), Duration::from_secs(1));
    assert_eq!(figure_window(Duration::from_millis(100)), Duration::from_millis(100));
}

#[test]
fn tail_counts_ops_but_not_the_figure() {
    let make = |_n: usize| -> Result<Box<dyn Backend>> { Ok(Box::new(Fake { fail_line: None })) };
    let mut s = spec(true);
    s.time = Duration::from_millis(1100);
    let t = run(&lf(), &s, &make).unwrap();
    let q = t.ops[9];
    assert!(t.secs >= 1.0 && t.secs < t.timed_secs && t.timed_secs >= 1.1, "{} {}", t.secs, t.timed_secs);
    assert!(t.tail_bytes > 0 && t.bytes > 0);
    assert_eq!(t.bytes + t.tail_bytes, q.count * 10);
}

#[test]
fn errors_end_the_run() {
    let make = |n: usize| -> Result<Box<dyn Backend>> {
        Ok(Box::new(Fake { fail_line: if n == 2 { Some(3) } else { None } }))
    };
    let e = run(&lf(), &spec(true), &make).unwrap_err().to_string();
    assert!(e.contains("client 2: line 3: disk on fire"), "{e}");
    let bad = |_n: usize| -> Result<Box<dyn Backend>> { bail!("no server") };
    let e = run(&lf(), &spec(true), &bad).unwrap_err().to_string();
    assert!(e.contains("no server"), "{e}");
}

#[test]
fn clients_stop_when_the_watched_parent_is_gone() {
    // A process that has exited and been reaped: its pid names nobody.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    child.wait().unwrap();
    let gone = nix::unistd::Pid::from_raw(child.id() as i32);
    let make = |_n: usize| -> Result<Box<dyn Backend>> { Ok(Box::new(Fake { fail_line: None })) };
    for threads in [true, false] {
        let e = run_watching(&lf(), &spec(threads), Some(gone), &make).unwrap_err().to_string();
        assert!(e.contains(&format!("the parent process {gone} is gone")), "{e}");
    }
    // Without the per-operation check the same run completes.
    let mut s = spec(true);
    s.liveness = Liveness::Signal;
    assert!(run(&lf(), &s, &make).unwrap().ops[9].count > 0);
}

#[test]
fn processes_report_back() {
    let make = |_n: usize| -> Result<Box<dyn Backend>> { Ok(Box::new(Fake { fail_line: None })) };
    let t = run(&lf(), &spec(false), &make).unwrap();
    assert!(t.ops[9].count > 0);
    let make = |n: usize| -> Result<Box<dyn Backend>> {
        Ok(Box::new(Fake { fail_line: if n == 1 { Some(1) } else { None } }))
    };
    let e = run(&lf(), &spec(false), &make).unwrap_err().to_string();
    assert!(e.contains("client 1: line 1: disk on fire"), "{e}");
}
