//! `thread.create`: create a thread that returns at once and join it (the 2004
//! study's `lat_thread null`), under three creation models:
//!
//! - `direct`: `pthread_create` + `pthread_join`, what NPTL gives.
//! - `manager`: LinuxThreads' design. A manager thread owns every creation:
//!   the creating thread writes a request down a pipe and sleeps until the
//!   manager has created the thread and answered; to join, it sleeps again
//!   until the manager, having reaped the exited thread, tells it so. Two
//!   extra wake-ups per thread, which is what made LinuxThreads slow.
//! - `process`: `fork` + `waitpid` of a child that exits at once (LMbench's
//!   lat_proc fork, the reference).

use anyhow::{bail, Context, Result};
use nix::fcntl::OFlag;
use nix::unistd::pipe2;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

crate::model::params::choice! {
    /// How `thread.create` makes its task (its `model` parameter).
    pub(crate) enum CreateModel { Direct = "direct", Manager = "manager", Process = "process" }
}

/// The thread body: return at once, optionally telling its kernel thread id
/// (tests use that to check the thread is gone afterwards).
extern "C" fn null_thread(arg: *mut libc::c_void) -> *mut libc::c_void {
    if !arg.is_null() {
        // SAFETY: a non-null arg is always a pointer to an AtomicI32 that
        // outlives the thread (the creator joins before dropping it).
        let slot = unsafe { &*(arg as *const AtomicI32) };
        // SAFETY: gettid has no preconditions.
        slot.store(unsafe { libc::gettid() }, Ordering::SeqCst);
    }
    std::ptr::null_mut()
}

fn spawn_null(tid_slot: Option<&AtomicI32>) -> Result<libc::pthread_t> {
    let arg = tid_slot.map(|s| s as *const AtomicI32 as *mut libc::c_void).unwrap_or(std::ptr::null_mut());
    // SAFETY: all-zero bytes is a valid placeholder for pthread_t (an integer
    // on Linux); pthread_create fills it in.
    let mut t: libc::pthread_t = unsafe { std::mem::zeroed() };
    // SAFETY: t is writable, default attributes (null), the start routine has
    // the right signature and arg is null or valid until the join.
    let rc = unsafe { libc::pthread_create(&mut t, std::ptr::null(), null_thread, arg) };
    if rc != 0 {
        bail!("pthread_create failed: {}", std::io::Error::from_raw_os_error(rc));
    }
    Ok(t)
}

fn join(t: libc::pthread_t) -> Result<()> {
    // SAFETY: t came from a successful pthread_create and is joined once.
    let rc = unsafe { libc::pthread_join(t, std::ptr::null_mut()) };
    if rc != 0 {
        bail!("pthread_join failed: {}", std::io::Error::from_raw_os_error(rc));
    }
    Ok(())
}

fn put(fd: RawFd, b: u8) -> Result<()> {
    nix::unistd::write(unsafe_borrow(fd), &[b]).context("manager pipe write")?;
    Ok(())
}

fn get(fd: RawFd) -> Result<u8> {
    let mut b = [0u8; 1];
    loop {
        match nix::unistd::read(fd, &mut b) {
            Ok(1) => return Ok(b[0]),
            Ok(_) => bail!("manager pipe closed"),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(e) => return Err(e).context("manager pipe read"),
        }
    }
}

fn unsafe_borrow(fd: RawFd) -> std::os::fd::BorrowedFd<'static> {
    // SAFETY: only used for fds owned by a live Manager or test for the
    // duration of one write call.
    unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) }
}

const REQ_CREATE: u8 = b'c';
const REQ_QUIT: u8 = b'q';
const ANS_CREATED: u8 = b'C';
const ANS_EXITED: u8 = b'X';
const ANS_FAILED: u8 = b'F';

/// A LinuxThreads-style manager thread, reached over a request pipe and
/// answering over a reply pipe.
pub(crate) struct Manager {
    req_w: OwnedFd,
    ans_r: OwnedFd,
    handle: Option<std::thread::JoinHandle<()>>,
    /// Where created threads write their id (tests); null in the benchmark.
    #[cfg(test)]
    slot: std::sync::Arc<AtomicI32>,
    /// The manager's own thread id.
    #[cfg(test)]
    mgr_tid: std::sync::Arc<AtomicI32>,
}

impl Manager {
    pub(crate) fn start(record_tids: bool) -> Result<Manager> {
        let (req_r, req_w) = pipe2(OFlag::O_CLOEXEC)?;
        let (ans_r, ans_w) = pipe2(OFlag::O_CLOEXEC)?;
        let slot = std::sync::Arc::new(AtomicI32::new(0));
        let s2 = slot.clone();
        let mgr_tid = std::sync::Arc::new(AtomicI32::new(0));
        let m2 = mgr_tid.clone();
        let handle = std::thread::Builder::new()
            .name("thread-manager".into())
            .stack_size(64 << 10)
            .spawn(move || {
                // SAFETY: gettid has no preconditions.
                m2.store(unsafe { libc::gettid() }, Ordering::SeqCst);
                let (rr, aw) = (req_r.as_raw_fd(), ans_w.as_raw_fd());
                let slot = if record_tids { Some(&*s2) } else { None };
                while let Ok(REQ_CREATE) = get(rr) {
                    match spawn_null(slot) {
                        Ok(t) => {
                            if put(aw, ANS_CREATED).is_err() {
                                let _ = join(t);
                                return;
                            }
                            // The manager learns of the exit (it reaps the
                            // thread) and only then wakes the joiner.
                            let ok = join(t).is_ok();
                            if put(aw, if ok { ANS_EXITED } else { ANS_FAILED }).is_err() {
                                return;
                            }
                        }
                        Err(_) => {
                            if put(aw, ANS_FAILED).is_err() {
                                return;
                            }
                        }
                    }
                }
                drop((req_r, ans_w));
            })
            .context("starting the manager thread")?;
        Ok(Manager {
            req_w,
            ans_r,
            handle: Some(handle),
            #[cfg(test)]
            slot,
            #[cfg(test)]
            mgr_tid,
        })
    }

