//! The server's book of runs and rooms, shared by both server models: who
//! said HELLO where, when a run is complete (time for START), and who is in
//! a room to relay to. `T` is how a model reaches a connection (a channel
//! sender for `threads`, a token for `events`).
//!
//! What a HELLO costs is what has arrived, not what it announces: a run's
//! seats are a map filled as connections take them (a HELLO announcing
//! 65,536 seats costs one entry), and a server holds at most `max_runs` runs.

use super::proto::{Relay, MAX_MSG, MIN_MSG};
use std::collections::HashMap;

/// Most connections one run may ask for (a guard against absurd HELLOs).
pub(crate) const MAX_RUN_CONNS: u64 = 1 << 16;

/// Why a HELLO is refused: one line for the server's log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refused {
    #[error("HELLO asks for {rooms} rooms x {users} users (at most {MAX_RUN_CONNS} connections)")]
    TooMany { rooms: u32, users: u32 },
    #[error("HELLO seat room {room} user {user} outside {rooms} x {users}")]
    Outside { room: u32, user: u32, rooms: u32, users: u32 },
    #[error("HELLO asks for messages of {0} bytes ({MIN_MSG} to {MAX_MSG})")]
    Size(u32),
    #[error("the server holds {held} runs already (at most {max})")]
    Full { held: usize, max: usize },
    #[error("HELLO says {said:?} but run {run:x} is {is:?}")]
    Shape { said: Shape, run: u64, is: Shape },
    #[error("run {0:x} has already started")]
    Started(u64),
    #[error("seat room {room} user {user} of run {run:x} is taken")]
    Taken { room: u32, user: u32, run: u64 },
}

/// What a run's HELLOs must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    pub(crate) rooms: u32,
    pub(crate) users: u32,
    /// Message body size.
    pub(crate) size: u32,
    pub(crate) relay: Relay,
    /// TCP_NODELAY on every connection of the run (HELLO's bit 8).
    pub(crate) nodelay: bool,
}

struct Run<T> {
    shape: Shape,
    /// Taken seats by index (`room * users + user`).
    slots: HashMap<u32, T>,
    started: bool,
}

impl<T> Run<T> {
    fn seats(&self) -> usize {
        (self.shape.rooms * self.shape.users) as usize
    }
}

pub(crate) struct Runs<T> {
    map: HashMap<u64, Run<T>>,
    max_runs: usize,
}

/// Where one connection sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Seat {
    pub(crate) run: u64,
    pub(crate) room: u32,
    pub(crate) user: u32,
}

impl<T: Clone> Default for Runs<T> {
    fn default() -> Self {
        Runs::new(usize::MAX)
    }
}

impl<T: Clone> Runs<T> {
    /// A book that holds at most `max_runs` runs at once.
    pub(crate) fn new(max_runs: usize) -> Self {
        Runs { map: HashMap::new(), max_runs }
    }

    /// Seat a connection. `Ok(Some(all))` when it completes the run: every
    /// connection of the run, to send START to. `Err` says why the HELLO is refused.
    pub(crate) fn hello(
        &mut self,
        run: u64,
        shape: Shape,
        room: u32,
        user: u32,
        t: T,
    ) -> Result<Option<Vec<T>>, Refused> {
        let Shape { rooms, users, size, .. } = shape;
        if rooms == 0 || users == 0 || rooms as u64 * users as u64 > MAX_RUN_CONNS {
            return Err(Refused::TooMany { rooms, users });
        }
        if room >= rooms || user >= users {
            return Err(Refused::Outside { room, user, rooms, users });
        }
        if !(MIN_MSG as u32..=MAX_MSG as u32).contains(&size) {
            return Err(Refused::Size(size));
        }
        if !self.map.contains_key(&run) && self.map.len() >= self.max_runs {
            return Err(Refused::Full { held: self.map.len(), max: self.max_runs });
        }
        let r = self.map.entry(run).or_insert_with(|| Run { shape, slots: HashMap::new(), started: false });
        if r.shape != shape {
            return Err(Refused::Shape { said: shape, run, is: r.shape });
        }
        if r.started {
            return Err(Refused::Started(run));
        }
        let i = room * users + user;
        if r.slots.contains_key(&i) {
            return Err(Refused::Taken { room, user, run });
        }
        r.slots.insert(i, t);
        if r.slots.len() == r.seats() {
            r.started = true;
            let mut all: Vec<(u32, T)> = r.slots.iter().map(|(&i, t)| (i, t.clone())).collect();
            all.sort_unstable_by_key(|&(i, _)| i);
            return Ok(Some(all.into_iter().map(|(_, t)| t).collect()));
        }
        Ok(None)
    }

