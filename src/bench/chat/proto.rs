//! The chat wire protocol, spoken by the client and by both server models.
//!
//! Every frame is a 4-byte big-endian length `L` (1..=[`MAX_FRAME`]) followed
//! by `L` bytes: one type byte and a body whose size the type fixes.
//!
//! | type | name  | direction       | body |
//! |------|-------|-----------------|------|
//! | 1    | HELLO | client → server | run u64, rooms u32, users u32, room u32, user u32, size u32, relay u32 (32 bytes, big-endian; `relay`: the [`Relay`] code in bits 0-7, bit 8 set for TCP_NODELAY on the connection, see [`relay_field`]) |
//! | 2    | START | server → client | empty |
//! | 3    | MSG   | both            | from u32, seq u32, then filler up to the message size (>= 8 bytes) |
//! | 4    | STATS? | client → server | run u64 |
//! | 5    | STATS | server → client | seats u32, sends u64, recvs u64 |
//!
//! A connection opens with HELLO: it joins user `user` of room `room` of the
//! run `run` (a random id, so several clients may share one server), which
//! has `rooms` rooms of `users` users sending messages of `size` bytes,
//! relayed as `relay` says ([`Relay`]). When all `rooms x users` connections
//! of a run have said HELLO, the server sends START on every one of them.
//! From then on a client sends MSG frames of exactly `size` bytes with
//! `from` = its own user number, and the server relays each frame, byte for
//! byte, to every other user of the same room, in the order it received
//! them. Knowing the size, both sides read one whole message per receive
//! call, as the original did. A client that is done closes its connection.
//!
//! STATS? opens a connection of its own instead of HELLO: the server answers
//! with STATS for the run `run` — how many of its connections are still
//! seated, how many write calls the server made carrying the run's messages
//! (`sends`) and how many receive calls it made reading them (`recvs`) —
//! and the connection may ask again or close. A client asks after its last
//! receiver is done and before it closes its connections, so the counts
//! are complete.
//!
//! Anything else is a protocol error and the server closes that connection
//! (and only that one): a length of 0 or above [`MAX_FRAME`], an unknown type,
//! a body of the wrong size, a second HELLO, HELLO values out of range or
//! contradicting the run's, a MSG before START, of another size than the
//! HELLO's or with someone else's `from`.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::AsRawFd;

/// Largest frame length (type byte + body) accepted.
pub const MAX_FRAME: usize = 64 * 1024;
/// Largest message body (`size` parameter).
pub const MAX_MSG: usize = MAX_FRAME - 1;
/// Smallest message body: sender and sequence number.
pub const MIN_MSG: usize = 8;

pub const T_HELLO: u8 = 1;
pub const T_START: u8 = 2;
pub const T_MSG: u8 = 3;
pub const T_STATS_REQ: u8 = 4;
pub const T_STATS: u8 = 5;
const HELLO_BODY: usize = 32;
const STATS_REQ_BODY: usize = 8;
const STATS_BODY: usize = 20;

crate::model::params::choice! {
    /// How the server relays a run's messages (chosen by the client in HELLO).
    pub enum Relay {
        /// The original's work: each message is written to each other member's
        /// socket with a write of its own, as it is relayed.
        Each = "each",
        /// Not the original's workload: messages for one receiver are gathered
        /// and written many at a time (a 16 KiB buffer per receiver, or whatever
        /// is queued when the socket takes it).
        Batched = "batched",
    }
}

impl Relay {
    pub fn code(self) -> u32 {
        match self {
            Relay::Each => 0,
            Relay::Batched => 1,
        }
    }
    pub fn from_code(c: u32) -> Option<Relay> {
        match c {
            0 => Some(Relay::Each),
            1 => Some(Relay::Batched),
            _ => None,
        }
    }
}

/// Bit 8 of HELLO's `relay` field: the client asks for TCP_NODELAY on its
/// connections, and the server sets it on its side of each. Without it both
/// sides leave Nagle's algorithm on, as the original chat benchmark did.
const NODELAY_BIT: u32 = 1 << 8;

/// HELLO's `relay` field: how the server relays, and whether both sides set
/// TCP_NODELAY.
pub fn relay_field(relay: Relay, nodelay: bool) -> u32 {
    relay.code() | if nodelay { NODELAY_BIT } else { 0 }
}

