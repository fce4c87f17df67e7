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
//! Anything else (another client's directory, `/etc/passwd`, a `..` that
//! climbs out of the client's directory) is refused when the file is loaded,
//! before anything runs.
//!
//! The whole file is parsed and checked before a run; an error names the file,
//! the line and what was expected there.

use std::fmt;
use std::path::Path;

/// Largest ReadX/WriteX size accepted (SMB2's largest I/O; SMB1 traces stay
/// at 64 KiB). Keeps buffers and tbench frames bounded.
pub const MAX_IO: u64 = 8 << 20;
/// Largest FIND_FIRST reply count accepted (tbench replies 90 bytes per entry).
pub const MAX_FIND_COUNT: u64 = 65_535;
/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;

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
    pub fn text(&self) -> &str {
        match self {
            Status::Ok(s) | Status::Fail(s) => s,
            Status::Any => "*",
        }
    }
    /// Does an outcome (`true` = the operation succeeded) match?
    pub fn matches(&self, ok: bool) -> bool {
        match self {
            Status::Ok(_) => ok,
            Status::Fail(_) => !ok,
            Status::Any => true,
        }
    }
}

/// Where a path lies (see the module documentation).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
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
    pub place: Place,
}

impl SharePath {
    /// The path relative to the base directory for client `n` (1-based),
    /// as dbench would name it (`clients/client7/~dmtmp/x`).
    pub fn relative(&self, n: usize) -> String {
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
    pub fn dbench_name_len(&self, n: usize) -> usize {
        let r = self.relative(n);
        if r.is_empty() {
            1
        } else {
            2 + r.len()
        }
    }
    /// The last component (for FIND_FIRST patterns).
    pub fn last(&self) -> Option<&str> {
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
pub const OP_NAMES: [&str; 17] = [
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
    pub fn index(&self) -> usize {
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
    pub fn name(&self) -> &'static str {
        OP_NAMES[self.index()]
    }
}

/// One line of a loadfile.
#[derive(Debug, Clone, PartialEq)]
pub struct Op {
    /// 1-based line number in the file.
    pub line: usize,
    /// Seconds since the start of the pass, when the line carries one.
    pub time: Option<f64>,
    pub kind: OpKind,
    pub status: Status,
}

/// A parsed, validated loadfile.
#[derive(Debug, Clone)]
pub struct Loadfile {
    /// The name errors and results use (the path given, or `generated`).
    pub name: String,
    pub ops: Vec<Op>,
}

/// A malformed line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub file: String,
    pub line: usize,
    pub msg: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "loadfile {}: {}", self.file, self.msg)
        } else {
            write!(f, "loadfile {} line {}: {}", self.file, self.line, self.msg)
        }
    }
}

impl std::error::Error for ParseError {}

/// Read and parse a loadfile; every problem is a [`crate::error::bad_input`].
pub fn load(path: &Path) -> anyhow::Result<Loadfile> {
    let bytes = std::fs::read(path).map_err(|e| crate::error::bad_input(format!("cannot read loadfile {}: {e}", path.display())))?;
    parse_bytes(&path.display().to_string(), &bytes).map_err(|e| crate::error::bad_input(e.to_string()))
}

/// Parse a whole file given as bytes (lines must be UTF-8).
pub fn parse_bytes(name: &str, bytes: &[u8]) -> Result<Loadfile, ParseError> {
    let mut ops = Vec::new();
    for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
        let line = i + 1;
        let text = std::str::from_utf8(raw).map_err(|_| ParseError { file: name.to_string(), line, msg: "the line is not valid UTF-8 text".into() })?;
        if let Some(op) = parse_line(text, line).map_err(|msg| ParseError { file: name.to_string(), line, msg })? {
            ops.push(op);
        }
    }
    if ops.is_empty() {
        return Err(ParseError { file: name.to_string(), line: 0, msg: "no operations in the file (only blank or # comment lines)".into() });
    }
    Ok(Loadfile { name: name.to_string(), ops })
}

