//! Taking turns: several parameter points measured in one worker, sample by
//! sample.
//!
//! Two values a user compares (`impl=libc,tuned`) run on one machine whose
//! speed moves under them: on a VM whose memory bandwidth other tenants
//! share, a routine streaming from memory runs 10-40% faster or slower from
//! one second to the next, and both routines move together. Workers a
//! second apart see different moments, so their ratio carries that swing;
//! samples a few milliseconds apart see the same one. So the harness may
//! hand one worker several points (a *tie*, `harness/order.rs`), each run
//! on its own thread, and the threads pass one baton: only the holder runs,
//! so the points never compete for a CPU or the memory bus, and between two
//! samples of one point every other point takes one.
//!
//! A thread holds the turn from [`Turns::enter`] (its set-up, calibration
//! and warm-up run then) until its sampler hands it on before each sample
//! ([`Member::yield_turn`]); it leaves the rotation when its guard drops,
//! so an error or a panic in one point never blocks the others.
//!
//! Members may share set-up ([`Member::shared`]): the buffers a memory
//! routine works on, asked for with the same key by every point of a tie,
//! are made once, by the first, and handed to the others. The compared
//! points then differ only in what is compared. With a buffer each, the
//! physical pages behind them differed from point to point (and cache sets
//! and memory banks with them), and that showed as a difference that moved
//! from worker to worker: measured here, it was the larger part of the
//! noise in tuned/libc of buffers not in cache. Only the holder of the turn
//! runs, so a shared value is never used by two members at once.
//!
//! **Order.** The first cycle (every member's set-up) goes 0, 1, ...; after
//! it, with a seed ([`Turns::shuffled`], what the harness gives every tie),
//! each cycle's order is drawn at random: a periodic disturbance, or the
//! one sample after another's that pays for its cache misses, then hits
//! every member alike in the long run instead of always the same one.
//! Each cycle still holds one turn of every member, so sample `i` of one
//! and sample `i` of another stay adjacent (`stats::paired`).
//!
//! **Duet** ([`Turns::duet`], `--interleave duet`; Bulej et al., ICPE
//! 2020): after the set-up cycle, which still goes one member at a time,
//! the members take their samples at the same moment instead, each pinned
//! to one of the given CPUs, and the CPUs rotate by one member each cycle:
//! whatever slows the machine during a cycle slows every member's sample
//! of it. Every member waits for the others before each sample (a
//! barrier), so sample `i` of each is still one pair. Whether that helps
//! depends on the host: two vCPUs that slow each other make the pairs
//! noisier, not tighter (`docs/verdicts.md` has the measured comparison).
//!
//! The points run where one thread would: a thread woken by another that
//! is still running lands on an idle CPU, so left alone the two sides of a
//! comparison would run on different CPUs (of a VM's vCPUs, which the host
//! slows at different moments; measured here, tuned/libc of single pairs
//! spread 0.79-1.32 that way, 0.93-1.01 on one CPU). So a member taking its
//! turn first moves to the CPU the last holder ended on, then is free to
//! move again within the configuration's CPUs: the tie moves as the
//! scheduler moves the thread that has the work.

use crate::cpuset::CpuSet;
use crate::sys;
use anyhow::Result;
use rand::seq::SliceRandom;
use rand::SeedableRng;
use std::any::Any;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};

/// A value members share, held for as long as one of them holds it.
type SharedValue = Weak<dyn Any + Send + Sync>;

/// The baton of one tie: members `0..n` go in that order, round and round.
pub(crate) struct Turns {
    state: Mutex<State>,
    moved: Condvar,
    members: usize,
    /// Set-up shared by key ([`Member::shared`]).
    shared: Mutex<Vec<(String, SharedValue)>>,
}

