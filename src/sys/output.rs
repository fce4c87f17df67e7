//! Files written at a path the user named (`report -o`, `chart -o`,
//! `loadfile generate -o`): only a regular file, or a name not yet taken.
//! A FIFO would hang the open or the write for ever and a device would take
//! the bytes, so either is refused with one line (bad input, exit 2) before
//! anything opens it for writing; the file is then opened with `O_NONBLOCK`
//! (a FIFO put in its place meanwhile cannot block the open) and its type
//! checked again on the descriptor before it is truncated or written
//! (open(2), fstat(2)).

use crate::error::bad_input;
use anyhow::Result;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What a file that is not a regular file is, for a message: `a FIFO`,
/// `a device`, ... (of `symlink_metadata`, `a symbolic link` too).
pub(crate) fn file_kind(t: std::fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() || t.is_block_device() {
        "a device"
    } else if t.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

fn refused(option: &str, path: &Path, t: std::fs::FileType) -> anyhow::Error {
    bad_input(format!("{option} {}: {}: the output must be a regular file or a new name", path.display(), file_kind(t)))
}

/// Refuse `path` for writing when it exists (a symlink followed) and is not
/// a regular file. Nothing is opened.
pub(crate) fn check_output_path(option: &str, path: &Path) -> Result<()> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => Err(refused(option, path, m.file_type())),
        _ => Ok(()),
    }
}

/// Write `bytes` to `path` (created with the umask's permissions, or
/// truncated), refusing anything but a regular file.
pub(crate) fn write_output(option: &str, path: &Path, bytes: &[u8]) -> Result<()> {
    check_output_path(option, path)?;
    let cannot = |e: std::io::Error| bad_input(format!("{option} {}: cannot write it: {e}", path.display()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(cannot)?;
    let m = f.metadata().map_err(cannot)?;
    if !m.is_file() {
        return Err(refused(option, path, m.file_type()));
    }
    f.set_len(0).map_err(cannot)?;
    f.write_all(bytes)
        .and_then(|_| f.flush())
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot write {}", path.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_device_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600)).unwrap();
        let e = write_output("-o", &fifo, b"x").unwrap_err();
        assert!(crate::error::is_bad_input(&e) && e.to_string().contains("a FIFO"), "{e}");
        let e = write_output("-o", Path::new("/dev/null"), b"x").unwrap_err();
        assert!(e.to_string().contains("a device"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert!(write_output("-o", &link, b"x").unwrap_err().to_string().contains("a FIFO"));
        let f = dir.path().join("f");
        std::fs::write(&f, "old text, longer").unwrap();
        write_output("-o", &f, b"new").unwrap();
        assert_eq!(std::fs::read_to_string(&f).unwrap(), "new");
    }
}