/// Parse a whole file given as text.
pub fn parse(name: &str, text: &str) -> Result<Loadfile, ParseError> {
    parse_bytes(name, text.as_bytes())
}

/// Split a line into tokens: blanks separate, double quotes group (and are
/// dropped), `\` becomes `/`.
pub fn tokenize(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_token = false;
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                in_token = true;
            }
            ' ' | '\t' | '\r' if !quoted => {
                if in_token {
                    out.push(std::mem::take(&mut cur));
                    in_token = false;
                }
            }
            '\\' => {
                cur.push('/');
                in_token = true;
            }
            _ => {
                cur.push(c);
                in_token = true;
            }
        }
    }
    if quoted {
        return Err("unterminated double quote".into());
    }
    if in_token {
        out.push(cur);
    }
    Ok(out)
}

fn parse_status(s: &str) -> Option<Status> {
    if s == "*" {
        return Some(Status::Any);
    }
    if s == "SUCCESS" || s == "NT_STATUS_OK" {
        return Some(Status::Ok(s.to_string()));
    }
    if s == "ERROR" {
        return Some(Status::Fail(s.to_string()));
    }
    if let Some(rest) = s.strip_prefix("NT_STATUS_") {
        if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Some(Status::Fail(s.to_string()));
        }
        return None;
    }
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        if hex.is_empty() || hex.len() > 16 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        let v = u64::from_str_radix(hex, 16).ok()?;
        return Some(if v == 0 { Status::Ok(s.to_string()) } else { Status::Fail(s.to_string()) });
    }
    None
}

fn number(tok: &str, what: &str, max: u64) -> Result<u64, String> {
    let v = if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if !tok.is_empty() && tok.chars().all(|c| c.is_ascii_digit()) {
        tok.parse::<u64>().ok()
    } else {
        None
    };
    match v {
        Some(v) if v <= max => Ok(v),
        Some(v) => Err(format!("{what} {v} is too large (at most {max})")),
        None => Err(format!("expected {what} as a decimal or 0x number, found {tok:?}")),
    }
}

fn n32(tok: &str, what: &str) -> Result<u32, String> {
    number(tok, what, u32::MAX as u64).map(|v| v as u32)
}

/// Resolve a loadfile path (already with `/` separators) against the share
/// layout and confine it.
pub fn share_path(tok: &str) -> Result<SharePath, String> {
    if tok.is_empty() {
        return Err("empty path".into());
    }
    if tok.len() > MAX_PATH {
        return Err(format!("path longer than {MAX_PATH} bytes"));
    }
    if tok.contains('\0') {
        return Err("path contains a NUL character".into());
    }
    let mut comps: Vec<&str> = Vec::new();
    for c in tok.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if comps.pop().is_none() {
                    return Err(format!("path {tok:?} climbs above the share root with `..`"));
                }
            }
            c => comps.push(c),
        }
    }
    let place = match comps.as_slice() {
        [] => Place::Root,
        ["clients"] => Place::Clients,
        ["clients", "client1", rest @ ..] => Place::Client(rest.iter().map(|s| s.to_string()).collect()),
        _ => {
            return Err(format!(
                "path {tok:?} is outside the client's directory: paths must lie under \\clients\\client1 \
                 (client N replays them in its own BASE/clients/clientN)"
            ))
        }
    };
    Ok(SharePath { place })
}

fn path_arg(tok: &str, op: &str, ancestors_ok: bool) -> Result<SharePath, String> {
    let p = share_path(tok)?;
    if p.is_ancestor() && !ancestors_ok {
        return Err(format!("{op} on {tok:?} would change a directory shared by all clients: only paths under \\clients\\client1 may be changed"));
    }
    Ok(p)
}

