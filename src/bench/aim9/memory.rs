//! AIM9's memory tests: `page_test`, `brk_test` (creat-clo.c), `ram_copy`
//! (ram.c), `shared_memory` (pipe_test.c).
//!
//! page_test / brk_test move the program break with the raw `brk` system
//! call, as AIM9's sbrk calls do: one call raises the break by 1 MB, then
//! [`PAGE_ROUNDS`] (page_test) or [`BRK_ROUNDS`] (brk_test) times lowers it
//! by 64 KB and raises it back 4 KB at a time (page_test writes every 128th
//! byte of each new page, so each step also faults a fresh zeroed page in),
//! and finally puts the break back: 17 brk calls a round plus 2. The C
//! allocator (glibc malloc, which Rust's allocator uses) also moves the
//! break, and would be corrupted if it allocated while ours is moved, so the
//! whole timed period runs in a forked child that calls nothing but `brk`,
//! `clock_gettime`, `write` and `_exit`; the break is always put back where
//! it was, and the child's address space vanishes with it anyway.
//!
//! ram_copy: AIM9's 64 memcpy calls per call, sizes from its table (1 B to
//! 8 KB, 25020 bytes in all) at source offsets n % 8 and destination offsets
//! (n / 8) % 8; the factor counts bytes.
//!
//! shared_memory: each call creates a System V shared memory segment (2 KB)
//! and a semaphore, attaches the segment, sets the semaphore to 1, makes 100
//! rounds of (lock, copy in, unlock, lock, copy out, unlock) with sizes from
//! AIM9's message table, then detaches and removes both, as AIM9 does. The
//! keys are private (AIM9 used its pid, one getpid each).

use super::runner::{Ctx, Work};
use anyhow::{bail, Result};
use std::hint::black_box;
use std::time::Duration;

// ---------------------------------------------------------------- brk

/// Rounds per page_test call (AIM9's argument "100").
pub(crate) const PAGE_ROUNDS: u64 = 100;
/// Rounds per brk_test call (AIM9's argument "1000").
pub(crate) const BRK_ROUNDS: u64 = 1000;
/// brk calls a round counts: one 64 KB drop and 16 4 KB raises.
pub(crate) const BRK_PER_ROUND: u64 = 17;
const STEP: usize = 4096;
const RAISE: usize = 1 << 20;

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

/// One AIM9 call: raise 1 MB, `rounds` x (drop 64 KB, 16 x raise 4 KB),
/// back to `base`. False if the kernel refused a move.
fn brk_call(base: usize, rounds: u64, touch: bool) -> bool {
    let mut top = base + RAISE;
    if brk(top) != top {
        brk(base);
        return false;
    }
    for _ in 0..rounds {
        top -= 16 * STEP;
        if brk(top) != top {
            brk(base);
            return false;
        }
        for _ in 0..16 {
            let page = top;
            top += STEP;
            if brk(top) != top {
                brk(base);
                return false;
            }
            if touch {
                for off in (0..STEP).step_by(128) {
                    // SAFETY: [page, top) lies below the break just set, so
                    // it is mapped and writable.
                    unsafe { std::ptr::write_volatile((page + off) as *mut u8, b' ') };
                }
            }
        }
    }
    brk(base) == base
}

/// The timed loop, run in the forked child: [calls, elapsed ns, error code].
fn brk_loop(touch: bool, rounds: u64, period_ns: u64) -> [u64; 3] {
    let start = now_ns();
    let base = brk(0);
    let mut calls = 0u64;
    loop {
        if !brk_call(base, rounds, touch) {
            return [calls, now_ns() - start, 1];
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
    rounds: u64,
}

impl Brk {
    fn period(&mut self, period: Duration) -> Result<(u64, Duration)> {
        let mut fds = [0; 2];
        // SAFETY: pipe2 into a valid array.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            bail!("pipe: {}", std::io::Error::last_os_error());
        }
        let period_ns = period.as_nanos().min(u64::MAX as u128) as u64;
        let (touch, rounds, wfd) = (self.touch, self.rounds, fds[1]);
        // SAFETY: the child calls only brk, clock_gettime and write (no
        // allocation, no locks), so it is safe with threads.
        let forked = unsafe {
            crate::child::fork(|| {
                let r = brk_loop(touch, rounds, period_ns);
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
        if out[2] != 0 {
            bail!("the kernel refused to move the break");
        }
        Ok((out[0], Duration::from_nanos(out[1])))
    }
}

impl Work for Brk {
    fn call(&mut self) -> Result<f64> {
        self.period(Duration::ZERO).map(|_| (self.rounds * BRK_PER_ROUND) as f64)
    }
    fn run_period(&mut self, period: Duration) -> Option<Result<(u64, Duration)>> {
        Some(self.period(period))
    }
}

pub(crate) fn page_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Brk { touch: true, rounds: PAGE_ROUNDS }))
}
pub(crate) fn brk_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Brk { touch: false, rounds: BRK_ROUNDS }))
}

// ---------------------------------------------------------------- ram_copy

/// AIM9's copy sizes (ram.c); one call uses the first [`COPIES`].
const RAM_SIZES: [usize; 90] = [
    1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7, 8, 9, 11, 17, 33, 63, 7, 7, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7,
    127, 256, 1001, 1200, 1492, 1500, 1024, 2048, 3172, 4096, 8192, 512, 7, 7, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 7, 7,
    7, 7, 7, 8, 9, 11, 17, 33, 63, 7, 7, 7, 7, 7, 7, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7, 7,
];
/// memcpy calls per call (AIM9's argument "64").
pub(crate) const COPIES: usize = 64;
/// Bytes per call: the first 64 sizes of the table.
pub(crate) const COPY_BYTES: usize = 25_020;

