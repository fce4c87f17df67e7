//! AIM9's memory tests: `page_test`, `brk_test`, `ram_copy`, `shared_memory`.
//!
//! page_test / brk_test move the program break with the raw `brk` system
//! call: one call grows it [`PAGES`] times by 4 KB (page_test writes a byte
//! to each new page, so each grow step also faults a fresh zeroed page in),
//! then shrinks it back 4 KB at a time to where it started: 64 brk calls.
//! The C allocator (glibc malloc, which Rust's allocator uses) also moves the
//! break, and would be corrupted if it allocated while ours is moved, so the
//! whole timed period runs in a forked child that calls nothing but `brk`,
//! `clock_gettime`, `write` and `_exit`; the break is always put back where
//! it was, and the child's address space vanishes with it anyway.
//!
//! ram_copy counts bytes: memcpy of 1 B .. 8 KB (powers of two) at source
//! and destination misalignments 0..7.
//!
//! shared_memory: a System V shared memory segment and semaphore, created
//! private; the segment is marked for removal as soon as it is attached (so
//! the kernel removes it even if the worker is killed), the semaphore is
//! removed when the test is dropped, on success or error. A worker killed
//! by the harness's timeout can leave the semaphore set behind (`ipcs -s`).

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::time::Duration;

// ---------------------------------------------------------------- brk

/// Grow steps (and shrink steps) per call.
pub const PAGES: usize = 32;
/// brk calls per call.
pub const BRK_CALLS: usize = 2 * PAGES;
const STEP: usize = 4096;

fn now_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes into a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn brk(addr: usize) -> usize {
    // SAFETY: the raw brk system call; with 0 it only reports the break.
    unsafe { libc::syscall(libc::SYS_brk, addr) as usize }
}

/// The timed loop, run in the forked child: [calls, elapsed ns, error code].
fn brk_loop(touch: bool, period_ns: u64) -> [u64; 3] {
    let start = now_ns();
    let base = brk(0);
    let mut calls = 0u64;
    loop {
        for i in 1..=PAGES {
            let want = base + i * STEP;
            if brk(want) != want {
                brk(base);
                return [calls, now_ns() - start, 1];
            }
            if touch {
                // SAFETY: [base, want) lies below the break we just set, so
                // the page holding want - STEP is mapped and writable.
                unsafe { std::ptr::write_volatile((want - STEP) as *mut u8, 1) };
            }
        }
        for i in (0..PAGES).rev() {
            let want = base + i * STEP;
            if brk(want) != want {
                return [calls, now_ns() - start, 2];
            }
        }
        calls += 1;
        let t = now_ns() - start;
        if t >= period_ns {
            return [calls, t, 0];
        }
    }
}

struct Brk {
    touch: bool,
    count: usize,
}

impl Brk {
    fn period(&mut self, period: Duration) -> Result<(u64, Duration)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 into a valid array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!("pipe: {}", std::io::Error::last_os_error());
        }
        let period_ns = period.as_nanos().min(u64::MAX as u128) as u64;
        let (touch, wfd) = (self.touch, fds[1]);
        // SAFETY: the child calls only brk, clock_gettime and write (no
        // allocation, no locks), so it is safe with threads.
        let forked = unsafe {
            crate::child::fork(|| {
                let r = brk_loop(touch, period_ns);
                libc::write(wfd, r.as_ptr().cast(), 24);
                0
            })
        };
        let mut child = match forked {
            Ok(c) => c,
            Err(e) => {
                // SAFETY: closing our own descriptors.
                unsafe {
                    libc::close(fds[0]);
                    libc::close(fds[1]);
                }
                bail!("{e:#}");
            }
        };
        // SAFETY: the parent's copy of the write end.
        unsafe { libc::close(fds[1]) };
        let mut out = [0u64; 3];
        let mut got = 0usize;
        while got < 24 {
            // SAFETY: reading into the remaining bytes of `out`.
            let n = unsafe { libc::read(fds[0], (out.as_mut_ptr() as *mut u8).add(got).cast(), 24 - got) };
            if n > 0 {
                got += n as usize;
            } else if n == 0 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted {
                break;
            }
        }
        // SAFETY: closing our read end.
        unsafe { libc::close(fds[0]) };
        let status = child.wait()?;
        if got < 24 || status.code().is_none() {
            bail!("the brk child died (wait status {:#x})", std::os::unix::process::ExitStatusExt::into_raw(status));
        }
        match out[2] {
            0 => {}
            1 => bail!("brk could not grow the break by 4 KB"),
            _ => bail!("brk could not shrink the break back"),
        }
        self.count = BRK_CALLS;
        Ok((out[0], Duration::from_nanos(out[1])))
    }
}