/// What each operation takes, for messages.
fn usage(op: &str) -> Option<(usize, &'static str)> {
    Some(match op {
        "NTCreateX" => (4, "path create_options disposition handle"),
        "Close" => (1, "handle"),
        "Rename" => (2, "old_path new_path"),
        "Unlink" => (2, "path attributes"),
        "Deltree" => (1, "path"),
        "Rmdir" => (1, "path"),
        "Mkdir" => (1, "path"),
        "QUERY_PATH_INFORMATION" => (2, "path level"),
        "QUERY_FILE_INFORMATION" => (2, "handle level"),
        "QUERY_FS_INFORMATION" => (1, "level"),
        "SET_FILE_INFORMATION" => (2, "handle level"),
        "FIND_FIRST" => (4, "pattern level max_count count"),
        "WriteX" => (4, "handle offset size returned_size"),
        "ReadX" => (4, "handle offset size returned_size"),
        "LockX" => (3, "handle offset size"),
        "UnlockX" => (3, "handle offset size"),
        "Flush" => (1, "handle"),
        _ => return None,
    })
}

/// Parse one line: `Ok(None)` for blank and comment lines; the error says
/// what was expected.
pub fn parse_line(text: &str, line: usize) -> Result<Option<Op>, String> {
    let mut toks = tokenize(text)?;
    if toks.is_empty() || toks[0].starts_with('#') {
        return Ok(None);
    }
    if toks[0].starts_with("SMB") {
        return Err(format!(
            "{:?} is a dbench 1.x operation: this is a dbench 1.x loadfile, which kdelta does not support; \
             use a dbench 3.x/4.x loadfile (such as the client.txt of dbench 4) or `kdelta loadfile generate`",
            toks[0]
        ));
    }
    let mut time = None;
    if toks[0].starts_with(|c: char| c.is_ascii_digit()) {
        let t: f64 = toks[0].parse().map_err(|_| format!("expected a timestamp in seconds, found {:?}", toks[0]))?;
        if !t.is_finite() || !(0.0..=1e7).contains(&t) {
            return Err(format!("timestamp {t} out of range (0 to 1e7 seconds)"));
        }
        time = Some(t);
        toks.remove(0);
    }
    if toks.is_empty() {
        return Err("expected an operation after the timestamp".into());
    }
    let name = toks[0].as_str();
    let Some((arity, args_help)) = usage(name) else {
        return Err(format!("unknown operation {name:?}: expected one of {}", OP_NAMES.join(", ")));
    };
    if toks.len() < 2 {
        return Err(format!("{name} expects {args_help} and then a status; found no status"));
    }
    let st_tok = toks.last().unwrap();
    let status =
        parse_status(st_tok).ok_or_else(|| format!("expected a status (NT_STATUS_..., 0x..., SUCCESS, ERROR or *) as the last token, found {st_tok:?}"))?;
    let args = &toks[1..toks.len() - 1];
    if args.len() != arity {
        return Err(format!("{name} expects {arity} arguments ({args_help}) before the status, found {}", args.len()));
    }
    let a = |i: usize| args[i].as_str();
    let kind = match name {
        "NTCreateX" => {
            let options = n32(a(1), "create options")?;
            let disposition = n32(a(2), "disposition")?;
            if disposition > 5 {
                return Err(format!("disposition {disposition} is not one of 0 (supersede) to 5 (overwrite-if)"));
            }
            let dir = options & 1 != 0;
            OpKind::NtCreateX { path: path_arg(a(0), name, dir)?, options, disposition, handle: n32(a(3), "handle")? }
        }
        "Close" => OpKind::Close { handle: n32(a(0), "handle")? },
        "Rename" => OpKind::Rename { old: path_arg(a(0), name, false)?, new: path_arg(a(1), name, false)? },
        "Unlink" => OpKind::Unlink { path: path_arg(a(0), name, false)?, attr: n32(a(1), "attributes")? },
        "Deltree" => OpKind::Deltree { path: path_arg(a(0), name, false)? },
        "Rmdir" => OpKind::Rmdir { path: path_arg(a(0), name, false)? },
        "Mkdir" => OpKind::Mkdir { path: path_arg(a(0), name, true)? },
        "QUERY_PATH_INFORMATION" => OpKind::QueryPathInfo { path: path_arg(a(0), name, true)?, level: n32(a(1), "level")? },
        "QUERY_FILE_INFORMATION" => OpKind::QueryFileInfo { handle: n32(a(0), "handle")?, level: n32(a(1), "level")? },
        "QUERY_FS_INFORMATION" => OpKind::QueryFsInfo { level: n32(a(0), "level")? },
        "SET_FILE_INFORMATION" => OpKind::SetFileInfo { handle: n32(a(0), "handle")?, level: n32(a(1), "level")? },
        "FIND_FIRST" => OpKind::FindFirst {
            pattern: path_arg(a(0), name, true)?,
            level: n32(a(1), "level")?,
            maxcnt: n32(a(2), "max count")?,
            count: number(a(3), "count", MAX_FIND_COUNT)? as u32,
        },
        "WriteX" | "ReadX" => {
            let handle = n32(a(0), "handle")?;
            let offset = number(a(1), "offset", i64::MAX as u64 - MAX_IO)?;
            let size = number(a(2), "size", MAX_IO)? as u32;
            let ret_size = number(a(3), "returned size", MAX_IO)? as u32;
            if name == "WriteX" {
                OpKind::WriteX { handle, offset, size, ret_size }
            } else {
                OpKind::ReadX { handle, offset, size, ret_size }
            }
        }
        "LockX" | "UnlockX" => {
            let handle = n32(a(0), "handle")?;
            let offset = number(a(1), "offset", i64::MAX as u64)?;
            let size = number(a(2), "size", i64::MAX as u64 - offset)?;
            if name == "LockX" {
                OpKind::LockX { handle, offset, size }
            } else {
                OpKind::UnlockX { handle, offset, size }
            }
        }
        "Flush" => OpKind::Flush { handle: n32(a(0), "handle")? },
        _ => unreachable!("usage() covers every name"),
    };
    Ok(Some(Op { line, time, kind, status }))
}