/// Where AIM9's two buffers lie in its build (`gcc -O`, GNU ld; ram.c's
/// static arrays in .bss, read with `nm`): the destination `b` 0x60 bytes
/// into a page, the source `a` 0x2020 bytes after it. The cost of the copies
/// depends on this: a destination just above its source modulo 4 KiB makes
/// every load wait on the store before it (4K aliasing), and the string
/// copy (`rep movsb`) is slower when the two differ in alignment modulo 64.
pub(crate) const RAM_DST_OFFSET: usize = 0x60;
pub(crate) const RAM_SRC_OFFSET: usize = 0x60 + 0x2020;
const RAM_BUF: usize = 8192 + 8;
const RAM_MAP: usize = (RAM_SRC_OFFSET + RAM_BUF).next_multiple_of(4096);

/// A private anonymous mapping holding both buffers at AIM9's places. The
/// source is never written, as AIM9's `a` is not: its pages read as zeros.
struct CopyMap(*mut u8);

impl CopyMap {
    fn new() -> Result<CopyMap> {
        // SAFETY: a fresh private anonymous mapping; checked below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RAM_MAP,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            bail!("ram_copy: mmap of {RAM_MAP} bytes: {}", std::io::Error::last_os_error());
        }
        Ok(CopyMap(p.cast()))
    }
}

impl Drop for CopyMap {
    fn drop(&mut self) {
        // SAFETY: the mapping made in new, unmapped once.
        unsafe { libc::munmap(self.0.cast(), RAM_MAP) };
    }
}

struct Copy {
    map: CopyMap,
}

impl Work for Copy {
    fn call(&mut self) -> Result<f64> {
        let (dst, src) = (self.map.0.wrapping_add(RAM_DST_OFFSET), self.map.0.wrapping_add(RAM_SRC_OFFSET));
        let mut bytes = 0;
        for (n, &sz) in RAM_SIZES[..COPIES].iter().enumerate() {
            // AIM9's offsets: destination n % 8, source (n / 8) % 8.
            let (d, so) = (n % 8, (n / 8) % 8);
            // SAFETY: both ranges (offset < 8, size <= 8192) lie inside their
            // 8200-byte buffers in the mapping, which do not overlap; this
            // is memcpy, as AIM9 calls.
            unsafe { libc::memcpy(black_box(dst.add(d)).cast(), src.add(so).cast(), sz) };
            bytes += sz;
        }
        Ok(bytes as f64)
    }
}

pub(crate) fn ram_copy(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Copy { map: CopyMap::new()? }))
}

// ---------------------------------------------------------------- shared_memory

/// Lock/copy-in/unlock/lock/copy-out/unlock rounds per call.
pub(crate) const SHM_OPS: usize = 100;
/// The segment's size (AIM9's MAXBLK).
const SHM_BYTES: usize = 2048;

struct Shm {
    inbuf: Vec<u8>,
    outbuf: Vec<u8>,
    /// Position in the message size table, kept across calls as AIM9 does.
    next: usize,
}

/// One call's IPC objects, removed on drop (error paths included).
struct ShmObjs {
    shmid: i32,
    addr: *mut u8,
    semid: i32,
}

impl ShmObjs {
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

impl Drop for ShmObjs {
    fn drop(&mut self) {
        // SAFETY: detach our attachment, remove our segment and semaphore
        // set; all were created by this call (IPC_PRIVATE).
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

impl Work for Shm {
    fn call(&mut self) -> Result<f64> {
        let mut o = ShmObjs { shmid: -1, addr: std::ptr::null_mut(), semid: -1 };
        // SAFETY: System V IPC calls on objects we create; `o` owns them
        // from the moment they exist, so an early return removes them.
        unsafe {
            o.shmid = libc::shmget(libc::IPC_PRIVATE, SHM_BYTES, libc::IPC_CREAT | 0o600);
            if o.shmid < 0 {
                bail!("shmget: {}", std::io::Error::last_os_error());
            }
            o.semid = libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600);
            if o.semid < 0 {
                bail!("semget: {}", std::io::Error::last_os_error());
            }
            let a = libc::shmat(o.shmid, std::ptr::null(), 0);
            if a as isize == -1 {
                bail!("shmat: {}", std::io::Error::last_os_error());
            }
            o.addr = a.cast();
            if libc::semctl(o.semid, 0, libc::SETVAL, 1) != 0 {
                bail!("semctl SETVAL: {}", std::io::Error::last_os_error());
            }
        }
        let mut n = 0;
        for i in 0..SHM_OPS {
            let sz = super::ipc::SIZES[self.next % super::ipc::SIZES.len()];
            self.next += 1;
            self.inbuf[0] = i as u8;
            o.sem(-1)?;
            // SAFETY: addr is an attached segment of SHM_BYTES >= sz.
            unsafe { std::ptr::copy_nonoverlapping(self.inbuf.as_ptr(), o.addr, sz) };
            o.sem(1)?;
            o.sem(-1)?;
            // SAFETY: as above, copying out of the segment.
            unsafe { std::ptr::copy_nonoverlapping(o.addr, self.outbuf.as_mut_ptr(), sz) };
            o.sem(1)?;
            if self.outbuf[0] != i as u8 {
                bail!("shared memory copy-out did not match the copy-in");
            }
            n += 1;
        }
        drop(o);
        Ok(n as f64)
    }
}

pub(crate) fn shared_memory(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Shm { inbuf: vec![7; SHM_BYTES], outbuf: vec![0; SHM_BYTES], next: 0 }))
}
