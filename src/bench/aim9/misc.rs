//! AIM9's `jmp_test`, `signal_test` (creat-clo.c) and `misc_rtns_1`
//! (num_fcns.c).
//!
//! jmp_test: AIM9 does, 1000 times per call, a setjmp, a 10-frame recursion
//! and a longjmp back. Rust has no sound setjmp/longjmp (jumping over Rust
//! frames skips their drops), so the loop is a small C routine, `jmp.c`,
//! compiled by `build.rs` with the C compiler (as `gcc -O`, AIM9's build) and
//! linked in: the C library's own setjmp and longjmp, jumping only over C
//! frames. Without a C compiler at build time the test is unavailable, with
//! the build's reason.
//!
//! signal_test: as AIM9, each call installs a SIGUSR2 handler, then sends
//! SIGUSR2 to its own pid with `kill` until the handler has counted 1000;
//! the handler re-installs itself each time (AIM9's System V `signal`
//! idiom), so each signal costs kill + rt_sigaction + rt_sigreturn. The
//! count is an atomic (AIM9's was a plain int, which gcc 12 keeps in a
//! register: the loop never ends; our AIM9 build for the comparison made it
//! volatile).
//!
//! misc_rtns_1: 10 rounds of AIM9's list of identity and environment calls.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

// ---------------------------------------------------------------- jmp_test

/// Frames between the saved point and the jump.
pub(crate) const FRAMES: i32 = 10;
/// Non-local gotos per call.
pub(crate) const JUMPS: usize = 1000;

#[cfg(kdelta_aim9_jmp)]
extern "C" {
    /// `jmp.c`: `n` x (setjmp, `frames`-deep recursion, longjmp back);
    /// returns the longjmps taken, -1 on a stray setjmp value.
    fn kdelta_aim9_jmp(n: std::os::raw::c_int, frames: std::os::raw::c_int) -> std::os::raw::c_int;
}

/// Why jmp_test cannot run: the build found no C compiler for `jmp.c`.
pub(crate) fn jmp_supported() -> Result<(), crate::bench::Unsupported> {
    if cfg!(kdelta_aim9_jmp) {
        Ok(())
    } else {
        Err(crate::bench::Unsupported::family(JmpNotBuilt(env!("KDELTA_AIM9_JMP_ERROR"))))
    }
}

/// kdelta was built without `jmp.c` (build.rs says why).
#[derive(Debug, thiserror::Error)]
#[error("aim9.jmp_test needs its C routine (src/bench/aim9/jmp.c), not built: {0}")]
pub(crate) struct JmpNotBuilt(&'static str);

/// `n` gotos out of `frames` frames through the C routine; the gotos taken.
pub(crate) fn jumps(n: usize, frames: i32) -> Result<usize> {
    jmp_supported()?;
    let n = i32::try_from(n)?;
    #[cfg(kdelta_aim9_jmp)]
    {
        // SAFETY: the C routine's setjmp and longjmp stay inside its own
        // frames (no Rust frame is jumped over); it takes and returns ints.
        let got = unsafe { kdelta_aim9_jmp(n, frames) };
        if got < 0 {
            bail!("jmp_test: setjmp returned a value no longjmp gave");
        }
        Ok(got as usize)
    }
    #[cfg(not(kdelta_aim9_jmp))]
    {
        let _ = (n, frames);
        unreachable!("jmp_supported failed above")
    }
}

struct Jmp;

impl Work for Jmp {
    fn call(&mut self) -> Result<f64> {
        let got = jumps(JUMPS, black_box(FRAMES))?;
        if got != JUMPS {
            bail!("jmp_test took {got} of {JUMPS} non-local gotos");
        }
        Ok(got as f64)
    }
}

pub(crate) fn jmp_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Jmp))
}

// ---------------------------------------------------------------- signal_test

/// Signals sent and caught per call.
pub(crate) const SIGNALS: u64 = 1000;
/// The signal AIM9 uses.
const SIG: libc::c_int = libc::SIGUSR2;

static CAUGHT: AtomicU64 = AtomicU64::new(0);

/// Install `on_signal` for SIG; the previous action into `old` if given.
fn install(old: *mut libc::sigaction) -> libc::c_int {
    // SAFETY: a zeroed sigaction with our handler and an empty mask; the
    // handler only touches an atomic and calls sigaction, both
    // async-signal-safe.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        libc::sigaction(SIG, &sa, old)
    }
}

extern "C" fn on_signal(_sig: libc::c_int) {
    install(std::ptr::null_mut());
    CAUGHT.fetch_add(1, Ordering::Release);
}

struct Signal {
    old: libc::sigaction,
}