/// The relay and TCP_NODELAY choice of a HELLO's `relay` field; `None` for an
/// unknown relay code or any other bit set.
pub fn parse_relay_field(v: u32) -> Option<(Relay, bool)> {
    if v & !(NODELAY_BIT | 0xff) != 0 {
        return None;
    }
    Some((Relay::from_code(v & 0xff)?, v & NODELAY_BIT != 0))
}

/// Bytes of a whole MSG frame (length prefix included) of a `size`-byte body.
pub fn msg_frame_len(size: u32) -> usize {
    4 + 1 + (size as usize).clamp(MIN_MSG, MAX_MSG)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    Hello {
        run: u64,
        rooms: u32,
        users: u32,
        room: u32,
        user: u32,
        /// Message body size of the run.
        size: u32,
        /// [`Relay::code`]; any value parses, the server checks it.
        relay: u32,
    },
    Start,
    /// `size` is the body length (sender, sequence and filler).
    Msg {
        from: u32,
        seq: u32,
        size: u32,
    },
    /// STATS?: the counts of run `run`, please.
    StatsRequest {
        run: u64,
    },
    /// The server's counts for a run (see the module text).
    Stats {
        seats: u32,
        sends: u64,
        recvs: u64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("frame length {0} exceeds the maximum of {MAX_FRAME} bytes")]
    TooLong(u64),
    #[error("empty frame (length 0)")]
    Empty,
    #[error("unknown frame type {0}")]
    UnknownType(u8),
    #[error("frame type {kind} with a body of {len} bytes")]
    BadLength { kind: u8, len: usize },
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Parse the bytes after the length prefix (type byte and body).
pub fn parse_body(b: &[u8]) -> Result<Frame, FrameError> {
    let (&kind, body) = b.split_first().ok_or(FrameError::Empty)?;
    match kind {
        T_HELLO if body.len() == HELLO_BODY => Ok(Frame::Hello {
            run: be64(body),
            rooms: be32(&body[8..]),
            users: be32(&body[12..]),
            room: be32(&body[16..]),
            user: be32(&body[20..]),
            size: be32(&body[24..]),
            relay: be32(&body[28..]),
        }),
        T_START if body.is_empty() => Ok(Frame::Start),
        T_MSG if body.len() >= MIN_MSG => {
            Ok(Frame::Msg { from: be32(body), seq: be32(&body[4..]), size: body.len() as u32 })
        }
        T_STATS_REQ if body.len() == STATS_REQ_BODY => Ok(Frame::StatsRequest { run: be64(body) }),
        T_STATS if body.len() == STATS_BODY => {
            Ok(Frame::Stats { seats: be32(body), sends: be64(&body[4..]), recvs: be64(&body[12..]) })
        }
        T_HELLO | T_START | T_MSG | T_STATS_REQ | T_STATS => Err(FrameError::BadLength { kind, len: body.len() }),
        _ => Err(FrameError::UnknownType(kind)),
    }
}

/// Check a length prefix.
pub fn check_len(len: u32) -> Result<usize, FrameError> {
    match len as usize {
        0 => Err(FrameError::Empty),
        n if n > MAX_FRAME => Err(FrameError::TooLong(len as u64)),
        n => Ok(n),
    }
}

/// Decode the first frame of `buf`: `Ok(None)` if it is not complete yet,
/// else the frame and the bytes it took (prefix included). Never panics.
pub fn decode(buf: &[u8]) -> Result<Option<(Frame, usize)>, FrameError> {
    if buf.len() < 4 {
        return Ok(None);
    }
    let len = check_len(be32(buf))?;
    if buf.len() < 4 + len {
        return Ok(None);
    }
    Ok(Some((parse_body(&buf[4..4 + len])?, 4 + len)))
}

/// Append the encoding of `f` to `out`. A MSG is filled with `'.'` up to its
/// `size` (at least [`MIN_MSG`]).
pub fn encode(f: &Frame, out: &mut Vec<u8>) {
    match *f {
        Frame::Hello { run, rooms, users, room, user, size, relay } => {
            out.extend_from_slice(&(1 + HELLO_BODY as u32).to_be_bytes());
            out.push(T_HELLO);
            out.extend_from_slice(&run.to_be_bytes());
            for v in [rooms, users, room, user, size, relay] {
                out.extend_from_slice(&v.to_be_bytes());
            }
        }
        Frame::StatsRequest { run } => {
            out.extend_from_slice(&(1 + STATS_REQ_BODY as u32).to_be_bytes());
            out.push(T_STATS_REQ);
            out.extend_from_slice(&run.to_be_bytes());
        }
        Frame::Stats { seats, sends, recvs } => {
            out.extend_from_slice(&(1 + STATS_BODY as u32).to_be_bytes());
            out.push(T_STATS);
            out.extend_from_slice(&seats.to_be_bytes());
            out.extend_from_slice(&sends.to_be_bytes());
            out.extend_from_slice(&recvs.to_be_bytes());
        }
        Frame::Start => {
            out.extend_from_slice(&1u32.to_be_bytes());
            out.push(T_START);
        }
        Frame::Msg { from, seq, size } => {
            let size = (size as usize).clamp(MIN_MSG, MAX_MSG);
            out.extend_from_slice(&(1 + size as u32).to_be_bytes());
            out.push(T_MSG);
            out.extend_from_slice(&from.to_be_bytes());
            out.extend_from_slice(&seq.to_be_bytes());
            out.resize(out.len() + size - MIN_MSG, b'.');
        }
    }
}

pub fn encoded(f: &Frame) -> Vec<u8> {
    let mut v = Vec::new();
    encode(f, &mut v);
    v
}

/// Read one frame from a blocking stream into `buf` (prefix included, so it
/// can be relayed as is). `Ok(false)` on a clean end of stream before a
/// frame; an error on a bad frame or an end of stream inside one.
pub fn read_frame<R: Read>(r: &mut R, buf: &mut Vec<u8>) -> io::Result<bool> {
    let mut hdr = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        match r.read(&mut hdr[got..]) {
            Ok(0) if got == 0 => return Ok(false),
            Ok(0) => {
                return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a frame header"))
            }
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = check_len(u32::from_be_bytes(hdr)).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    buf.clear();
    buf.extend_from_slice(&hdr);
    buf.resize(4 + len, 0);
    r.read_exact(&mut buf[4..]).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a frame")
        } else {
            e
        }
    })?;
    Ok(true)
}