struct State {
    /// Who holds the turn (`None` once everyone has left).
    holder: Option<usize>,
    gone: Vec<bool>,
    /// The CPU the last holder handed the turn on.
    cpu: Option<u32>,
    /// With a seed: the members still to go in this cycle, next last, and
    /// what draws each new cycle's order.
    cycle: Vec<usize>,
    rng: Option<rand_chacha::ChaCha8Rng>,
    /// Duet: the CPUs members sample on, the members waiting at the
    /// barrier, and how many times it has opened.
    duet: Vec<u32>,
    arrived: usize,
    opened: u64,
    /// Each member's thread, once it entered (0 before).
    threads: Vec<i32>,
}

impl Turns {
    /// A rotation of `n` members; member 0 holds the first turn.
    pub(crate) fn new(n: usize) -> Turns {
        Turns {
            state: Mutex::new(State {
                holder: (n > 0).then_some(0),
                gone: vec![false; n],
                cpu: None,
                cycle: (1..n).rev().collect(),
                rng: None,
                duet: Vec::new(),
                arrived: 0,
                opened: 0,
                threads: vec![0; n],
            }),
            moved: Condvar::new(),
            members: n,
            shared: Mutex::new(Vec::new()),
        }
    }

    /// The same rotation, each cycle after the first in an order drawn
    /// from `seed`.
    pub(crate) fn shuffled(self, seed: u64) -> Turns {
        self.lock().rng = Some(rand_chacha::ChaCha8Rng::seed_from_u64(seed));
        self
    }

