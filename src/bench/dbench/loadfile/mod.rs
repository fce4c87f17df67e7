//! The dbench 3.x/4.x loadfile format: parsing and validation.
//!
//! One operation per line: `[timestamp] OpName args... STATUS`. Tokens are
//! split on blanks; double quotes group a token (the quotes are dropped); every
//! `\` is read as `/` (dbench does the same substitution on the whole line).
//! Blank lines and lines whose first token starts with `#` are skipped. A
//! first token starting with a digit is a timestamp in seconds since the start
//! of the pass (dbench sleeps until it; so does kdelta). The last token is the
//! expected status: `NT_STATUS_*`, `0x...` (zero is success), `SUCCESS`,
//! `ERROR` or `*` (anything).
//!
//! Numbers are decimal or `0x` hexadecimal (dbench's `strtol(s, 0, 0)` would
//! also read a leading `0` as octal; no known loadfile relies on that).
//!
//! # Paths and the client's directory
//!
//! dbench prefixes every path with its base directory and replaces `client1`
//! with `clientN`, so client N of a loadfile written for `\clients\client1`
//! works in `BASE/clients/clientN`. kdelta keeps that layout and enforces
//! it: after `\`→`/` and lexical `.`/`..` resolution (a leading `/` is
//! optional, as dbench strips it from unquoted tokens), a path must be
//!
//! * `/clients/client1` or below it: client N's own directory
//!   `BASE/clients/clientN` (the first two components are replaced, the rest
//!   kept as written); or
//! * one of its ancestors `/` or `/clients` (`BASE`, `BASE/clients`, shared by
//!   the clients and created by kdelta before the run), and then only for
//!   operations that cannot change them: `Mkdir`, `NTCreateX` of a directory,
//!   `QUERY_PATH_INFORMATION` and `FIND_FIRST`.
//!
//! That check is lexical: a symbolic link in the tree could still lead out
//! of it, so the file backend resolves every name beneath the tree without
//! following any link ([`super::backend_fs`]).
//!
//! Anything else (another client's directory, `/etc/passwd`, a `..` that
//! climbs out of the client's directory) is refused when the file is loaded,
//! before anything runs.
//!
//! The whole file is parsed and checked before a run; an error names the file,
//! the line and what was expected there.

mod parse;

pub use parse::parse_line;
use std::fmt;
use std::path::Path;

/// Largest ReadX/WriteX size accepted (SMB2's largest I/O; SMB1 traces stay
/// at 64 KiB). Keeps buffers and tbench frames bounded.
pub(crate) const MAX_IO: u64 = 8 << 20;
/// Largest FIND_FIRST reply count accepted (tbench replies 90 bytes per entry).
pub(crate) const MAX_FIND_COUNT: u64 = 65_535;
/// Longest path accepted, in bytes.
pub(crate) const MAX_PATH: usize = 4096;
/// Most tokens on one operation's line (the longest takes a timestamp, the
/// name, four arguments and a status: 7). The file is bounded in bytes
/// ([`MAX_BYTES`]); this bounds a line's tokens, so a 60 MB line of one-letter
/// tokens costs no more than its bytes (it once cost 1-2 GB of `String`s).
pub(crate) const MAX_TOKENS: usize = 16;

/// The expected outcome of one operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// `NT_STATUS_OK`, `SUCCESS` or a zero `0x...`.
    Ok(String),
    /// Any other `NT_STATUS_*`, `ERROR` or a non-zero `0x...`.
    Fail(String),
    /// `*`: not checked.
    Any,
}

impl Status {
    pub(crate) fn text(&self) -> &str {
        match self {
            Status::Ok(s) | Status::Fail(s) => s,
            Status::Any => "*",
        }
    }
    /// Does an outcome (`true` = the operation succeeded) match?
    pub(crate) fn matches(&self, ok: bool) -> bool {
        match self {
            Status::Ok(_) => ok,
            Status::Fail(_) => !ok,
            Status::Any => true,
        }
    }
}

/// Where a path lies (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Place {
    /// `/`: the base directory.
    Root,
    /// `/clients`: the parent of the clients' directories.
    Clients,
    /// In the client's directory; the components below it (empty: the
    /// directory itself).
    Client(Vec<String>),
}

/// A loadfile path, resolved and confined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SharePath {
    pub(crate) place: Place,
}