/// Receive exactly `buf.len()` bytes from a blocking socket with recv(2)
/// and `MSG_WAITALL`, as the original read each message: one call per
/// message, more only when a signal or the socket's receive timeout cuts one
/// short. `calls` counts the calls made. `Ok(false)` on a clean end of stream
/// before any byte; an end of stream inside the buffer is `UnexpectedEof`, a
/// timeout with nothing more received `WouldBlock`.
pub fn recv_whole(s: &TcpStream, buf: &mut [u8], calls: &mut u64) -> io::Result<bool> {
    let fd = s.as_raw_fd();
    let mut got = 0;
    while got < buf.len() {
        *calls += 1;
        let rest = &mut buf[got..];
        // SAFETY: `rest` is valid writable memory of `rest.len()` bytes for
        // the duration of the call, and `fd` is an open socket owned by `s`.
        let n = unsafe { libc::recv(fd, rest.as_mut_ptr().cast(), rest.len(), libc::MSG_WAITALL) };
        match n {
            0 if got == 0 => return Ok(false),
            0 => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a message")),
            n if n > 0 => got += n as usize,
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(true)
}

/// Write all of `buf` to a socket, counting the write calls in `calls`:
/// one for a message, unless the kernel takes only part of it.
pub fn send_whole(s: &TcpStream, buf: &[u8], calls: &mut u64) -> io::Result<()> {
    send_whole_with(s, buf, || *calls += 1)
}

/// [`send_whole`], calling `before_call` before each write call, so a count
/// kept elsewhere is published before the bytes can reach the receiver.
pub fn send_whole_with(mut s: &TcpStream, buf: &[u8], mut before_call: impl FnMut()) -> io::Result<()> {
    let mut at = 0;
    while at < buf.len() {
        before_call();
        match s.write(&buf[at..]) {
            Ok(0) => return Err(io::Error::new(io::ErrorKind::WriteZero, "the socket took no bytes")),
            Ok(n) => at += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Check that `buf` holds one whole MSG frame of a `size`-byte body and
/// parse it.
pub fn parse_msg(buf: &[u8], size: u32) -> Result<Frame, FrameError> {
    let want = msg_frame_len(size);
    if buf.len() < 5 {
        return Err(FrameError::Empty);
    }
    let len = check_len(be32(buf))?;
    if 4 + len != want || buf.len() != want {
        return Err(FrameError::BadLength { kind: buf.get(4).copied().unwrap_or(0), len: len.saturating_sub(1) });
    }
    match parse_body(&buf[4..])? {
        f @ Frame::Msg { .. } => Ok(f),
        _ => Err(FrameError::BadLength { kind: buf[4], len: len - 1 }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame() -> impl Strategy<Value = Frame> {
        prop_oneof![
            (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>())
                .prop_map(|(run, rooms, users, room, user, size, relay)| Frame::Hello {
                    run,
                    rooms,
                    users,
                    room,
                    user,
                    size,
                    relay
                }),
            Just(Frame::Start),
            any::<u64>().prop_map(|run| Frame::StatsRequest { run }),
            (any::<u32>(), any::<u64>(), any::<u64>()).prop_map(|(seats, sends, recvs)| Frame::Stats {
                seats,
                sends,
                recvs
            }),
            (any::<u32>(), any::<u32>(), MIN_MSG as u32..=MAX_MSG as u32).prop_map(|(from, seq, size)| Frame::Msg {
                from,
                seq,
                size
            }),
        ]
    }

    proptest! {
        #[test]
        fn round_trip(fs in proptest::collection::vec(frame(), 1..6)) {
            let mut buf = Vec::new();
            for f in &fs { encode(f, &mut buf); }
            let mut at = 0;
            for f in &fs {
                let (g, n) = decode(&buf[at..]).unwrap().unwrap();
                prop_assert_eq!(&g, f);
                // The blocking reader agrees.
                let mut one = Vec::new();
                prop_assert!(read_frame(&mut &buf[at..at + n], &mut one).unwrap());
                prop_assert_eq!(parse_body(&one[4..]).unwrap(), g);
                at += n;
            }
            prop_assert_eq!(at, buf.len());
        }

        #[test]
        fn prefixes_are_incomplete(f in frame(), cut in 0usize..40) {
            let b = encoded(&f);
            let cut = cut.min(b.len() - 1);
            prop_assert_eq!(decode(&b[..cut]).unwrap(), None);
            let mut one = Vec::new();
            let r = read_frame(&mut &b[..cut], &mut one);
            let ok = if cut == 0 { matches!(r, Ok(false)) } else { r.is_err() };
            prop_assert!(ok);
        }

        #[test]
        fn garbage_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            if let Ok(Some((_, n))) = decode(&b) { prop_assert!(n <= b.len()); }
            let mut one = Vec::new();
            let _ = read_frame(&mut &b[..], &mut one);
        }
    }

    #[test]
    fn the_relay_field_carries_relay_and_nodelay() {
        for r in [Relay::Each, Relay::Batched] {
            for nd in [false, true] {
                assert_eq!(parse_relay_field(relay_field(r, nd)), Some((r, nd)));
            }
        }
        // The original's choice (Nagle on, each message relayed) is code 0, so
        // a HELLO from before the bit existed still means what it meant.
        assert_eq!(parse_relay_field(0), Some((Relay::Each, false)));
        for bad in [2, 0x200, 0x1_0000_0000u64 as u32 | 0x400, u32::MAX] {
            assert_eq!(parse_relay_field(bad), None, "{bad:#x}");
        }
    }

    #[test]
    fn rejects_bad_frames() {
        assert_eq!(decode(&[0, 0, 0, 0]), Err(FrameError::Empty));
        assert_eq!(decode(&(MAX_FRAME as u32 + 1).to_be_bytes()), Err(FrameError::TooLong(MAX_FRAME as u64 + 1)));
        assert_eq!(decode(&[0, 0, 0, 1, 9]), Err(FrameError::UnknownType(9)));
        assert_eq!(decode(&[0, 0, 0, 2, T_START, 0]), Err(FrameError::BadLength { kind: T_START, len: 1 }));
        assert_eq!(decode(&[0, 0, 0, 3, T_MSG, 0, 0]), Err(FrameError::BadLength { kind: T_MSG, len: 2 }));
        let mut one = Vec::new();
        let e = read_frame(&mut &[0xff, 0xff, 0xff, 0xff][..], &mut one).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }
}
