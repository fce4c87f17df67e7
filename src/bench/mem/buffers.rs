//! Page-aligned buffers carved into slots, and the order a cold run visits
//! them in. A warm run reuses slot 0; a cold run rotates through enough slots
//! that the data it touches totals about twice the last-level cache, visiting
//! them with a large co-prime stride so hardware prefetchers cannot follow.
//! A [`Pool`] holds the buffers the compared points of a tie share, and
//! where the walk through them stands.

use anyhow::{anyhow, Result};
use std::sync::atomic::{AtomicUsize, Ordering};

/// A zero-initialised, page-aligned byte area that reports allocation
/// failure as an error instead of aborting.
pub(super) struct Arena {
    v: Vec<u8>,
    start: usize,
    len: usize,
}

impl Arena {
    pub(super) fn new(len: usize) -> Result<Arena> {
        let total = len.checked_add(4096).ok_or_else(|| anyhow!("buffer of {len} bytes is too large"))?;
        let mut v = Vec::new();
        v.try_reserve_exact(total).map_err(|e| anyhow!("cannot allocate {total} bytes: {e}"))?;
        v.resize(total, 0);
        let start = v.as_ptr().align_offset(4096);
        Ok(Arena { v, start, len })
    }
    pub(super) fn bytes(&self) -> &[u8] {
        &self.v[self.start..self.start + self.len]
    }
    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.v[self.start..self.start + self.len]
    }
}

/// How a run walks its slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Rotation {
    /// Number of slots.
    pub(crate) slots: usize,
    /// Slots advanced per call, co-prime with `slots` (0 when there is one).
    pub(crate) step: usize,
}

impl Rotation {
    /// `cold`: enough slots of `slot_bytes` (one slot's bytes over all its
    /// buffers) to total `2 * llc`; warm: one slot.
    pub(super) fn new(cold: bool, slot_bytes: u64, llc: u64) -> Rotation {
        if !cold {
            return Rotation { slots: 1, step: 0 };
        }
        let slots = (2 * llc).div_ceil(slot_bytes.max(1)).max(1) as usize;
        if slots == 1 {
            return Rotation { slots: 1, step: 0 };
        }
        // About 0.618 of the way round each time, nudged to be co-prime so
        // every slot is visited once per cycle.
        let mut step = ((slots as f64 * 0.618) as usize).max(1);
        while gcd(step, slots) != 1 {
            step += 1;
        }
        Rotation { slots, step }
    }

    /// The slot `n` calls after `cur`.
    pub(super) fn advance(&self, cur: usize, n: u64) -> usize {
        if self.slots <= 1 {
            return 0;
        }
        ((cur as u128 + n as u128 * self.step as u128) % self.slots as u128) as usize
    }

    /// Advance `cur` to the next slot.
    #[inline(always)]
    pub(super) fn next(&self, cur: usize) -> usize {
        let n = cur + self.step;
        if n >= self.slots {
            n - self.slots
        } else {
            n
        }
    }
}

/// Buffers the compared points share (`Sampler::shared`: libc and tuned
/// work on the same pages), and the slot the walk through them goes on
/// from. Every timed loop, of whichever point, continues where the last
/// one stopped, so a cold run's calls each find their slot as it was left a
/// whole lap (twice the last-level cache) of traffic before; a walk that
/// began again at slot 0 for every sample met, in its first calls, the
/// slots the re-warming pass before it had just touched.
pub(super) struct Pool<T> {
    pub(crate) bufs: T,
    next: AtomicUsize,
}

impl<T> Pool<T> {
    pub(super) fn new(bufs: T) -> Pool<T> {
        Pool { bufs, next: AtomicUsize::new(0) }
    }

    /// The slot a loop of `n` calls starts from; the walk moves on past
    /// them. One pool is walked with one rotation (its key names the slots).
    pub(super) fn walk(&self, rot: Rotation, n: u64) -> usize {
        let from = self.next.load(Ordering::Relaxed);
        self.next.store(rot.advance(from, n), Ordering::Relaxed);
        from
    }
}

fn gcd(mut a: usize, mut b: usize) -> usize {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `x` rounded up to a multiple of `q` (a power of two).
pub(super) fn round_up(x: u64, q: u64) -> u64 {
    (x + q - 1) & !(q - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cold_rotation_visits_every_slot() {
        let r = Rotation::new(true, 4096, 1 << 20);
        assert_eq!(r.slots, 512);
        let mut seen = vec![false; r.slots];
        let mut c = 0;
        for _ in 0..r.slots {
            assert!(!seen[c]);
            seen[c] = true;
            c = r.next(c);
        }
        assert_eq!(c, 0);
        assert_eq!(Rotation::new(false, 64, 1 << 30), Rotation { slots: 1, step: 0 });
        assert_eq!(Rotation::new(true, 1 << 30, 1 << 20).slots, 1);
        assert_eq!(Rotation::new(true, 1 << 30, 1 << 20).next(0), 0);
    }

    #[test]
    fn the_walk_goes_on_where_the_last_loop_stopped() {
        let r = Rotation::new(true, 4096, 1 << 20);
        let mut c = 5;
        for _ in 0..1000 {
            c = r.next(c);
        }
        assert_eq!(r.advance(5, 1000), c);
        let pool = Pool::new(());
        assert_eq!(pool.walk(r, 1000), 0);
        assert_eq!(pool.walk(r, 3), r.advance(0, 1000));
        assert_eq!(pool.walk(r, 0), r.advance(0, 1003));
        let warm = Rotation::new(false, 64, 1 << 20);
        assert_eq!((warm.advance(0, u64::MAX), Pool::new(()).walk(warm, 7)), (0, 0));
    }

    #[test]
    fn arena_is_page_aligned() {
        let mut a = Arena::new(10_000).unwrap();
        assert_eq!(a.bytes().as_ptr() as usize % 4096, 0);
        assert_eq!(a.bytes_mut().len(), 10_000);
        assert!(Arena::new(usize::MAX).is_err());
        assert_eq!(round_up(65, 64), 128);
    }
}