impl SharePath {
    /// The path relative to the base directory for client `n` (1-based),
    /// as dbench would name it (`clients/client7/~dmtmp/x`).
    pub(crate) fn relative(&self, n: usize) -> String {
        match &self.place {
            Place::Root => String::new(),
            Place::Clients => "clients".to_string(),
            Place::Client(rest) => {
                let mut s = format!("clients/client{n}");
                for c in rest {
                    s.push('/');
                    s.push_str(c);
                }
                s
            }
        }
    }
    /// Length of the name dbench's socket backend sizes its packets with:
    /// its directory (`.`) followed by `/` and [`relative`](Self::relative).
    pub(crate) fn dbench_name_len(&self, n: usize) -> usize {
        let r = self.relative(n);
        if r.is_empty() {
            1
        } else {
            2 + r.len()
        }
    }
    /// The last component (for FIND_FIRST patterns).
    pub(crate) fn last(&self) -> Option<&str> {
        match &self.place {
            Place::Client(rest) => rest.last().map(|s| s.as_str()),
            _ => None,
        }
    }
    fn is_ancestor(&self) -> bool {
        !matches!(self.place, Place::Client(_))
    }
}

/// One operation and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpKind {
    NtCreateX { path: SharePath, options: u32, disposition: u32, handle: u32 },
    Close { handle: u32 },
    Rename { old: SharePath, new: SharePath },
    Unlink { path: SharePath, attr: u32 },
    Deltree { path: SharePath },
    Rmdir { path: SharePath },
    Mkdir { path: SharePath },
    QueryPathInfo { path: SharePath, level: u32 },
    QueryFileInfo { handle: u32, level: u32 },
    QueryFsInfo { level: u32 },
    SetFileInfo { handle: u32, level: u32 },
    FindFirst { pattern: SharePath, level: u32, maxcnt: u32, count: u32 },
    WriteX { handle: u32, offset: u64, size: u32, ret_size: u32 },
    ReadX { handle: u32, offset: u64, size: u32, ret_size: u32 },
    LockX { handle: u32, offset: u64, size: u64 },
    UnlockX { handle: u32, offset: u64, size: u64 },
    Flush { handle: u32 },
}

/// The operation names, in the order statistics are reported.
pub(crate) const OP_NAMES: [&str; 17] = [
    "NTCreateX",
    "Close",
    "Rename",
    "Unlink",
    "Deltree",
    "Rmdir",
    "Mkdir",
    "QUERY_PATH_INFORMATION",
    "QUERY_FILE_INFORMATION",
    "QUERY_FS_INFORMATION",
    "SET_FILE_INFORMATION",
    "FIND_FIRST",
    "WriteX",
    "ReadX",
    "LockX",
    "UnlockX",
    "Flush",
];

impl OpKind {
    /// Index into [`OP_NAMES`].
    pub(crate) fn index(&self) -> usize {
        match self {
            OpKind::NtCreateX { .. } => 0,
            OpKind::Close { .. } => 1,
            OpKind::Rename { .. } => 2,
            OpKind::Unlink { .. } => 3,
            OpKind::Deltree { .. } => 4,
            OpKind::Rmdir { .. } => 5,
            OpKind::Mkdir { .. } => 6,
            OpKind::QueryPathInfo { .. } => 7,
            OpKind::QueryFileInfo { .. } => 8,
            OpKind::QueryFsInfo { .. } => 9,
            OpKind::SetFileInfo { .. } => 10,
            OpKind::FindFirst { .. } => 11,
            OpKind::WriteX { .. } => 12,
            OpKind::ReadX { .. } => 13,
            OpKind::LockX { .. } => 14,
            OpKind::UnlockX { .. } => 15,
            OpKind::Flush { .. } => 16,
        }
    }
    pub(crate) fn name(&self) -> &'static str {
        OP_NAMES[self.index()]
    }
}

/// One line of a loadfile.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// 1-based line number in the file.
    pub line: usize,
    /// Seconds since the start of the pass, when the line carries one.
    pub(crate) time: Option<f64>,
    pub kind: OpKind,
    pub status: Status,
}

/// A parsed, validated loadfile.
#[derive(Debug, Clone)]
pub struct Loadfile {
    /// The name errors and results use (the path given, or `generated`).
    pub(crate) name: String,
    pub ops: Vec<Op>,
}