    /// Everyone else still seated in the seat's room, once the run has started.
    pub(crate) fn peers(&self, seat: Seat) -> Option<Vec<T>> {
        let r = self.map.get(&seat.run)?;
        if !r.started {
            return None;
        }
        let users = r.shape.users;
        let base = seat.room * users;
        Some((0..users).filter(|&u| u != seat.user).filter_map(|u| r.slots.get(&(base + u)).cloned()).collect())
    }

    /// Visit everyone else seated in the room (no allocation); false if the
    /// run has not started.
    pub(crate) fn for_peers(&self, seat: Seat, mut f: impl FnMut(&T)) -> bool {
        let Some(r) = self.map.get(&seat.run) else {
            return false;
        };
        if !r.started {
            return false;
        }
        let users = r.shape.users;
        let base = seat.room * users;
        for u in 0..users {
            if u != seat.user {
                if let Some(t) = r.slots.get(&(base + u)) {
                    f(t);
                }
            }
        }
        true
    }

    /// A connection closed: free its seat; forget the run when it is empty.
    pub(crate) fn leave(&mut self, seat: Seat) {
        if let Some(r) = self.map.get_mut(&seat.run) {
            r.slots.remove(&(seat.room * r.shape.users + seat.user));
            if r.slots.is_empty() {
                self.map.remove(&seat.run);
            }
        }
    }

    /// Visit every connection still seated in run `run`; how many there were.
    pub(crate) fn for_run(&self, run: u64, mut f: impl FnMut(&T)) -> u32 {
        let Some(r) = self.map.get(&run) else {
            return 0;
        };
        let mut n = 0;
        for t in r.slots.values() {
            f(t);
            n += 1;
        }
        n
    }

    #[cfg(test)]
    pub(crate) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_start_relay_and_leave() {
        let mut r: Runs<u32> = Runs::default();
        let sh = |rooms, users| Shape { rooms, users, size: 100, relay: Relay::Each, nodelay: false };
        assert!(r.hello(7, sh(2, 2), 2, 0, 9).is_err());
        assert!(r.hello(7, sh(70000, 70000), 0, 0, 9).is_err());
        assert!(r.hello(7, Shape { size: 7, ..sh(2, 2) }, 0, 0, 9).is_err(), "message too small");
        assert_eq!(r.hello(7, sh(2, 2), 0, 0, 10), Ok(None));
        assert!(r.hello(7, sh(2, 2), 0, 0, 11).is_err(), "seat taken");
        assert!(r.hello(7, sh(3, 2), 0, 1, 11).is_err(), "shape differs");
        assert!(r.hello(7, Shape { relay: Relay::Batched, ..sh(2, 2) }, 0, 1, 11).is_err(), "relay differs");
        assert!(r.hello(7, Shape { nodelay: true, ..sh(2, 2) }, 0, 1, 11).is_err(), "nodelay differs");
        assert!(r.peers(Seat { run: 7, room: 0, user: 0 }).is_none(), "not started");
        assert_eq!(r.hello(7, sh(2, 2), 0, 1, 11), Ok(None));
        assert_eq!(r.hello(7, sh(2, 2), 1, 0, 12), Ok(None));
        assert_eq!(r.hello(7, sh(2, 2), 1, 1, 13).unwrap().unwrap().len(), 4);
        assert_eq!(r.peers(Seat { run: 7, room: 1, user: 1 }), Some(vec![12]));
        let mut sum = 0;
        assert_eq!(r.for_run(7, |t| sum += t), 4);
        assert_eq!(sum, 10 + 11 + 12 + 13);
        assert_eq!(r.for_run(8, |_| ()), 0);
        for (room, user) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            r.leave(Seat { run: 7, room, user });
        }
        assert!(r.is_empty());
    }

    #[test]
    fn runs_are_capped_and_cost_what_arrives() {
        let mut r: Runs<u32> = Runs::new(2);
        let big = Shape { rooms: 256, users: 256, size: 100, relay: Relay::Each, nodelay: false };
        assert_eq!(r.hello(1, big, 0, 0, 1), Ok(None));
        assert_eq!(r.hello(2, big, 0, 0, 2), Ok(None));
        let e = r.hello(3, big, 0, 0, 3).unwrap_err().to_string();
        assert!(e.contains("at most 2"), "{e}");
        assert_eq!(r.hello(1, big, 0, 1, 4), Ok(None), "a run already held still seats");
        assert_eq!(r.map[&1].slots.len(), 2, "two seats taken of 65536 announced");
        r.leave(Seat { run: 2, room: 0, user: 0 });
        assert_eq!(r.hello(3, big, 0, 0, 3), Ok(None), "room again once a run ends");
    }
}
