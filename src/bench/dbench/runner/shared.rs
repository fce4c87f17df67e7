//! The block the parent and its clients share (the phase, readiness), and
//! the SIGINT/SIGTERM guard of a run.

use super::*;

#[repr(C)]
pub(super) struct Shared {
    pub(super) phase: AtomicU32,
    pub(super) ready: AtomicU32,
    /// Clients that have moved payload bytes since the start.
    pub(super) moved: AtomicU32,
}

/// The shared block: heap for threads, a shared anonymous mapping for
/// processes (so children see the parent's phase switches).
pub(super) struct SharedMem {
    ptr: *mut Shared,
    mapped: bool,
}

impl SharedMem {
    pub(super) fn new(mapped: bool) -> Result<SharedMem> {
        let ptr = if mapped {
            // SAFETY: a fresh anonymous mapping, page-aligned and zero-filled;
            // zeroed memory is a valid `Shared` (atomics at 0).
            let p = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    std::mem::size_of::<Shared>(),
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                    -1,
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                bail!("mmap of the shared phase block failed: {}", std::io::Error::last_os_error());
            }
            p as *mut Shared
        } else {
            Box::into_raw(Box::new(Shared {
                phase: AtomicU32::new(WAITING),
                ready: AtomicU32::new(0),
                moved: AtomicU32::new(0),
            }))
        };
        Ok(SharedMem { ptr, mapped })
    }
    pub(super) fn get(&self) -> &Shared {
        // SAFETY: ptr is valid (mapped or boxed) until drop.
        unsafe { &*self.ptr }
    }
}

impl Drop for SharedMem {
    fn drop(&mut self) {
        if self.mapped {
            // SAFETY: unmapping exactly what new() mapped; no reference outlives self.
            unsafe { libc::munmap(self.ptr as *mut libc::c_void, std::mem::size_of::<Shared>()) };
        } else {
            // SAFETY: ptr came from Box::into_raw in new() and is freed once.
            drop(unsafe { Box::from_raw(self.ptr) });
        }
    }
}

// SAFETY: Shared only holds atomics.
unsafe impl Sync for SharedMem {}
// SAFETY: as above; the pointer's target is shared on purpose.
unsafe impl Send for SharedMem {}

pub(super) static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_sig: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Catch SIGINT and SIGTERM while a run is on; restores the previous
/// handlers when dropped.
pub(super) struct SignalGuard {
    old: Vec<(nix::sys::signal::Signal, nix::sys::signal::SigAction)>,
}

impl SignalGuard {
    pub(super) fn new() -> SignalGuard {
        use nix::sys::signal::{sigaction, SaFlags, SigAction, SigHandler, SigSet, Signal};
        INTERRUPTED.store(false, Ordering::SeqCst);
        let act = SigAction::new(SigHandler::Handler(on_signal), SaFlags::SA_RESTART, SigSet::empty());
        let mut old = Vec::new();
        for sig in [Signal::SIGINT, Signal::SIGTERM] {
            // SAFETY: the handler only stores to an atomic (async-signal-safe).
            if let Ok(prev) = unsafe { sigaction(sig, &act) } {
                old.push((sig, prev));
            }
        }
        SignalGuard { old }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restoring the handler that was installed before.
            let _ = unsafe { nix::sys::signal::sigaction(*sig, prev) };
        }
    }
}
