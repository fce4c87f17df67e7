use super::*;
use std::os::fd::{AsRawFd, OwnedFd};

fn pipe() -> (OwnedFd, OwnedFd) {
    nix::unistd::pipe().unwrap()
}

/// Wait for the child's one byte on `r` (it has set itself up).
fn ready(r: &OwnedFd) {
    let mut b = [0u8; 1];
    assert_eq!(nix::unistd::read(r.as_raw_fd(), &mut b).unwrap(), 1);
}

/// A child that waits for signals until one ends it, returned once it has
/// set itself up (ignoring SIGTERM first when `ignore_term`).
fn waiting_child(ignore_term: bool) -> Child {
    let (r, w) = pipe();
    let wfd = w.as_raw_fd();
    // SAFETY: the child calls only signal, write and pause.
    let c = unsafe {
        fork(|| {
            if ignore_term {
                libc::signal(libc::SIGTERM, libc::SIG_IGN);
            }
            libc::write(wfd, b"x".as_ptr().cast(), 1);
            loop {
                libc::pause();
            }
        })
    }
    .unwrap();
    drop(w);
    ready(&r);
    c
}

/// A child that waits for signals, at once.
fn pausing() -> Child {
    // SAFETY: the child calls only pause.
    unsafe {
        fork(|| loop {
            libc::pause();
        })
    }
    .unwrap()
}

#[test]
fn fork_runs_the_closure_and_returns_its_status() {
    let mut c = unsafe { fork(|| 7) }.unwrap();
    let st = c.wait().unwrap();
    assert_eq!(st.code(), Some(7));
    assert_eq!(c.status(), Some(st));
    // Reaped: the rule sends nothing more and reports the same end.
    assert_eq!(c.stop().unwrap(), Stopped { status: st, killed: false });
    assert!(!crate::sys::task::exists(c.pid().as_raw()));
}

#[test]
fn stop_rule_escalates_to_sigkill_and_reaps() {
    let mut c = waiting_child(true).stop_signal(Signal::SIGTERM, Duration::from_millis(200));
    let pid = c.pid().as_raw();
    assert_eq!(c.wait_timeout(Duration::from_millis(20)).unwrap(), None);
    let s = c.stop().unwrap();
    assert!(s.killed, "{s:?}");
    assert_eq!(s.status.signal(), Some(libc::SIGKILL));
    assert_eq!(describe(s.status), "was killed by SIGKILL");
    assert!(!crate::sys::task::exists(pid), "process {pid} left behind");
}

#[test]
fn stop_rule_ends_a_willing_child_with_its_signal_and_drop_applies_it() {
    let mut c = waiting_child(false);
    let s = c.stop().unwrap();
    assert!(!s.killed);
    assert_eq!(s.status.signal(), Some(libc::SIGTERM));
    // Dropping a running child stops and reaps it too; many at once with stop_all.
    let kids: Vec<Child> = (0..3).map(|_| pausing()).collect();
    let pids: Vec<i32> = kids.iter().map(|c| c.pid().as_raw()).collect();
    drop(kids);
    for p in pids {
        assert!(!crate::sys::task::exists(p), "process {p} left behind");
    }
    let mut kids: Vec<Child> = (0..3).map(|_| pausing().stop_signal(Signal::SIGKILL, GRACE)).collect();
    for s in stop_all(&mut kids) {
        assert_eq!(s.unwrap().status.signal(), Some(libc::SIGKILL));
    }
}

#[test]
fn spawned_commands_die_with_parent_and_are_waited_for() {
    let mut c = spawn(std::process::Command::new("sh").args(["-c", "exit 3"])).unwrap();
    assert_eq!(c.wait_timeout(Duration::from_secs(30)).unwrap().and_then(|s| s.code()), Some(3));
    assert_eq!(describe(c.status().unwrap()), "exited with status 3");
}

#[test]
fn the_subreaper_attribute_stays_while_any_holder_lives() {
    let subreaper = || {
        let mut v: libc::c_int = 0;
        // SAFETY: PR_GET_CHILD_SUBREAPER writes an int through the pointer.
        unsafe { libc::prctl(libc::PR_GET_CHILD_SUBREAPER, &mut v as *mut libc::c_int, 0, 0, 0) };
        v != 0
    };
    let a = Subreaper::new().unwrap();
    let b = Subreaper::new().unwrap();
    assert!(subreaper());
    drop(a);
    // Other tests may hold one too; this one's `b` alone keeps it set.
    assert!(subreaper(), "dropping one holder cleared the attribute");
    drop(b);
}
