//! AIM9's `jmp_test`, `signal_test` and `misc_rtns_1`.
//!
//! jmp_test: AIM9 does setjmp, recurses 10 frames and longjmps back. Rust
//! has no sound setjmp/longjmp (jumping over Rust frames skips their drops
//! and is undefined behaviour for the compiler), so the non-local goto here
//! is Rust's own: `resume_unwind` at the bottom of a 10-frame recursion,
//! caught by `catch_unwind` at the top. It does what longjmp does (leave
//! many frames at once, back to a saved point) but walks the unwind tables,
//! so it costs far more than a longjmp: compare it only with itself.
//! `resume_unwind` does not run the panic hook, so nothing is printed.
//!
//! signal_test: a SIGUSR1 handler counting in an atomic (AIM9's counter was
//! a plain int, which gcc 12 keeps in a register: the test hung); each call
//! raises the signal [`SIGNALS`] times and checks the count.
//!
//! misc_rtns_1: one loop of 20 identity and environment calls.

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

// ---------------------------------------------------------------- jmp_test

/// Frames between the saved point and the jump.
pub const FRAMES: u32 = 10;

struct Goto;

#[inline(never)]
fn dive(depth: u32) -> u32 {
    if depth == 0 {
        std::panic::resume_unwind(Box::new(Goto));
    }
    // Not a tail call: the frame stays until the unwind passes through it.
    let r = dive(black_box(depth - 1));
    black_box(r + 1)
}

struct Jmp {
    count: usize,
}

impl Work for Jmp {
    fn call(&mut self) -> Result<()> {
        let r = std::panic::catch_unwind(|| dive(black_box(FRAMES)));
        match r {
            Err(p) if p.is::<Goto>() => {}
            Err(_) => bail!("jmp_test caught a real panic"),
            Ok(_) => bail!("jmp_test recursion returned without the jump"),
        }
        self.count = 1;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn jmp_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Jmp { count: 0 }))
}

// ---------------------------------------------------------------- signal_test

/// Signals raised and caught per call.
pub const SIGNALS: u64 = 100;

static CAUGHT: AtomicU64 = AtomicU64::new(0);

extern "C" fn on_usr1(_sig: libc::c_int) {
    CAUGHT.fetch_add(1, Ordering::Relaxed);
}

struct Signal {
    old: libc::sigaction,
    count: u64,
}

impl Work for Signal {
    fn call(&mut self) -> Result<()> {
        let before = CAUGHT.load(Ordering::Relaxed);
        for _ in 0..SIGNALS {
            // SAFETY: raise on a signal whose handler we installed.
            if unsafe { libc::raise(libc::SIGUSR1) } != 0 {
                bail!("raise(SIGUSR1): {}", std::io::Error::last_os_error());
            }
        }
        let got = CAUGHT.load(Ordering::Relaxed) - before;
        if got < SIGNALS {
            bail!("raised {SIGNALS} signals, the handler caught {got}");
        }
        self.count = SIGNALS.min(got);
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

impl Drop for Signal {
    fn drop(&mut self) {
        // SAFETY: restores the action saved when the test was set up.
        unsafe { libc::sigaction(libc::SIGUSR1, &self.old, std::ptr::null_mut()) };
    }
}

pub fn signal_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    // SAFETY: a zeroed sigaction is a valid "default" value; the handler only
    // touches an atomic (async-signal-safe); the old action is saved and put
    // back on drop.
    unsafe {
        let mut sa: libc::sigaction = std::mem::zeroed();
        sa.sa_sigaction = on_usr1 as extern "C" fn(libc::c_int) as usize;
        libc::sigemptyset(&mut sa.sa_mask);
        sa.sa_flags = libc::SA_RESTART;
        let mut old: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(libc::SIGUSR1, &sa, &mut old) != 0 {
            bail!("sigaction(SIGUSR1): {}", std::io::Error::last_os_error());
        }
        // Make sure it is not blocked in this thread.
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGUSR1);
        libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
        Ok(Box::new(Signal { old, count: 0 }))
    }
}

// ---------------------------------------------------------------- misc_rtns_1

/// Calls in one auxiliary loop.
pub const MISC_CALLS: usize = 20;

struct Misc {
    buf: Vec<u8>,
    calls: usize,
    count: usize,
}

impl Work for Misc {
    fn call(&mut self) -> Result<()> {
        let mut n = 0usize;
        let mut acc: i64 = 0;
        // SAFETY: identity and environment calls with valid out-buffers
        // (zeroed structs, a byte buffer of the stated length).
        unsafe {
            acc += libc::getpid() as i64;
            acc += libc::getppid() as i64;
            acc += libc::getuid() as i64;
            acc += libc::geteuid() as i64;
            acc += libc::getgid() as i64;
            acc += libc::getegid() as i64;
            acc += libc::getpgrp() as i64;
            acc += libc::getsid(0) as i64;
            n += 8;
            if !libc::getcwd(self.buf.as_mut_ptr().cast(), self.buf.len()).is_null() {
                acc += 1;
            }
            n += 1;
            acc += std::env::var_os("PATH").map(|v| v.len()).unwrap_or(0) as i64;
            acc += std::env::var_os("HOME").map(|v| v.len()).unwrap_or(0) as i64;
            n += 2;
            let mut u: libc::utsname = std::mem::zeroed();
            acc += libc::uname(&mut u) as i64;
            let mut t: libc::tms = std::mem::zeroed();
            acc += libc::times(&mut t) as i64;
            acc += libc::time(std::ptr::null_mut()) as i64;
            n += 3;
            let mut pw: libc::passwd = std::mem::zeroed();
            let mut res: *mut libc::passwd = std::ptr::null_mut();
            libc::getpwnam_r(c"root".as_ptr(), &mut pw, self.buf.as_mut_ptr().cast(), self.buf.len(), &mut res);
            acc += res.is_null() as i64;
            libc::getpwuid_r(0, &mut pw, self.buf.as_mut_ptr().cast(), self.buf.len(), &mut res);
            acc += res.is_null() as i64;
            n += 2;
            acc += libc::gethostname(self.buf.as_mut_ptr().cast(), self.buf.len()) as i64;
            let mut rl: libc::rlimit = std::mem::zeroed();
            acc += libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) as i64;
            let mut ru: libc::rusage = std::mem::zeroed();
            acc += libc::getrusage(libc::RUSAGE_SELF, &mut ru) as i64;
            acc += libc::sysconf(libc::_SC_PAGESIZE) as i64;
            n += 4;
        }
        black_box(acc);
        self.calls = n;
        self.count = 1;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn misc_rtns_1(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Misc { buf: vec![0; 16384], calls: 0, count: 0 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misc_loop_makes_twenty_calls() {
        let c = Ctx { dir: std::env::temp_dir(), filesize: 0, sync: false };
        let mut m = Misc { buf: vec![0; 16384], calls: 0, count: 0 };
        m.call().unwrap();
        assert_eq!(m.calls, MISC_CALLS);
        let _ = misc_rtns_1(&c).unwrap();
    }
}
