//! One line of a loadfile: tokens, numbers, statuses, paths confined to the
//! client's directory, and each operation's arguments.

use super::*;

/// What is wrong with one line of a loadfile (the file and line number are
/// [`ParseError`]'s).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LineError {
    #[error("more than {MAX_TOKENS} tokens on the line: an operation takes at most 7 (timestamp, name, 4 arguments, status)")]
    TooManyTokens,
    #[error("unterminated double quote")]
    UnterminatedQuote,
    #[error("{what} {value} is too large (at most {max})")]
    TooLarge { what: &'static str, value: u64, max: u64 },
    #[error("expected {what} as a decimal or 0x number, found {tok:?}")]
    NotANumber { what: &'static str, tok: String },
    #[error("empty path")]
    EmptyPath,
    #[error("path longer than {MAX_PATH} bytes")]
    PathTooLong,
    #[error("path contains a NUL character")]
    PathHasNul,
    #[error("path {0:?} climbs above the share root with `..`")]
    AboveRoot(String),
    #[error(
        "path {0:?} is outside the client's directory: paths must lie under \\clients\\client1 \
         (client N replays them in its own BASE/clients/clientN)"
    )]
    OutsideClient(String),
    #[error("{op} on {tok:?} would change a directory shared by all clients: only paths under \\clients\\client1 may be changed")]
    SharedDirectory { op: String, tok: String },
    #[error(
        "{0:?} is a dbench 1.x operation: this is a dbench 1.x loadfile, which kdelta does not support; \
         use a dbench 3.x/4.x loadfile (such as the client.txt of dbench 4) or `kdelta loadfile generate`"
    )]
    Dbench1(String),
    #[error("expected an operation after the timestamp")]
    NoOperation,
    #[error("unknown operation {0:?}: expected one of {names}", names = OP_NAMES.join(", "))]
    UnknownOperation(String),
    #[error("{name} expects {args_help} and then a status; found no status")]
    NoStatus { name: String, args_help: &'static str },
    #[error("expected a status (NT_STATUS_..., 0x..., SUCCESS, ERROR or *) as the last token, found {0:?}")]
    BadStatus(String),
    #[error("{name} expects {arity} arguments ({args_help}) before the status, found {found}")]
    Arity { name: String, arity: usize, args_help: &'static str, found: usize },
    #[error("expected a timestamp in seconds, found {0:?}")]
    NotATime(String),
    #[error("timestamp {0} out of range (0 to 1e7 seconds)")]
    TimeOutOfRange(f64),
    #[error("disposition {0} is not one of 0 (supersede) to 5 (overwrite-if)")]
    Disposition(u32),
}

/// At most [`MAX_TOKENS`] tokens are kept: more is an error, except on a
/// comment line (first token `#...`), whose rest is skipped unkept.
pub(crate) fn tokenize(line: &str) -> Result<Vec<String>, LineError> {
    fn push(out: &mut Vec<String>, tok: String) -> Result<(), LineError> {
        if out.len() < MAX_TOKENS {
            out.push(tok);
            Ok(())
        } else if out[0].starts_with('#') {
            Ok(())
        } else {
            Err(LineError::TooManyTokens)
        }
    }
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
                    push(&mut out, std::mem::take(&mut cur))?;
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
        return Err(LineError::UnterminatedQuote);
    }
    if in_token {
        push(&mut out, cur)?;
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

fn number(tok: &str, what: &'static str, max: u64) -> Result<u64, LineError> {
    let v = if let Some(h) = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if !tok.is_empty() && tok.chars().all(|c| c.is_ascii_digit()) {
        tok.parse::<u64>().ok()
    } else {
        None
    };
    match v {
        Some(v) if v <= max => Ok(v),
        Some(value) => Err(LineError::TooLarge { what, value, max }),
        None => Err(LineError::NotANumber { what, tok: tok.to_string() }),
    }
}

fn n32(tok: &str, what: &'static str) -> Result<u32, LineError> {
    number(tok, what, u32::MAX as u64).map(|v| v as u32)
}

/// Resolve a loadfile path (already with `/` separators) against the share
/// layout and confine it.
pub(crate) fn share_path(tok: &str) -> Result<SharePath, LineError> {
    if tok.is_empty() {
        return Err(LineError::EmptyPath);
    }
    if tok.len() > MAX_PATH {
        return Err(LineError::PathTooLong);
    }
    if tok.contains('\0') {
        return Err(LineError::PathHasNul);
    }
    let mut comps: Vec<&str> = Vec::new();
    for c in tok.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                if comps.pop().is_none() {
                    return Err(LineError::AboveRoot(tok.to_string()));
                }
            }
            c => comps.push(c),
        }
    }
    let place = match comps.as_slice() {
        [] => Place::Root,
        ["clients"] => Place::Clients,
        ["clients", "client1", rest @ ..] => Place::Client(rest.iter().map(|s| s.to_string()).collect()),
        _ => return Err(LineError::OutsideClient(tok.to_string())),
    };
    Ok(SharePath { place })
}