impl Work for Brk {
    fn call(&mut self) -> Result<()> {
        self.period(Duration::ZERO).map(|_| ())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
    fn run_period(&mut self, period: Duration) -> Option<Result<(u64, Duration)>> {
        Some(self.period(period))
    }
}

pub fn page_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Brk { touch: true, count: 0 }))
}
pub fn brk_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Brk { touch: false, count: 0 }))
}

// ---------------------------------------------------------------- ram_copy

const SIZES: usize = 14;
/// Bytes per call: 8 misalignments x (1 + 2 + ... + 8192).
pub const COPY_BYTES: usize = 8 * ((1 << SIZES) - 1);

struct Copy {
    src: Vec<u8>,
    dst: Vec<u8>,
    count: usize,
}

impl Work for Copy {
    fn call(&mut self) -> Result<()> {
        let mut bytes = 0;
        for k in 0..SIZES {
            let sz = 1usize << k;
            for mis in 0..8 {
                let s = &black_box(&self.src)[mis..mis + sz];
                self.dst[mis..mis + sz].copy_from_slice(s);
                bytes += sz;
            }
            black_box(&mut self.dst);
        }
        self.count = bytes;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

pub fn ram_copy(_c: &Ctx) -> Result<Box<dyn Work>> {
    let len = (1 << (SIZES - 1)) + 8;
    Ok(Box::new(Copy { src: (0..len).map(|i| i as u8).collect(), dst: vec![0; len], count: 0 }))
}

// ---------------------------------------------------------------- shared_memory

/// Lock/copy-in/unlock/lock/copy-out/unlock rounds per call.
pub const SHM_OPS: usize = 10;
const SHM_BYTES: usize = 1024;

struct Shm {
    shmid: i32,
    addr: *mut u8,
    semid: i32,
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    count: usize,
}

impl Shm {
    fn sem(&self, op: i16) -> Result<()> {
        let mut b = libc::sembuf { sem_num: 0, sem_op: op, sem_flg: 0 };
        loop {
            // SAFETY: semop on our semaphore set with one valid sembuf.
            if unsafe { libc::semop(self.semid, &mut b, 1) } == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                bail!("semop: {e}");
            }
        }
    }
}

impl Work for Shm {
    fn call(&mut self) -> Result<()> {
        let mut n = 0;
        for i in 0..SHM_OPS {
            self.inbuf[0] = i as u8;
            self.sem(-1)?;
            // SAFETY: addr is an attached segment of at least SHM_BYTES.
            unsafe { std::ptr::copy_nonoverlapping(self.inbuf.as_ptr(), self.addr, SHM_BYTES) };
            self.sem(1)?;
            self.sem(-1)?;
            // SAFETY: as above, copying out of the segment.
            unsafe { std::ptr::copy_nonoverlapping(self.addr, self.outbuf.as_mut_ptr(), SHM_BYTES) };
            self.sem(1)?;
            if self.outbuf[0] != i as u8 {
                bail!("shared memory copy-out did not match the copy-in");
            }
            n += 1;
        }
        self.count = n;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

impl Drop for Shm {
    fn drop(&mut self) {
        // SAFETY: detach our attachment and remove our semaphore set; both
        // were created by this test (IPC_PRIVATE) and are used by nobody else.
        unsafe {
            if !self.addr.is_null() {
                libc::shmdt(self.addr.cast());
            }
            if self.shmid >= 0 {
                libc::shmctl(self.shmid, libc::IPC_RMID, std::ptr::null_mut());
            }
            if self.semid >= 0 {
                libc::semctl(self.semid, 0, libc::IPC_RMID);
            }
        }
    }
}

pub fn shared_memory(_c: &Ctx) -> Result<Box<dyn Work>> {
    let mut s = Shm { shmid: -1, addr: std::ptr::null_mut(), semid: -1, inbuf: vec![7; SHM_BYTES], outbuf: vec![0; SHM_BYTES], count: 0 };
    // SAFETY: System V IPC calls on objects we create; `s` owns them from the
    // moment they exist, so an early return removes them in Drop.
    unsafe {
        s.shmid = libc::shmget(libc::IPC_PRIVATE, 4096, libc::IPC_CREAT | 0o600);
        if s.shmid < 0 {
            bail!("shmget: {}", std::io::Error::last_os_error());
        }
        let a = libc::shmat(s.shmid, std::ptr::null(), 0);
        if a as isize == -1 {
            bail!("shmat: {}", std::io::Error::last_os_error());
        }
        s.addr = a.cast();
        // Removed by the kernel at the last detach, even if we are killed.
        libc::shmctl(s.shmid, libc::IPC_RMID, std::ptr::null_mut());
        s.shmid = -1;
        s.semid = libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600);
        if s.semid < 0 {
            bail!("semget: {}", std::io::Error::last_os_error());
        }
        if libc::semctl(s.semid, 0, libc::SETVAL, 1) != 0 {
            bail!("semctl SETVAL: {}", std::io::Error::last_os_error());
        }
    }
    Ok(Box::new(s))
}