    /// Create one thread through the manager and join it through the manager.
    pub(crate) fn create_join(&self) -> Result<()> {
        put(self.req_w.as_raw_fd(), REQ_CREATE)?;
        match get(self.ans_r.as_raw_fd())? {
            ANS_CREATED => {}
            _ => bail!("the manager could not create a thread"),
        }
        match get(self.ans_r.as_raw_fd())? {
            ANS_EXITED => Ok(()),
            _ => bail!("the manager could not join a thread"),
        }
    }

    /// The manager thread's kernel id.
    #[cfg(test)]
    pub(crate) fn manager_tid(&self) -> i32 {
        self.mgr_tid.load(Ordering::SeqCst)
    }

    #[cfg(test)]
    pub(crate) fn last_tid(&self) -> i32 {
        self.slot.load(Ordering::SeqCst)
    }
}

impl Drop for Manager {
    fn drop(&mut self) {
        let _ = put(self.req_w.as_raw_fd(), REQ_QUIT);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// fork a child that exits at once, and reap it; its pid.
pub(crate) fn fork_wait() -> Result<i32> {
    // SAFETY: the child calls only _exit, which is async-signal-safe.
    match unsafe { nix::unistd::fork() }.context("fork")? {
        nix::unistd::ForkResult::Child => unsafe { libc::_exit(0) },
        nix::unistd::ForkResult::Parent { child } => {
            nix::sys::wait::waitpid(child, None).context("waitpid")?;
            Ok(child.as_raw())
        }
    }
}

/// `n` creations and joins under `model`; the time they took.
pub(crate) fn create_loop(model: CreateModel, n: u64, manager: Option<&Manager>) -> Result<Duration> {
    let t = Instant::now();
    match model {
        CreateModel::Direct => {
            for _ in 0..n {
                join(spawn_null(None)?)?;
            }
        }
        CreateModel::Manager => {
            let m = manager.context("manager model without a manager")?;
            for _ in 0..n {
                m.create_join()?;
            }
        }
        CreateModel::Process => {
            for _ in 0..n {
                fork_wait()?;
            }
        }
    }
    Ok(t.elapsed())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task_exists(tid: i32) -> bool {
        crate::sys::task::is_own_thread(tid)
    }

    /// Whether thread `tid` leaves /proc/self/task within a second: a join
    /// returns when the kernel clears the thread's id word, a moment before
    /// the thread is released.
    fn gone_soon(tid: i32) -> bool {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(1);
        while task_exists(tid) {
            if std::time::Instant::now() > until {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_micros(200));
        }
        true
    }

    // Other tests run threads in this process at the same time, so instead
    // of comparing counts we check that every thread we made is gone from
    // /proc/self/task right after it is joined: checked later, its id may
    // already belong to another test's new thread (ids are reused once the
    // kernel's pid space wraps).
    #[test]
    fn direct_leaves_no_thread() {
        let slot = AtomicI32::new(0);
        for _ in 0..200 {
            join(spawn_null(Some(&slot)).unwrap()).unwrap();
            let t = slot.load(Ordering::SeqCst);
            assert!(t > 0 && gone_soon(t), "thread {t} left behind");
        }
    }

    #[test]
    fn manager_leaves_no_thread() {
        let m = Manager::start(true).unwrap();
        for _ in 0..200 {
            m.create_join().unwrap();
            let t = m.last_tid();
            assert!(t > 0 && gone_soon(t), "thread {t} left behind");
        }
        let mtid = m.manager_tid();
        assert!(mtid > 0 && task_exists(mtid));
        drop(m);
        assert!(gone_soon(mtid), "manager thread {mtid} left behind");
        assert!(create_loop(CreateModel::Manager, 10, Some(&Manager::start(false).unwrap())).is_ok());
    }

    #[test]
    fn process_leaves_no_child() {
        for _ in 0..100 {
            let pid = fork_wait().unwrap();
            assert!(!crate::sys::task::exists(pid), "child {pid} not reaped");
        }
    }

    #[test]
    fn loops_time_something() {
        assert!(create_loop(CreateModel::Direct, 10, None).unwrap() > Duration::ZERO);
        assert!(create_loop(CreateModel::Process, 3, None).unwrap() > Duration::ZERO);
        assert!(create_loop(CreateModel::Manager, 3, None).is_err());
    }
}