/// A malformed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub(crate) file: String,
    pub(crate) line: usize,
    pub(crate) msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A line can be megabytes long: quote at most MSG_MAX characters.
        let msg = match self.msg.char_indices().nth(MSG_MAX) {
            Some((i, _)) => format!("{}...", &self.msg[..i]),
            None => self.msg.clone(),
        };
        let msg = msg.replace(['\n', '\r'], " ");
        if self.line == 0 {
            write!(f, "loadfile {}: {msg}", self.file)
        } else {
            write!(f, "loadfile {} line {}: {msg}", self.file, self.line)
        }
    }
}

impl std::error::Error for ParseError {}

/// Read and parse a loadfile; every problem is a [`crate::error::bad_input`].
pub(crate) fn load(path: &Path) -> anyhow::Result<Loadfile> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let bad = |m: String| crate::error::bad_input(format!("loadfile {}: {m}", path.display()));
    // Judged before opening: a FIFO would block the open, /dev/zero never ends.
    let meta = std::fs::metadata(path).map_err(|e| bad(format!("cannot read it: {e}")))?;
    let t = meta.file_type();
    if !t.is_file() {
        let kind = crate::sys::output::file_kind(t);
        return Err(bad(format!("{kind}: a loadfile must be a regular file of at most {} MiB", MAX_BYTES >> 20)));
    }
    let too_big = |n: u64| {
        bad(format!(
            "{n} bytes is over the limit: a loadfile must be a regular file of at most {} MiB",
            MAX_BYTES >> 20
        ))
    };
    if meta.len() > MAX_BYTES {
        return Err(too_big(meta.len()));
    }
    // O_NONBLOCK: should the path be swapped for a FIFO meanwhile, the open
    // does not wait; `take` bounds a file that grew.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| bad(format!("cannot read it: {e}")))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(MAX_BYTES + 1).read_to_end(&mut bytes).map_err(|e| bad(format!("cannot read it: {e}")))?;
    if bytes.len() as u64 > MAX_BYTES {
        return Err(too_big(bytes.len() as u64));
    }
    parse_bytes(&path.display().to_string(), &bytes).map_err(|e| crate::error::bad_input(e.to_string()))
}

/// The largest loadfile kdelta reads; parsing takes roughly ten times the
/// file's size in memory.
pub(crate) const MAX_BYTES: u64 = 64 << 20;

/// Longest error message text quoted from a loadfile line.
const MSG_MAX: usize = 200;

/// Parse a whole file given as bytes (lines must be UTF-8).
pub fn parse_bytes(name: &str, bytes: &[u8]) -> Result<Loadfile, ParseError> {
    let mut ops = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let text = std::str::from_utf8(raw).map_err(|_| ParseError {
            file: name.to_string(),
            line,
            msg: "the line is not valid UTF-8 text".into(),
        })?;
        if let Some(op) =
            parse_line(text, line).map_err(|e| ParseError { file: name.to_string(), line, msg: e.to_string() })?
        {
            ops.push(op);
        }
    }
    if ops.is_empty() {
        return Err(ParseError {
            file: name.to_string(),
            line: 0,
            msg: "no operations in the file (only blank or # comment lines)".into(),
        });
    }
    Ok(Loadfile { name: name.to_string(), ops })
}

/// Parse a whole file given as text.
pub(crate) fn parse(name: &str, text: &str) -> Result<Loadfile, ParseError> {
    parse_bytes(name, text.as_bytes())
}

