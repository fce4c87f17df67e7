//! The chat wire protocol, spoken by the client and by both server models.
//!
//! Every frame is a 4-byte big-endian length `L` (1..=[`MAX_FRAME`]) followed
//! by `L` bytes: one type byte and a body whose size the type fixes.
//!
//! | type | name  | direction       | body |
//! |------|-------|-----------------|------|
//! | 1    | HELLO | client → server | run u64, rooms u32, users u32, room u32, user u32 (24 bytes, big-endian) |
//! | 2    | START | server → client | empty |
//! | 3    | MSG   | both            | from u32, seq u32, then filler up to the message size (>= 8 bytes) |
//!
//! A connection opens with HELLO: it joins user `user` of room `room` of the
//! run `run` (a random id, so several clients may share one server), which
//! has `rooms` rooms of `users` users. When all `rooms x users` connections of
//! a run have said HELLO, the server sends START on every one of them. From
//! then on a client sends MSG frames with `from` = its own user number, and
//! the server relays each frame, byte for byte, to every other user of the
//! same room, in the order it received them. A client that is done closes
//! its connection.
//!
//! Anything else is a protocol error and the server closes that connection
//! (and only that one): a length of 0 or above [`MAX_FRAME`], an unknown type,
//! a body of the wrong size, a second HELLO, HELLO values out of range or
//! contradicting the run's, a MSG before START or with someone else's `from`.

use std::io::{self, Read};

/// Largest frame length (type byte + body) accepted.
pub const MAX_FRAME: usize = 64 * 1024;
/// Largest message body (`size` parameter).
pub const MAX_MSG: usize = MAX_FRAME - 1;
/// Smallest message body: sender and sequence number.
pub const MIN_MSG: usize = 8;

pub const T_HELLO: u8 = 1;
pub const T_START: u8 = 2;
pub const T_MSG: u8 = 3;
const HELLO_BODY: usize = 24;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    Hello {
        run: u64,
        rooms: u32,
        users: u32,
        room: u32,
        user: u32,
    },
    Start,
    /// `size` is the body length (sender, sequence and filler).
    Msg {
        from: u32,
        seq: u32,
        size: u32,
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

/// Parse the bytes after the length prefix (type byte and body).
pub fn parse_body(b: &[u8]) -> Result<Frame, FrameError> {
    let (&kind, body) = b.split_first().ok_or(FrameError::Empty)?;
    match kind {
        T_HELLO if body.len() == HELLO_BODY => Ok(Frame::Hello {
            run: u64::from_be_bytes(body[0..8].try_into().expect("8 bytes")),
            rooms: be32(&body[8..]),
            users: be32(&body[12..]),
            room: be32(&body[16..]),
            user: be32(&body[20..]),
        }),
        T_START if body.is_empty() => Ok(Frame::Start),
        T_MSG if body.len() >= MIN_MSG => Ok(Frame::Msg { from: be32(body), seq: be32(&body[4..]), size: body.len() as u32 }),
        T_HELLO | T_START | T_MSG => Err(FrameError::BadLength { kind, len: body.len() }),
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
        Frame::Hello { run, rooms, users, room, user } => {
            out.extend_from_slice(&(1 + HELLO_BODY as u32).to_be_bytes());
            out.push(T_HELLO);
            out.extend_from_slice(&run.to_be_bytes());
            for v in [rooms, users, room, user] {
                out.extend_from_slice(&v.to_be_bytes());
            }
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
            Ok(0) => return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed inside a frame header")),
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frame() -> impl Strategy<Value = Frame> {
        prop_oneof![
            (any::<u64>(), any::<u32>(), any::<u32>(), any::<u32>(), any::<u32>()).prop_map(|(run, rooms, users, room, user)| Frame::Hello {
                run,
                rooms,
                users,
                room,
                user
            }),
            Just(Frame::Start),
            (any::<u32>(), any::<u32>(), MIN_MSG as u32..=MAX_MSG as u32).prop_map(|(from, seq, size)| Frame::Msg { from, seq, size }),
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