impl Work for Signal {
    fn call(&mut self) -> Result<f64> {
        let before = CAUGHT.load(Ordering::Relaxed);
        if install(std::ptr::null_mut()) != 0 {
            bail!("sigaction(SIGUSR2): {}", std::io::Error::last_os_error());
        }
        // SAFETY: getpid has no preconditions.
        let me = unsafe { libc::getpid() };
        // AIM9's loop: kill until the handler has counted SIGNALS. In a
        // process of one thread (the worker) the signal is taken before kill
        // returns, so each kill is followed by its handler and nothing else;
        // where other threads exist (the test harness) any of them may take
        // it a little later, so wait for each one before the next kill: a
        // signal still pending when the old action is put back would run the
        // default action (terminate) or reinstall the handler.
        for n in 1..=SIGNALS {
            // SAFETY: kill of our own pid with a signal whose handler we installed.
            if unsafe { libc::kill(me, SIG) } != 0 {
                bail!("kill(SIGUSR2): {}", std::io::Error::last_os_error());
            }
            while CAUGHT.load(Ordering::Acquire) - before < n {
                std::hint::spin_loop();
            }
        }
        Ok(SIGNALS as f64)
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        // SAFETY: restores the action saved when the test was set up.
        unsafe { libc::sigaction(SIG, &self.old, std::ptr::null_mut()) };
    }
}

pub(crate) fn signal_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    // SAFETY: a zeroed sigaction is a valid out-buffer; the old action is put
    // back on drop; the signal mask changed is this thread's.
    unsafe {
        let mut old: libc::sigaction = std::mem::zeroed();
        if install(&mut old) != 0 {
            bail!("sigaction(SIGUSR2): {}", std::io::Error::last_os_error());
        }
        // kill targets the process: make sure this thread can take it.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, SIG);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        Ok(Box::new(Signal { old }))
    }
}

// ---------------------------------------------------------------- misc_rtns_1

unsafe extern "C" {
    /// The C library's clock(3) (the libc crate does not declare it).
    fn clock() -> libc::clock_t;
}

/// Rounds of the list per call (AIM9's argument).
pub(crate) const MISC_ROUNDS: usize = 10;
/// Calls in one round of AIM9's list (cfgetispeed and cfgetospeed, clock,
/// getcwd, 4 ids, getenv, getgroups, getpid, getpgrp, getppid, getpwnam,
/// getpwuid, getgrgid, times, isatty, ttyname, uname); AIM9's ctermid, which
/// only returns "/dev/tty", is left out.
#[cfg(test)]
pub(crate) const MISC_CALLS: usize = 21;

struct Misc {
    buf: Vec<u8>,
    calls: usize,
}

impl Work for Misc {
    fn call(&mut self) -> Result<f64> {
        let mut n = 0usize;
        let mut acc: i64 = 0;
        let (b, len) = (self.buf.as_mut_ptr().cast::<libc::c_char>(), self.buf.len());
        for _ in 0..MISC_ROUNDS {
            n = 0;
            // SAFETY: identity and environment calls with valid out-buffers
            // (zeroed structs, a byte buffer of the stated length).
            unsafe {
                let t: libc::termios = std::mem::zeroed();
                acc += libc::cfgetispeed(&t) as i64 + libc::cfgetospeed(&t) as i64;
                acc += clock() as i64;
                acc += libc::getcwd(b, len).is_null() as i64;
                let (uid, gid) = (libc::getuid(), libc::getgid());
                acc += uid as i64 + libc::geteuid() as i64 + gid as i64 + libc::getegid() as i64;
                acc += libc::getenv(c"PATH".as_ptr()).is_null() as i64;
                let mut groups = [0 as libc::gid_t; 64];
                acc += libc::getgroups(64, groups.as_mut_ptr()) as i64;
                acc += libc::getpid() as i64 + libc::getpgrp() as i64 + libc::getppid() as i64;
                n += 14;
                let mut pw: libc::passwd = std::mem::zeroed();
                let mut res: *mut libc::passwd = std::ptr::null_mut();
                libc::getpwnam_r(c"root".as_ptr(), &mut pw, b, len, &mut res);
                acc += res.is_null() as i64;
                libc::getpwuid_r(uid, &mut pw, b, len, &mut res);
                acc += res.is_null() as i64;
                let mut gr: libc::group = std::mem::zeroed();
                let mut gres: *mut libc::group = std::ptr::null_mut();
                libc::getgrgid_r(gid, &mut gr, b, len, &mut gres);
                acc += gres.is_null() as i64;
                n += 3;
                let mut t: libc::tms = std::mem::zeroed();
                acc += libc::times(&mut t) as i64;
                acc += libc::isatty(0) as i64;
                acc += libc::ttyname_r(0, b, len) as i64;
                let mut u: libc::utsname = std::mem::zeroed();
                acc += libc::uname(&mut u) as i64;
                n += 4;
            }
        }
        black_box(acc);
        self.calls = n;
        Ok(MISC_ROUNDS as f64)
    }
}

pub(crate) fn misc_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Misc { buf: vec![0; 16384], calls: 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misc_round_makes_the_listed_calls() {
        let c = Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false };
        let mut m = Misc { buf: vec![0; 16384], calls: 0 };
        m.call().unwrap();
        assert_eq!(m.calls, MISC_CALLS);
        let _ = misc_rtns_1(&c).unwrap();
    }
}
