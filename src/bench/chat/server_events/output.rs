//! The events model's output: a relayed message written to a receiver at
//! once or queued whole (`each`), or appended to its buffer (`batched`), and
//! a connection's waiting output flushed when its socket is writable.

use super::*;

impl Server {
    /// `each`: one message to connection `t`, written now with one call if
    /// nothing is waiting there, else queued whole. `counted`: a chat
    /// message (not START or STATS).
    pub(super) fn write_each(&mut self, t: usize, f: &Arc<[u8]>, counted: bool) {
        let mut shared = Some(f.clone());
        self.write_each_inner(t, f, &mut shared, counted);
    }

    pub(super) fn write_each_bytes(&mut self, t: usize, f: &[u8], shared: &mut Option<Arc<[u8]>>) {
        self.write_each_inner(t, f, shared, true);
    }

    pub(super) fn write_each_inner(&mut self, t: usize, f: &[u8], shared: &mut Option<Arc<[u8]>>, counted: bool) {
        let Some(c) = self.conns.get_mut(t).and_then(|c| c.as_mut()) else {
            return;
        };
        let mut done = 0;
        if c.queue.is_empty() {
            loop {
                c.sends += counted as u64;
                match c.sock.write(f) {
                    Ok(0) => return self.broken.push(t),
                    Ok(n) => done = n,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {}
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => return self.broken.push(t),
                }
                break;
            }
            if done == f.len() {
                return;
            }
            c.qpos = done;
        }
        c.out += f.len() - done;
        c.stalled.get_or_insert_with(Instant::now);
        let f = shared.get_or_insert_with(|| f.into()).clone();
        c.queue.push_back((f, counted));
    }

    /// `batched`: append to connection `t`'s buffer, written at the end of
    /// the round.
    pub(super) fn queue_batched(&mut self, t: usize, bytes: &[u8], msg: bool) {
        if let Some(c) = self.conns.get_mut(t).and_then(|c| c.as_mut()) {
            if c.wbuf.len() == c.wpos {
                self.dirty.push(t);
            }
            c.wbuf.extend_from_slice(bytes);
            c.out += bytes.len();
            c.stalled.get_or_insert_with(Instant::now);
            c.wmsgs |= msg;
        }
    }

    /// Write queued output until done or the socket is full: `each` one
    /// message per call, `batched` as much as the socket takes.
    pub(super) fn flush(&mut self, i: usize) {
        let Some(c) = self.conns.get_mut(i).and_then(|c| c.as_mut()) else {
            return;
        };
        let before = c.out;
        while let Some((f, counted)) = c.queue.front() {
            c.sends += *counted as u64;
            match c.sock.write(&f[c.qpos..]) {
                Ok(0) => return self.close(i),
                Ok(n) if c.qpos + n == f.len() => {
                    c.queue.pop_front();
                    c.qpos = 0;
                    c.out -= n;
                }
                Ok(n) => {
                    c.qpos += n;
                    c.out -= n;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.close(i),
            }
        }
        while c.wpos < c.wbuf.len() {
            if c.wmsgs {
                c.sends += 1;
            }
            match c.sock.write(&c.wbuf[c.wpos..]) {
                Ok(0) => return self.close(i),
                Ok(n) => {
                    c.wpos += n;
                    c.out -= n;
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => return self.close(i),
            }
        }
        if c.wpos == c.wbuf.len() {
            c.wbuf.clear();
            c.wpos = 0;
            c.wmsgs = false;
            if c.wbuf.capacity() > (256 << 10) {
                c.wbuf.shrink_to(16 << 10);
            }
        } else if c.wpos > (1 << 20) {
            c.wbuf.drain(..c.wpos);
            c.wpos = 0;
        }
        if c.out < before {
            // Taken: the write timeout starts again, and the room's senders
            // may be read once this receiver is under half the limit.
            c.stalled = (c.out > 0).then(Instant::now);
            if c.out <= self.guard.limits.out_bytes / 2 && !self.paused.is_empty() {
                self.resume = true;
            }
        }
    }
}
