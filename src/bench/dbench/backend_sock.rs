//! tbench's client side: each loadfile operation becomes one synchronous
//! request/reply exchange with the server, sized as dbench's socket backend
//! (`sockio.c`) sizes them. No file is touched; statuses are not checked.
//!
//! Sizes are whole frames including the 4-byte length word. `L` is the length
//! of the name dbench would use (`./clients/clientN/...`, see
//! [`SharePath::dbench_name_len`](super::loadfile::SharePath::dbench_name_len)).
//!
//! | operation | request bytes | reply bytes |
//! |---|---|---|
//! | connection set-up | 8 | 8 |
//! | NTCreateX | 70 + 2 + 2L + 2 | 39 + 48 |
//! | Close | 39 + 8 | 39 |
//! | Rename | 39 + 8 + 2L(old) + 2L(new) | 39 |
//! | Unlink, Mkdir, Rmdir | 39 + 2 + 2L + 2 | 39 |
//! | Deltree | no exchange | |
//! | QUERY_PATH_INFORMATION | 39 + 16 + 2L | 39 + 32 |
//! | QUERY_FILE_INFORMATION, QUERY_FS_INFORMATION | 39 + 20 | 39 + 32 |
//! | SET_FILE_INFORMATION | 39 + 32 | 39 + 8 |
//! | FIND_FIRST | 39 + 20 + 2L | 39 + 90 × count |
//! | WriteX | 39 + 20 + size | 39 + 16 |
//! | ReadX | 39 + 20 | 39 + 20 + returned size |
//! | LockX, UnlockX | 39 + 12 | 39 |
//! | Flush | 39 + 2 | 39 |
//!
//! Bytes counted for the throughput, as tbench: `size` of every WriteX and the
//! returned size of every ReadX. A closed connection, a reply of the wrong
//! size or no reply within [`REPLY_LIMIT`] ends the run with an error naming
//! the server.

use super::loadfile::{Op, OpKind};
use super::runner::{Backend, Outcome};
use anyhow::{anyhow, bail, Result};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// No reply within this long: the server is taken as lost.
pub(crate) const REPLY_LIMIT: Duration = Duration::from_secs(15);
const CONNECT_LIMIT: Duration = Duration::from_secs(5);

pub(crate) struct SockClient {
    n: usize,
    server: String,
    stream: TcpStream,
    sbuf: Vec<u8>,
    rbuf: Vec<u8>,
}

/// Resolve the `server` parameter (`HOST:PORT`) with [`crate::sys::net::resolve_all`].
pub(crate) fn resolve(server: &str) -> Result<Vec<SocketAddr>> {
    crate::sys::net::resolve_all("server", server)
}