    /// The same members, sampling at the same moment after the set-up
    /// cycle, each on one of `cpus` (as many as members, or more), the
    /// CPUs rotating by one each cycle. Fewer CPUs than members: unchanged.
    pub(crate) fn duet(self, cpus: &[u32]) -> Turns {
        if cpus.len() >= self.members && self.members > 1 {
            self.lock().duet = cpus.to_vec();
        }
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A member that panicked holding the lock changed nothing half-way.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for `me`'s first turn; the guard leaves the rotation when dropped.
    pub(crate) fn enter(self: &Arc<Self>, me: usize) -> Member {
        let m = Member { turns: self.clone(), me, allowed: sys::get_affinity().ok(), duet_cpu: Mutex::new(None) };
        if let Some(t) = self.lock().threads.get_mut(me) {
            *t = nix::unistd::gettid().as_raw();
        }
        m.follow(self.take(me));
        m
    }

    /// Block until `me` holds the turn; returns the CPU the turn was
    /// handed on, if known.
    pub(crate) fn take(&self, me: usize) -> Option<u32> {
        let mut s = self.lock();
        while s.holder != Some(me) {
            s = self.moved.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.cpu
    }

    /// Hand the turn from `me` to the next member still in the rotation
    /// (back to `me` when it is the only one left).
    pub(crate) fn pass(&self, me: usize) {
        let cpu = sys::task::current_cpu();
        let mut s = self.lock();
        if s.holder == Some(me) {
            s.holder = s.after(me);
            s.cpu = cpu;
            self.moved.notify_all();
        }
    }

    /// Duet: hand the set-up turn on if `me` holds it, wait until every
    /// member still in the rotation has arrived, and return the CPU `me`
    /// samples on this cycle.
    fn meet(&self, me: usize) -> u32 {
        let mut s = self.lock();
        if s.holder == Some(me) {
            s.holder = s.after(me);
            self.moved.notify_all();
        }
        s.arrived += 1;
        let opened = s.opened;
        s.open_if_all_came();
        self.moved.notify_all();
        while s.opened == opened {
            s = self.moved.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.duet[(me + s.opened as usize) % s.duet.len()]
    }

    /// Take `me` out of the rotation (what dropping its [`Member`] does;
    /// called directly for a member whose thread never started).
    pub(crate) fn leave(&self, me: usize) {
        let mut s = self.lock();
        if let Some(g) = s.gone.get_mut(me) {
            *g = true;
        }
        if s.holder == Some(me) {
            s.holder = s.after(me);
        }
        if !s.duet.is_empty() {
            s.open_if_all_came();
        }
        self.moved.notify_all();
    }
}

impl State {
    /// Who holds the turn after `me`: the next in rotation order, or with a
    /// seed the next of this cycle's drawn order (a new cycle drawn when
    /// this one is done).
    fn after(&mut self, me: usize) -> Option<usize> {
        if !self.duet.is_empty() {
            // Members set up in order 0, 1, ...; then nobody holds a turn.
            return (me + 1..self.gone.len()).find(|&i| !self.gone[i]);
        }
        let Some(rng) = self.rng.as_mut() else { return next(&self.gone, me) };
        loop {
            if self.cycle.is_empty() {
                let mut live: Vec<usize> = (0..self.gone.len()).filter(|&i| !self.gone[i]).collect();
                if live.is_empty() {
                    return None;
                }
                live.shuffle(rng);
                live.reverse();
                self.cycle = live;
            }
            let k = self.cycle.pop()?;
            if !self.gone[k] {
                return Some(k);
            }
        }
    }
}

impl State {
    /// Duet: open the barrier once every member still in the rotation is
    /// at it (and no member is still setting up).
    fn open_if_all_came(&mut self) {
        let live = self.gone.iter().filter(|g| !**g).count();
        if self.holder.is_none() && self.arrived > 0 && self.arrived >= live {
            self.arrived = 0;
            self.opened += 1;
        }
    }
}

/// The first member after `me`, in rotation order, that has not left.
fn next(gone: &[bool], me: usize) -> Option<usize> {
    let n = gone.len();
    (1..=n).map(|k| (me + k) % n).find(|&i| !gone[i])
}

/// One member's place in a rotation; dropping it leaves.
pub struct Member {
    turns: Arc<Turns>,
    me: usize,
    /// The CPUs this thread may use (the configuration's), when known.
    allowed: Option<CpuSet>,
    /// Duet: the CPU this member is pinned to for its current sample.
    duet_cpu: Mutex<Option<u32>>,
}

impl Member {
    /// The threads of every member that has entered, this one's included.
    pub(crate) fn threads(&self) -> Vec<i32> {
        self.turns.lock().threads.iter().copied().filter(|&t| t != 0).collect()
    }

    /// How many members the rotation began with.
    pub fn members(&self) -> usize {
        self.turns.members
    }

    /// The value shared under `key` by the members of this rotation: the
    /// one another member made and still holds, or a new one from `make`
    /// (an error from `make` is returned and nothing is kept). Only the
    /// holder of the turn runs, so whoever uses the value holds the turn;
    /// a value under the same key but of another type is not shared.
    pub fn shared<T: Any + Send + Sync>(&self, key: &str, make: impl FnOnce() -> Result<T>) -> Result<Arc<T>> {
        let mut store = self.turns.shared.lock().unwrap_or_else(|e| e.into_inner());
        store.retain(|(_, w)| w.strong_count() > 0);
        let found = store.iter().filter(|(k, _)| k == key).find_map(|(_, w)| w.upgrade()?.downcast::<T>().ok());
        if let Some(v) = found {
            return Ok(v);
        }
        let v = Arc::new(make()?);
        let any: Arc<dyn Any + Send + Sync> = v.clone();
        store.push((key.to_string(), Arc::downgrade(&any)));
        Ok(v)
    }

    /// Let every other member take one turn, then continue; in a duet,
    /// wait for every other member instead, then move to this cycle's CPU.
    pub fn yield_turn(&self) {
        if self.turns.lock().duet.is_empty() {
            self.turns.pass(self.me);
            self.follow(self.turns.take(self.me));
            return;
        }
        let cpu = self.turns.meet(self.me);
        if sys::set_affinity(&CpuSet::from_iter([cpu])).is_ok() {
            *self.duet_cpu.lock().unwrap_or_else(|e| e.into_inner()) = Some(cpu);
        }
    }

    /// In a duet, the CPU this member's current sample runs on and the
    /// other members' CPUs; `None` otherwise (or before the first sample).
    pub fn duet_cpus(&self) -> Option<(u32, Vec<u32>)> {
        let cpu = (*self.duet_cpu.lock().unwrap_or_else(|e| e.into_inner()))?;
        let all = self.turns.lock().duet.clone();
        Some((cpu, all.into_iter().filter(|&c| c != cpu).collect()))
    }

    /// Move to `cpu` (where the last holder ran) if this thread is
    /// elsewhere and may run there, then allow its CPUs again: the next
    /// sample starts where the last one ended, as one thread's would.
    fn follow(&self, cpu: Option<u32>) {
        let (Some(c), Some(allowed)) = (cpu, &self.allowed) else { return };
        if allowed.len() < 2 || !allowed.contains(c) || sys::task::current_cpu() == Some(c) {
            return;
        }
        if sys::set_affinity(&CpuSet::from_iter([c])).is_ok() {
            let _ = sys::set_affinity(allowed);
        }
    }
}

impl Drop for Member {
    fn drop(&mut self) {
        self.turns.leave(self.me);
        if self.duet_cpu.get_mut().is_ok_and(|c| c.is_some()) {
            if let Some(allowed) = &self.allowed {
                let _ = sys::set_affinity(allowed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each member logs `rounds` steps, yielding after each: the log is the
    /// members in rotation, one step each, until each is done.
    fn log_of(rounds: &[usize]) -> Vec<usize> {
        logged(None, rounds)
    }

    /// The same, the rotation shuffled from `seed` when given.
    fn logged(seed: Option<u64>, rounds: &[usize]) -> Vec<usize> {
        let mut turns = Turns::new(rounds.len());
        if let Some(seed) = seed {
            turns = turns.shuffled(seed);
        }
        let turns = Arc::new(turns);
        let log = Arc::new(Mutex::new(Vec::new()));
        std::thread::scope(|sc| {
            for (me, &r) in rounds.iter().enumerate() {
                let (turns, log) = (&turns, log.clone());
                sc.spawn(move || {
                    let m = turns.enter(me);
                    for i in 0..r {
                        if i > 0 {
                            m.yield_turn();
                        }
                        log.lock().unwrap().push(me);
                    }
                });
            }
        });
        let v = log.lock().unwrap().clone();
        v
    }

    #[test]
    fn shared_set_up_is_made_once_and_freed_with_its_last_holder() {
        let turns = Arc::new(Turns::new(2));
        let made = std::sync::atomic::AtomicUsize::new(0);
        let make = || -> Result<Vec<u8>> {
            made.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(vec![7; 16])
        };
        let (a, b) =
            (turns.enter(0), Member { turns: turns.clone(), me: 1, allowed: None, duet_cpu: Mutex::new(None) });
        let x = a.shared("buf", make).unwrap();
        let y = b.shared("buf", make).unwrap();
        assert!(Arc::ptr_eq(&x, &y));
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 1);
        // Another key, or another type under the same key, is not shared.
        assert!(!Arc::ptr_eq(&x, &a.shared("other", make).unwrap()));
        assert_eq!(*b.shared("buf", || Ok(3u32)).unwrap(), 3);
        // A failing make keeps nothing; once every holder is gone the next
        // asker makes a new one.
        assert!(a.shared::<u8>("bad", || anyhow::bail!("no memory")).is_err());
        drop((x, y));
        let z = a.shared("buf", make).unwrap();
        assert_eq!(made.load(std::sync::atomic::Ordering::Relaxed), 3);
        assert_eq!(z.len(), 16);
    }

    #[test]
    fn members_alternate_one_step_each() {
        assert_eq!(log_of(&[3, 3]), vec![0, 1, 0, 1, 0, 1]);
        assert_eq!(log_of(&[2, 2, 2]), vec![0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn a_member_that_finishes_early_leaves_the_rest_alternating() {
        assert_eq!(log_of(&[1, 3, 2]), vec![0, 1, 2, 1, 2, 1]);
        assert_eq!(log_of(&[4]), vec![0, 0, 0, 0]);
    }

    #[test]
    fn a_duet_sets_up_in_turn_then_samples_together_on_swapping_cpus() {
        // Two members, three samples each: set-up one at a time, then each
        // cycle both meet before sampling, on CPUs 10 and 11 in turn.
        let turns = Arc::new(Turns::new(2).duet(&[10, 11]));
        let log = Arc::new(Mutex::new(Vec::new()));
        std::thread::scope(|sc| {
            for me in 0..2 {
                let (turns, log) = (&turns, log.clone());
                sc.spawn(move || {
                    let _m = turns.enter(me);
                    log.lock().unwrap().push(format!("setup {me}"));
                    for _ in 0..3 {
                        let cpu = turns.meet(me);
                        log.lock().unwrap().push(format!("{me}@{cpu}"));
                        std::thread::sleep(std::time::Duration::from_millis(2));
                    }
                });
            }
        });
        let v = log.lock().unwrap().clone();
        assert_eq!(v[..2], ["setup 0", "setup 1"], "{v:?}");
        // Each cycle holds both members, on different CPUs, swapped the next.
        let cycles: Vec<Vec<String>> = v[2..]
            .chunks(2)
            .map(|c| {
                let mut c = c.to_vec();
                c.sort();
                c
            })
            .collect();
        assert_eq!(cycles, [["0@11", "1@10"], ["0@10", "1@11"], ["0@11", "1@10"]], "{v:?}");
    }

    #[test]
    fn a_duet_goes_on_alone_when_a_member_leaves() {
        let turns = Arc::new(Turns::new(2).duet(&[0, 1]));
        let cpus = std::thread::scope(|sc| {
            let a = sc.spawn(|| {
                let _m = turns.enter(0);
                turns.meet(0);
            });
            let b = sc.spawn(|| {
                let _m = turns.enter(1);
                (0..4).map(|_| turns.meet(1)).collect::<Vec<u32>>()
            });
            a.join().unwrap();
            b.join().unwrap()
        });
        assert_eq!(cpus.len(), 4);
        // Fewer CPUs than members: no duet.
        assert!(Turns::new(3).duet(&[0, 1]).lock().duet.is_empty());
    }

    #[test]
    fn a_member_that_panics_still_leaves() {
        let turns = Arc::new(Turns::new(2));
        let done = std::thread::scope(|sc| {
            let a = sc.spawn(|| {
                let _m = turns.enter(0);
                panic!("point failed");
            });
            let b = sc.spawn(|| {
                let m = turns.enter(1);
                m.yield_turn();
                true
            });
            assert!(a.join().is_err());
            b.join().unwrap()
        });
        assert!(done);
    }

    #[test]
    fn shuffled_cycles_hold_every_member_once_in_a_drawn_order() {
        let log_seeded = |seed: u64, rounds: &[usize]| logged(Some(seed), rounds);
        let mut firsts = [0usize; 3];
        for seed in 0..40 {
            let v = log_seeded(seed, &[6, 6, 6]);
            assert_eq!(&v[..3], &[0, 1, 2], "the first cycle is in order");
            for c in v.chunks(3) {
                let mut c = c.to_vec();
                firsts[c[0]] += 1;
                c.sort();
                assert_eq!(c, [0, 1, 2], "seed {seed}: {v:?}");
            }
            // The same seed, the same order.
            assert_eq!(v, log_seeded(seed, &[6, 6, 6]));
        }
        assert!(firsts.iter().all(|&f| f > 20), "every member goes first sometimes: {firsts:?}");
        // A member that leaves early leaves the others in cycles.
        let v = log_seeded(7, &[1, 3, 3]);
        assert_eq!(v.len(), 7);
    }

    #[test]
    fn next_skips_those_gone() {
        assert_eq!(next(&[false, true, false], 0), Some(2));
        assert_eq!(next(&[false, true, false], 2), Some(0));
        assert_eq!(next(&[true, true], 0), None);
        assert_eq!(next(&[false], 0), Some(0));
    }
}
