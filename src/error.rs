//! Error kinds that decide the exit status.
//!
//! Everything is `anyhow::Error` above the modules; an error whose chain holds a
//! [`BadInput`] is the user's input (exit 2), anything else a failure (exit 1).

/// The user asked for something that cannot be: an unknown name, a malformed
/// value or file, a CPU the machine lacks. The message names the value and what
/// is allowed, on one line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct BadInput(pub String);

/// Build a [`BadInput`] error.
pub(crate) fn bad_input(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.into()))
}

/// True when the error (or anything in its chain) is bad input.
pub(crate) fn is_bad_input(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<BadInput>().is_some())
}

/// Write one line to stderr; a failure (a closed pipe) is ignored, never a
/// panic as std's `eprintln!` makes it (see the crate's `eprintln!`).
pub(crate) fn to_stderr(a: std::fmt::Arguments) {
    use std::io::Write;
    let line = format!("{a}\n");
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

/// Exit statuses, as documented in the README.
pub(crate) mod exit {
    pub(crate) const OK: u8 = 0;
    pub(crate) const FAILED: u8 = 1;
    pub(crate) const BAD_INPUT: u8 = 2;
    pub(crate) const INTERRUPTED: u8 = 130;
    /// `kdelta check` cannot tell: what `git bisect run` takes as "skip".
    pub(crate) const CANNOT_TELL: u8 = 125;
    /// `kdelta check` refused its input or failed before judging: above 127,
    /// so `git bisect run` stops instead of marking the commit bad.
    pub(crate) const CHECK_REFUSED: u8 = 128;
}
