//! The server's book of runs and rooms, shared by both server models: who
//! said HELLO where, when a run is complete (time for START), and who is in
//! a room to relay to. `T` is how a model reaches a connection (a channel
//! sender for `threads`, a token for `events`).

use super::proto::{Relay, MAX_MSG, MIN_MSG};
use std::collections::HashMap;

/// Most connections one run may ask for (a guard against absurd HELLOs).
pub const MAX_RUN_CONNS: u64 = 1 << 16;

/// What a run's HELLOs must agree on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub rooms: u32,
    pub users: u32,
    /// Message body size.
    pub size: u32,
    pub relay: Relay,
}

struct Run<T> {
    shape: Shape,
    slots: Vec<Option<T>>,
    joined: usize,
    started: bool,
}

pub struct Runs<T> {
    map: HashMap<u64, Run<T>>,
}

/// Where one connection sits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seat {
    pub run: u64,
    pub room: u32,
    pub user: u32,
}

impl<T: Clone> Default for Runs<T> {
    fn default() -> Self {
        Runs { map: HashMap::new() }
    }
}

impl<T: Clone> Runs<T> {
    /// Seat a connection. `Ok(Some(all))` when it completes the run: every
    /// connection of the run, to send START to. `Err` says why the HELLO is refused.
    pub fn hello(&mut self, run: u64, shape: Shape, room: u32, user: u32, t: T) -> Result<Option<Vec<T>>, String> {
        let Shape { rooms, users, size, .. } = shape;
        if rooms == 0 || users == 0 || rooms as u64 * users as u64 > MAX_RUN_CONNS {
            return Err(format!("HELLO asks for {rooms} rooms x {users} users (at most {MAX_RUN_CONNS} connections)"));
        }
        if room >= rooms || user >= users {
            return Err(format!("HELLO seat room {room} user {user} outside {rooms} x {users}"));
        }
        if !(MIN_MSG as u32..=MAX_MSG as u32).contains(&size) {
            return Err(format!("HELLO asks for messages of {size} bytes ({MIN_MSG} to {MAX_MSG})"));
        }
        let r = self.map.entry(run).or_insert_with(|| Run { shape, slots: vec![None; (rooms * users) as usize], joined: 0, started: false });
        if r.shape != shape {
            return Err(format!("HELLO says {shape:?} but run {run:x} is {:?}", r.shape));
        }
        if r.started {
            return Err(format!("run {run:x} has already started"));
        }
        let i = (room * users + user) as usize;
        if r.slots[i].is_some() {
            return Err(format!("seat room {room} user {user} of run {run:x} is taken"));
        }
        r.slots[i] = Some(t);
        r.joined += 1;
        if r.joined == r.slots.len() {
            r.started = true;
            return Ok(Some(r.slots.iter().flatten().cloned().collect()));
        }
        Ok(None)
    }

    /// Everyone else still seated in the seat's room, once the run has started.
    pub fn peers(&self, seat: Seat) -> Option<Vec<T>> {
        let r = self.map.get(&seat.run)?;
        if !r.started {
            return None;
        }
        let users = r.shape.users;
        let base = (seat.room * users) as usize;
        Some((0..users).filter(|&u| u != seat.user).filter_map(|u| r.slots[base + u as usize].clone()).collect())
    }

    /// Visit everyone else seated in the room (no allocation); false if the
    /// run has not started.
    pub fn for_peers(&self, seat: Seat, mut f: impl FnMut(&T)) -> bool {
        let Some(r) = self.map.get(&seat.run) else {
            return false;
        };
        if !r.started {
            return false;
        }
        let users = r.shape.users;
        let base = (seat.room * users) as usize;
        for u in 0..users {
            if u != seat.user {
                if let Some(t) = &r.slots[base + u as usize] {
                    f(t);
                }
            }
        }
        true
    }

    /// A connection closed: free its seat; forget the run when it is empty.
    pub fn leave(&mut self, seat: Seat) {
        if let Some(r) = self.map.get_mut(&seat.run) {
            let i = (seat.room * r.shape.users + seat.user) as usize;
            if r.slots.get_mut(i).and_then(|s| s.take()).is_some() {
                r.joined -= 1;
            }
            if r.joined == 0 {
                self.map.remove(&seat.run);
            }
        }
    }

    /// Visit every connection still seated in run `run`; how many there were.
    pub fn for_run(&self, run: u64, mut f: impl FnMut(&T)) -> u32 {
        let Some(r) = self.map.get(&run) else {
            return 0;
        };
        let mut n = 0;
        for t in r.slots.iter().flatten() {
            f(t);
            n += 1;
        }
        n
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seats_start_relay_and_leave() {
        let mut r: Runs<u32> = Runs::default();
        let sh = |rooms, users| Shape { rooms, users, size: 100, relay: Relay::Each };
        assert!(r.hello(7, sh(2, 2), 2, 0, 9).is_err());
        assert!(r.hello(7, sh(70000, 70000), 0, 0, 9).is_err());
        assert!(r.hello(7, Shape { size: 7, ..sh(2, 2) }, 0, 0, 9).is_err(), "message too small");
        assert_eq!(r.hello(7, sh(2, 2), 0, 0, 10), Ok(None));
        assert!(r.hello(7, sh(2, 2), 0, 0, 11).is_err(), "seat taken");
        assert!(r.hello(7, sh(3, 2), 0, 1, 11).is_err(), "shape differs");
        assert!(r.hello(7, Shape { relay: Relay::Batched, ..sh(2, 2) }, 0, 1, 11).is_err(), "relay differs");
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
}
