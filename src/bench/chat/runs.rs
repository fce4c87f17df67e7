//! The server's book of runs and rooms, shared by both server models: who
//! said HELLO where, when a run is complete (time for START), and who is in
//! a room to relay to. `T` is how a model reaches a connection (a channel
//! sender for `threads`, a token for `events`).

use std::collections::HashMap;

/// Most connections one run may ask for (a guard against absurd HELLOs).
pub const MAX_RUN_CONNS: u64 = 1 << 16;

struct Run<T> {
    rooms: u32,
    users: u32,
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
    pub fn hello(&mut self, run: u64, rooms: u32, users: u32, room: u32, user: u32, t: T) -> Result<Option<Vec<T>>, String> {
        if rooms == 0 || users == 0 || rooms as u64 * users as u64 > MAX_RUN_CONNS {
            return Err(format!("HELLO asks for {rooms} rooms x {users} users (at most {MAX_RUN_CONNS} connections)"));
        }
        if room >= rooms || user >= users {
            return Err(format!("HELLO seat room {room} user {user} outside {rooms} x {users}"));
        }
        let r = self.map.entry(run).or_insert_with(|| Run { rooms, users, slots: vec![None; (rooms * users) as usize], joined: 0, started: false });
        if r.rooms != rooms || r.users != users {
            return Err(format!("HELLO says {rooms} x {users} but run {run:x} is {} x {}", r.rooms, r.users));
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
        let base = (seat.room * r.users) as usize;
        Some((0..r.users).filter(|&u| u != seat.user).filter_map(|u| r.slots[base + u as usize].clone()).collect())
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
        let base = (seat.room * r.users) as usize;
        for u in 0..r.users {
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
            let i = (seat.room * r.users + seat.user) as usize;
            if r.slots.get_mut(i).and_then(|s| s.take()).is_some() {
                r.joined -= 1;
            }
            if r.joined == 0 {
                self.map.remove(&seat.run);
            }
        }
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
        assert!(r.hello(7, 2, 2, 2, 0, 9).is_err());
        assert!(r.hello(7, 70000, 70000, 0, 0, 9).is_err());
        assert_eq!(r.hello(7, 2, 2, 0, 0, 10), Ok(None));
        assert!(r.hello(7, 2, 2, 0, 0, 11).is_err(), "seat taken");
        assert!(r.hello(7, 3, 2, 0, 1, 11).is_err(), "shape differs");
        assert!(r.peers(Seat { run: 7, room: 0, user: 0 }).is_none(), "not started");
        assert_eq!(r.hello(7, 2, 2, 0, 1, 11), Ok(None));
        assert_eq!(r.hello(7, 2, 2, 1, 0, 12), Ok(None));
        assert_eq!(r.hello(7, 2, 2, 1, 1, 13).unwrap().unwrap().len(), 4);
        assert_eq!(r.peers(Seat { run: 7, room: 1, user: 1 }), Some(vec![12]));
        for (room, user) in [(0, 0), (0, 1), (1, 0), (1, 1)] {
            r.leave(Seat { run: 7, room, user });
        }
        assert!(r.is_empty());
    }
}