/// Format one operation back into loadfile syntax (paths as written for
/// client 1, with backslashes), so that `parse_line(format_op(op))` gives `op`.
pub fn format_op(op: &Op) -> String {
    fn p(s: &SharePath) -> String {
        let r = s.relative(1);
        format!("\"\\{}\"", r.replace('/', "\\"))
    }
    let body = match &op.kind {
        OpKind::NtCreateX { path, options, disposition, handle } => format!("NTCreateX {} {:#x} {:#x} {handle}", p(path), options, disposition),
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
        OpKind::FindFirst { pattern, level, maxcnt, count } => format!("FIND_FIRST {} {level} {maxcnt} {count}", p(pattern)),
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
pub fn space_per_client(lf: &Loadfile) -> u64 {
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
mod tests {
    use super::*;

    fn one(line: &str) -> Op {
        parse_line(line, 1).unwrap().unwrap()
    }
    fn err(line: &str) -> String {
        parse_line(line, 1).unwrap_err()
    }
    fn cp(rest: &[&str]) -> SharePath {
        SharePath { place: Place::Client(rest.iter().map(|s| s.to_string()).collect()) }
    }

    #[test]
    fn every_operation() {
        let f = cp(&["~dmtmp", "F.TXT"]);
        let cases: Vec<(&str, OpKind)> = vec![
            (
                r#"NTCreateX "\clients\client1\~dmtmp\F.TXT" 0x40 0x2 9938 NT_STATUS_OK"#,
                OpKind::NtCreateX { path: f.clone(), options: 0x40, disposition: 2, handle: 9938 },
            ),
            ("Close 9938 NT_STATUS_OK", OpKind::Close { handle: 9938 }),
            (r#"Rename "\clients\client1\a" "\clients\client1\b" NT_STATUS_OK"#, OpKind::Rename { old: cp(&["a"]), new: cp(&["b"]) }),
            (r#"Unlink "\clients\client1\~dmtmp\F.TXT" 0x6 NT_STATUS_OK"#, OpKind::Unlink { path: f.clone(), attr: 6 }),
            (r#"Deltree "\clients\client1" NT_STATUS_OK"#, OpKind::Deltree { path: cp(&[]) }),
            (r#"Rmdir "\clients\client1\d" NT_STATUS_OK"#, OpKind::Rmdir { path: cp(&["d"]) }),
            (r#"Mkdir "\clients" NT_STATUS_OK"#, OpKind::Mkdir { path: SharePath { place: Place::Clients } }),
            (
                r#"QUERY_PATH_INFORMATION "\clients\client1\~dmtmp\F.TXT" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND"#,
                OpKind::QueryPathInfo { path: f.clone(), level: 1004 },
            ),
            ("QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK", OpKind::QueryFileInfo { handle: 9938, level: 258 }),
            ("QUERY_FS_INFORMATION 1 NT_STATUS_OK", OpKind::QueryFsInfo { level: 1 }),
            ("SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK", OpKind::SetFileInfo { handle: 9938, level: 1004 }),
            (
                r#"FIND_FIRST "\clients\client1\~dmtmp\*" 260 1366 11 NT_STATUS_OK"#,
                OpKind::FindFirst { pattern: cp(&["~dmtmp", "*"]), level: 260, maxcnt: 1366, count: 11 },
            ),
            ("WriteX 9938 65536 65536 65536 NT_STATUS_OK", OpKind::WriteX { handle: 9938, offset: 65536, size: 65536, ret_size: 65536 }),
            ("ReadX 9938 0 4096 100 NT_STATUS_OK", OpKind::ReadX { handle: 9938, offset: 0, size: 4096, ret_size: 100 }),
            ("LockX 10430 2147483538 1 NT_STATUS_OK", OpKind::LockX { handle: 10430, offset: 2147483538, size: 1 }),
            ("UnlockX 10430 2147483538 1 NT_STATUS_OK", OpKind::UnlockX { handle: 10430, offset: 2147483538, size: 1 }),
            ("Flush 10012 NT_STATUS_OK", OpKind::Flush { handle: 10012 }),
        ];
        let mut seen = std::collections::BTreeSet::new();
        for (line, kind) in cases {
            let op = one(line);
            assert_eq!(op.kind, kind, "{line}");
            seen.insert(op.kind.name());
            // Round trip through the formatter.
            assert_eq!(one(&format_op(&op)), op, "{line}");
        }
        assert_eq!(seen.len(), OP_NAMES.len());
    }

    #[test]
    fn every_status_form() {
        let st = |s: &str| one(&format!("Close 1 {s}")).status;
        assert_eq!(st("NT_STATUS_OK"), Status::Ok("NT_STATUS_OK".into()));
        assert_eq!(st("SUCCESS"), Status::Ok("SUCCESS".into()));
        assert_eq!(st("0x00000000"), Status::Ok("0x00000000".into()));
        assert_eq!(st("0xC0000034"), Status::Fail("0xC0000034".into()));
        assert_eq!(st("NT_STATUS_NO_SUCH_FILE"), Status::Fail("NT_STATUS_NO_SUCH_FILE".into()));
        assert_eq!(st("ERROR"), Status::Fail("ERROR".into()));
        assert_eq!(st("*"), Status::Any);
        assert!(Status::Any.matches(false) && Status::Any.matches(true));
        assert!(st("ERROR").matches(false) && !st("ERROR").matches(true));
        for bad in ["OK", "NT_STATUS_", "0x", "0xZZ", "nt_status_ok", "42"] {
            let e = err(&format!("Close 1 {bad}"));
            assert!(e.contains("expected a status"), "{bad}: {e}");
        }
    }

    #[test]
    fn quoting_backslashes_comments_timestamps() {
        assert_eq!(tokenize(r#"a "b c" \x\y "\p q\""#).unwrap(), vec!["a", "b c", "/x/y", "/p q/"]);
        assert_eq!(tokenize(r#"""#).unwrap_err(), "unterminated double quote");
        assert_eq!(tokenize(r#"x "" y"#).unwrap(), vec!["x", "", "y"]);
        let op = one(r#"NTCreateX "\clients\client1\my file.doc" 0x40 0x5 7 NT_STATUS_OK"#);
        assert_eq!(op.kind, OpKind::NtCreateX { path: cp(&["my file.doc"]), options: 0x40, disposition: 5, handle: 7 });
        // Unquoted, forward slashes, no leading slash: the same path.
        let op2 = one("Unlink clients/client1/x 0 NT_STATUS_OK");
        assert_eq!(op2.kind, OpKind::Unlink { path: cp(&["x"]), attr: 0 });
        assert_eq!(parse_line("   ", 3).unwrap(), None);
        assert_eq!(parse_line("# a comment", 3).unwrap(), None);
        assert_eq!(parse_line("", 3).unwrap(), None);
        assert_eq!(parse_line("Close 5 NT_STATUS_OK\r", 3).unwrap().unwrap().kind, OpKind::Close { handle: 5 });
        let t = one("12.5 Close 5 NT_STATUS_OK");
        assert_eq!(t.time, Some(12.5));
        assert!(err("12x Close 5 NT_STATUS_OK").contains("timestamp"));
    }

    #[test]
    fn malformed_lines_say_what_was_expected() {
        assert!(err("SMBopenx 1 2").contains("dbench 1.x loadfile"));
        assert!(err("Frobnicate 1 NT_STATUS_OK").contains("unknown operation"));
        assert!(err("WriteX 1 2 3 NT_STATUS_OK").contains("WriteX expects 4 arguments (handle offset size returned_size)"));
        assert!(err("Close").contains("no status"));
        assert!(err("Close x NT_STATUS_OK").contains("expected handle"));
        assert!(err("ReadX 1 0 99999999999 1 NT_STATUS_OK").contains("too large"));
        assert!(err(r#"NTCreateX "\clients\client1\f" 0x40 0x9 1 NT_STATUS_OK"#).contains("disposition"));
        let e = parse("t.txt", "Close 1 NT_STATUS_OK\n\nClose 1 OK\n").unwrap_err();
        assert_eq!(e.line, 3);
        assert!(e.to_string().starts_with("loadfile t.txt line 3: expected a status"), "{e}");
        assert!(parse("t.txt", "# nothing\n\n").unwrap_err().to_string().contains("no operations"));
        let e = parse_bytes("b.txt", b"Close 1 NT_STATUS_OK\nClose \xff NT_STATUS_OK\n").unwrap_err();
        assert_eq!((e.line, e.msg.as_str()), (2, "the line is not valid UTF-8 text"));
    }

    #[test]
    fn path_escapes_refused() {
        for bad in [
            r#"Unlink "\etc\passwd" 0 NT_STATUS_OK"#,
            r#"Unlink "/etc/passwd" 0 NT_STATUS_OK"#,
            r#"Unlink "\clients\client2\x" 0 NT_STATUS_OK"#,
            r#"Unlink "\clients\client1\..\client2\x" 0 NT_STATUS_OK"#,
            r#"Unlink "\clients\client1\..\..\..\x" 0 NT_STATUS_OK"#,
            r#"Deltree "\clients" NT_STATUS_OK"#,
            r#"Rmdir "\" NT_STATUS_OK"#,
            r#"Rename "\clients\client1\a" "\tmp\a" NT_STATUS_OK"#,
            r#"NTCreateX "\clients" 0x40 0x5 1 NT_STATUS_OK"#,
        ] {
            let e = err(bad);
            assert!(e.contains("outside the client's directory") || e.contains("climbs above") || e.contains("shared by all clients"), "{bad}: {e}");
        }
        // `..` that stays inside is fine; ancestors for harmless operations too.
        assert_eq!(one(r#"Unlink "\clients\client1\a\..\b" 0 NT_STATUS_OK"#).kind, OpKind::Unlink { path: cp(&["b"]), attr: 0 });
        one(r#"NTCreateX "\clients" 0x1 0x2 1 NT_STATUS_OK"#);
        one(r#"QUERY_PATH_INFORMATION "\" 1004 NT_STATUS_OK"#);
    }

    #[test]
    fn names_as_dbench_builds_them() {
        let p = cp(&["~dmtmp", "x"]);
        assert_eq!(p.relative(7), "clients/client7/~dmtmp/x");
        assert_eq!(p.dbench_name_len(7), "./clients/client7/~dmtmp/x".len());
        assert_eq!(SharePath { place: Place::Clients }.relative(3), "clients");
    }

    #[test]
    fn space_estimate() {
        let lf = parse(
            "t",
            "NTCreateX \"\\clients\\client1\\a\" 0x40 0x2 1 NT_STATUS_OK\nWriteX 1 0 10000 10000 NT_STATUS_OK\nWriteX 1 1000000000 1 1 NT_STATUS_OK\nClose 1 NT_STATUS_OK\n\
             Rename \"\\clients\\client1\\a\" \"\\clients\\client1\\b\" NT_STATUS_OK\n\
             NTCreateX \"\\clients\\client1\\c\" 0x40 0x2 2 NT_STATUS_OK\nWriteX 2 0 4096 4096 NT_STATUS_OK\nClose 2 NT_STATUS_OK\n\
             Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
             NTCreateX \"\\clients\\client1\\b\" 0x40 0x5 3 NT_STATUS_OK\nWriteX 3 0 100 100 NT_STATUS_OK\n",
        )
        .unwrap();
        // Peak: a (3 blocks + 1) and c (1 block + 1) before the Deltree.
        assert_eq!(space_per_client(&lf), (3 + 1 + 1 + 1) * 4096);
    }

    /// Debian's dbench package ships the 458k-line NetBench trace; parse all
    /// of it when it is installed (skipped otherwise).
    #[test]
    fn debian_client_txt() {
        let path = Path::new("/usr/share/dbench/client.txt");
        if !path.exists() {
            eprintln!("skipped: {} not installed (apt-get install dbench)", path.display());
            return;
        }
        let lf = load(path).unwrap();
        assert!(lf.ops.len() > 450_000, "{}", lf.ops.len());
        let per_client = space_per_client(&lf);
        // The study: about 21 MB per client.
        assert!((15_000_000..30_000_000).contains(&per_client), "{per_client}");
    }

    mod props {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
            #[test]
            fn never_panics(s in "\\PC{0,120}") {
                let _ = parse_line(&s, 1);
            }

            #[test]
            fn never_panics_on_near_valid(op in prop::sample::select(OP_NAMES.to_vec()),
                                          args in prop::collection::vec("[\"\\\\a-z0-9x./ ]{0,12}", 0..6),
                                          st in prop::sample::select(vec!["NT_STATUS_OK", "*", "0x1", "ERROR", "bogus"])) {
                let line = format!("{op} {} {st}", args.join(" "));
                let _ = parse_line(&line, 1);
            }

            #[test]
            fn valid_lines_round_trip(h in 0u32..100000, off in 0u64..(1u64 << 40), size in 0u32..65536,
                                      name in "[A-Za-z0-9_~.]{1,12}", which in 0usize..6, ok in any::<bool>()) {
                let status = if ok { "NT_STATUS_OK" } else { "NT_STATUS_OBJECT_NAME_NOT_FOUND" };
                prop_assume!(name != "." && name != "..");
                let line = match which {
                    0 => format!("NTCreateX \"\\clients\\client1\\{name}\" 0x40 0x1 {h} {status}"),
                    1 => format!("ReadX {h} {off} {size} {size} {status}"),
                    2 => format!("WriteX {h} {off} {size} {size} {status}"),
                    3 => format!("QUERY_PATH_INFORMATION \"\\clients\\client1\\d\\{name}\" 1004 {status}"),
                    4 => format!("LockX {h} {off} {size} {status}"),
                    _ => format!("FIND_FIRST \"\\clients\\client1\\{name}\" 260 1366 {size} {status}"),
                };
                let op = parse_line(&line, 1).unwrap().unwrap();
                let again = parse_line(&format_op(&op), 1).unwrap().unwrap();
                prop_assert_eq!(again, op);
            }
        }
    }
}