fn path_arg(tok: &str, op: &str, ancestors_ok: bool) -> Result<SharePath, LineError> {
    let p = share_path(tok)?;
    if p.is_ancestor() && !ancestors_ok {
        return Err(LineError::SharedDirectory { op: op.to_string(), tok: tok.to_string() });
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
pub fn parse_line(text: &str, line: usize) -> Result<Option<Op>, LineError> {
    let mut toks = tokenize(text)?;
    if toks.is_empty() || toks[0].starts_with('#') {
        return Ok(None);
    }
    if toks[0].starts_with("SMB") {
        return Err(LineError::Dbench1(toks.swap_remove(0)));
    }
    let mut time = None;
    if toks[0].starts_with(|c: char| c.is_ascii_digit()) {
        time = Some(parse_time(&toks[0])?);
        toks.remove(0);
    }
    if toks.is_empty() {
        return Err(LineError::NoOperation);
    }
    let name = toks[0].as_str();
    let Some((arity, args_help)) = usage(name) else {
        return Err(LineError::UnknownOperation(name.to_string()));
    };
    if toks.len() < 2 {
        return Err(LineError::NoStatus { name: name.to_string(), args_help });
    }
    let st_tok = toks.last().unwrap();
    let status = parse_status(st_tok).ok_or_else(|| LineError::BadStatus(st_tok.clone()))?;
    let args = &toks[1..toks.len() - 1];
    if args.len() != arity {
        return Err(LineError::Arity { name: name.to_string(), arity, args_help, found: args.len() });
    }
    let kind = parse_kind(name, args)?;
    Ok(Some(Op { line, time, kind, status }))
}

/// A line's leading timestamp: seconds from the start of the pass, 0 to 1e7.
fn parse_time(tok: &str) -> Result<f64, LineError> {
    let t: f64 = tok.parse().map_err(|_| LineError::NotATime(tok.to_string()))?;
    if !t.is_finite() || !(0.0..=1e7).contains(&t) {
        return Err(LineError::TimeOutOfRange(t));
    }
    Ok(t)
}

/// The operation `name` (one [`usage`] knows) with its arguments, as many as
/// [`usage`] says, each checked.
fn parse_kind(name: &str, args: &[String]) -> Result<OpKind, LineError> {
    let a = |i: usize| args[i].as_str();
    Ok(match name {
        "NTCreateX" => {
            let options = n32(a(1), "create options")?;
            let disposition = n32(a(2), "disposition")?;
            if disposition > 5 {
                return Err(LineError::Disposition(disposition));
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
        "QUERY_PATH_INFORMATION" => {
            OpKind::QueryPathInfo { path: path_arg(a(0), name, true)?, level: n32(a(1), "level")? }
        }
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
    })
}