impl SockClient {
    /// Connect client `n` to `server` and do the set-up exchange.
    pub(crate) fn connect(n: usize, server: &str) -> Result<SockClient> {
        let mut last = None;
        let mut stream = None;
        for a in resolve(server)? {
            match TcpStream::connect_timeout(&a, CONNECT_LIMIT) {
                Ok(s) => {
                    stream = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let stream = stream.ok_or_else(|| {
            anyhow!(
                "cannot connect to the tbench server at {server}: {}",
                last.map(|e| e.to_string()).unwrap_or_default()
            )
        })?;
        stream.set_nodelay(true)?;
        stream.set_read_timeout(Some(REPLY_LIMIT))?;
        stream.set_write_timeout(Some(REPLY_LIMIT))?;
        let mut c = SockClient { n, server: server.to_string(), stream, sbuf: Vec::new(), rbuf: vec![0u8; 64 << 10] };
        c.packet(8, 8)?;
        Ok(c)
    }

    fn lost(&self, e: io::Error) -> anyhow::Error {
        match e.kind() {
            io::ErrorKind::UnexpectedEof
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionAborted => {
                anyhow!("the tbench server at {} closed the connection (server lost?)", self.server)
            }
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                anyhow!("the tbench server at {} did not answer within {} s", self.server, REPLY_LIMIT.as_secs())
            }
            _ => anyhow!("connection to the tbench server at {}: {e}", self.server),
        }
    }

    /// One exchange: send `send` bytes asking for `recv` bytes back.
    pub(crate) fn packet(&mut self, send: usize, recv: usize) -> Result<()> {
        if self.sbuf.len() < send {
            self.sbuf.resize(send, 0);
        }
        self.sbuf[..4].copy_from_slice(&((send - 4) as u32).to_be_bytes());
        self.sbuf[4..8].copy_from_slice(&((recv - 4) as u32).to_be_bytes());
        if let Err(e) = self.stream.write_all(&self.sbuf[..send]) {
            return Err(self.lost(e));
        }
        // Read what arrives (usually the whole reply at once), check the
        // length word, then the rest.
        let mut got = 0;
        while got < 4 {
            let cap = recv.min(self.rbuf.len());
            match self.stream.read(&mut self.rbuf[got..cap]) {
                Ok(0) => return Err(self.lost(io::ErrorKind::UnexpectedEof.into())),
                Ok(k) => got += k,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.lost(e)),
            }
        }
        let announced = u32::from_be_bytes(self.rbuf[..4].try_into().unwrap()) as usize;
        if announced != recv - 4 {
            bail!(
                "lost sync with the tbench server at {}: expected a {}-byte reply, it announced {}",
                self.server,
                recv - 4,
                announced
            );
        }
        let mut left = recv - got;
        while left > 0 {
            let k = left.min(self.rbuf.len());
            if let Err(e) = self.stream.read_exact(&mut self.rbuf[..k]) {
                return Err(self.lost(e));
            }
            left -= k;
        }
        Ok(())
    }
}

/// (request, reply, counted bytes) for one operation of client `n`; `None`
/// for operations without an exchange.
pub(crate) fn frame_sizes(op: &OpKind, n: usize) -> Option<(usize, usize, u64)> {
    Some(match op {
        OpKind::NtCreateX { path, .. } => (70 + 2 + 2 * path.dbench_name_len(n) + 2, 39 + 12 * 4, 0),
        OpKind::Close { .. } => (39 + 8, 39, 0),
        OpKind::Rename { old, new } => (39 + 8 + 2 * old.dbench_name_len(n) + 2 * new.dbench_name_len(n), 39, 0),
        OpKind::Unlink { path, .. } | OpKind::Mkdir { path } | OpKind::Rmdir { path } => {
            (39 + 2 + 2 * path.dbench_name_len(n) + 2, 39, 0)
        }
        OpKind::Deltree { .. } => return None,
        OpKind::QueryPathInfo { path, .. } => (39 + 16 + 2 * path.dbench_name_len(n), 39 + 32, 0),
        OpKind::QueryFileInfo { .. } | OpKind::QueryFsInfo { .. } => (39 + 20, 39 + 32, 0),
        OpKind::SetFileInfo { .. } => (39 + 32, 39 + 8, 0),
        OpKind::FindFirst { pattern, count, .. } => {
            (39 + 20 + 2 * pattern.dbench_name_len(n), 39 + 90 * *count as usize, 0)
        }
        OpKind::WriteX { size, .. } => (39 + 20 + *size as usize, 39 + 16, *size as u64),
        OpKind::ReadX { ret_size, .. } => (39 + 20, 39 + 20 + *ret_size as usize, *ret_size as u64),
        OpKind::LockX { .. } | OpKind::UnlockX { .. } => (39 + 12, 39, 0),
        OpKind::Flush { .. } => (39 + 2, 39, 0),
    })
}

impl Backend for SockClient {
    fn reset(&mut self) {}

    fn checks_status(&self) -> bool {
        false
    }

    fn exec(&mut self, op: &Op) -> Result<Outcome> {
        let Some((send, recv, bytes)) = frame_sizes(&op.kind, self.n) else {
            return Ok(Outcome { ok: true, bytes: 0, why: None });
        };
        self.packet(send, recv).map_err(|e| anyhow!("line {}: {}: {e:#}", op.line, op.kind.name()))?;
        Ok(Outcome { ok: true, bytes, why: None })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::dbench::loadfile::parse_line;

    #[test]
    fn sizes_follow_dbench() {
        let k = |l: &str| parse_line(l, 1).unwrap().unwrap().kind;
        assert_eq!(frame_sizes(&k("ReadX 1 0 4096 4000 NT_STATUS_OK"), 1), Some((59, 59 + 4000, 4000)));
        assert_eq!(frame_sizes(&k("WriteX 1 0 4096 4096 NT_STATUS_OK"), 1), Some((59 + 4096, 55, 4096)));
        // "./clients/client12/a" is 20 bytes.
        assert_eq!(
            frame_sizes(&k(r#"NTCreateX "\clients\client1\a" 0x40 0x1 1 NT_STATUS_OK"#), 12),
            Some((74 + 40, 87, 0))
        );
        assert_eq!(
            frame_sizes(&k(r#"FIND_FIRST "\clients\client1\*" 260 1366 11 NT_STATUS_OK"#), 1),
            Some((59 + 2 * 19, 39 + 990, 0))
        );
        assert_eq!(frame_sizes(&k(r#"Deltree "\clients\client1" NT_STATUS_OK"#), 1), None);
    }

    #[test]
    fn lost_server_is_a_clear_error() {
        let s = crate::bench::dbench::server::LocalServer::start(true).unwrap();
        let addr = s.addr().to_string();
        let mut c = SockClient::connect(1, &addr).unwrap();
        c.packet(59, 59 + 1000).unwrap();
        drop(s);
        let e = c.packet(59, 59 + 1000).unwrap_err().to_string();
        assert!(e.contains("closed the connection"), "{e}");
        // Nobody listening any more.
        let e = SockClient::connect(1, &addr).err().unwrap().to_string();
        assert!(e.contains("cannot connect"), "{e}");
    }
}