/// Split a line into tokens: blanks separate, double quotes group (and are
/// dropped), `\` becomes `/`.
/// Format one operation back into loadfile syntax (paths as written for
/// client 1, with backslashes), so that `parse_line(format_op(op))` gives `op`.
pub fn format_op(op: &Op) -> String {
    fn p(s: &SharePath) -> String {
        let r = s.relative(1);
        format!("\"\\{}\"", r.replace('/', "\\"))
    }
    let body = match &op.kind {
        OpKind::NtCreateX { path, options, disposition, handle } => {
            format!("NTCreateX {} {:#x} {:#x} {handle}", p(path), options, disposition)
        }
        OpKind::Close { handle } => format!("Close {handle}"),
        OpKind::Rename { old, new } => format!("Rename {} {}", p(old), p(new)),
        OpKind::Unlink { path, attr } => format!("Unlink {} {:#x}", p(path), attr),
        OpKind::Deltree { path } => format!("Deltree {}", p(path)),
        OpKind::Rmdir { path } => format!("Rmdir {}", p(path)),
        OpKind::Mkdir { path } => format!("Mkdir {}", p(path)),
        OpKind::QueryPathInfo { path, level } => {
            format!("QUERY_PATH_INFORMATION {} {level}", p(path))
        }
        OpKind::QueryFileInfo { handle, level } => {
            format!("QUERY_FILE_INFORMATION {handle} {level}")
        }
        OpKind::QueryFsInfo { level } => format!("QUERY_FS_INFORMATION {level}"),
        OpKind::SetFileInfo { handle, level } => format!("SET_FILE_INFORMATION {handle} {level}"),
        OpKind::FindFirst { pattern, level, maxcnt, count } => {
            format!("FIND_FIRST {} {level} {maxcnt} {count}", p(pattern))
        }
        OpKind::WriteX { handle, offset, size, ret_size } => format!("WriteX {handle} {offset} {size} {ret_size}"),
        OpKind::ReadX { handle, offset, size, ret_size } => format!("ReadX {handle} {offset} {size} {ret_size}"),
        OpKind::LockX { handle, offset, size } => format!("LockX {handle} {offset} {size}"),
        OpKind::UnlockX { handle, offset, size } => format!("UnlockX {handle} {offset} {size}"),
        OpKind::Flush { handle } => format!("Flush {handle}"),
    };
    match op.time {
        Some(t) => format!("{t} {body} {}", op.status.text()),
        None => format!("{body} {}", op.status.text()),
    }
}

/// The disk space one client's files take at their peak during a pass, as
/// the loadfile's own operations leave them: creates, truncating opens,
/// writes (a sparse file counts the bytes written, not its length), renames,
/// unlinks and Deltree are followed; every file is rounded up to 4 KiB blocks
/// plus one block. An estimate for the free-space check, not a measurement.
pub(crate) fn space_per_client(lf: &Loadfile) -> u64 {
    use std::collections::HashMap;
    fn fp(e: (u64, u64)) -> u64 {
        (e.0.min(e.1).div_ceil(4096) + 1) * 4096
    }
    let mut names: HashMap<u32, String> = HashMap::new();
    // name -> (furthest end, bytes written)
    let mut files: HashMap<String, (u64, u64)> = HashMap::new();
    let (mut cur, mut peak) = (0u64, 0u64);
    for op in &lf.ops {
        match &op.kind {
            OpKind::NtCreateX { path, options, disposition, handle } if options & 1 == 0 && op.status.matches(true) => {
                let name = path.relative(1);
                let truncate = matches!(disposition, 0 | 4 | 5);
                match files.get_mut(&name) {
                    Some(e) if truncate => {
                        cur -= fp(*e);
                        *e = (0, 0);
                        cur += fp(*e);
                    }
                    Some(_) => {}
                    None if *disposition != 1 => {
                        files.insert(name.clone(), (0, 0));
                        cur += fp((0, 0));
                    }
                    None => {}
                }
                names.insert(*handle, name);
            }
            OpKind::WriteX { handle, offset, size, .. } => {
                if let Some(e) = names.get(handle).and_then(|n| files.get_mut(n)) {
                    cur -= fp(*e);
                    e.0 = e.0.max(offset + *size as u64);
                    e.1 += *size as u64;
                    cur += fp(*e);
                }
            }
            OpKind::Rename { old, new } => {
                if let Some(e) = files.remove(&old.relative(1)) {
                    if let Some(x) = files.insert(new.relative(1), e) {
                        cur -= fp(x);
                    }
                }
            }
            OpKind::Unlink { path, .. } => {
                if let Some(e) = files.remove(&path.relative(1)) {
                    cur -= fp(e);
                }
            }
            OpKind::Deltree { path } => {
                let root = path.relative(1);
                let prefix = format!("{root}/");
                files.retain(|k, e| {
                    let inside = root.is_empty() || k == &root || k.starts_with(&prefix);
                    if inside {
                        cur -= fp(*e);
                    }
                    !inside
                });
            }
            _ => {}
        }
        peak = peak.max(cur);
    }
    peak
}

#[cfg(test)]
mod tests;
