//! The programs `lat.proc.exec` and `lat.proc.shell` start (`prog=`):
//!
//! - `hello` (the default): `hello.c` built by `build.rs` with the target's C
//!   compiler and linked dynamically against the C library, like LMbench's
//!   `hello`, so every exec maps the dynamic loader, which maps and relocates
//!   the C library before `main` runs. Its bytes are embedded in kdelta and
//!   written into the run's temporary directory (mode 0755) once per worker,
//!   so an installed kdelta, with no files beside it, runs the same program
//!   as one run from its build tree.
//! - `static`: the tiny static ELF of `tiny.rs`, no loader and no C library:
//!   the kernel's share of fork and exec alone.
//!
//! What was started is recorded with the result: path, size, linkage and the
//! interpreter named in the ELF's `PT_INTERP`, read from the file itself.

use super::tiny;
use std::path::{Path, PathBuf};

/// Why this kdelta has no program to start, or why an ELF file's headers do
/// not read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProgramError {
    #[error("kdelta was built without its small forking program: {0}")]
    NoForker(&'static str),
    #[error("kdelta was built without its dynamically linked hello: {0}")]
    NoHello(&'static str),
    #[error("kdelta has no tiny static program for {}", std::env::consts::ARCH)]
    NoTiny,
    #[error("not an ELF file")]
    NotElf,
    #[error("unknown ELF class {0}")]
    Class(u8),
    #[error("unreadable ELF headers: {0}")]
    Headers(#[from] object::Error),
}

/// The embedded `hello` (empty when build.rs could not build it).
static HELLO: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hello"));
/// Why build.rs could not build `hello` (empty when it could).
const HELLO_ERROR: &str = env!("KDELTA_HELLO_ERROR");

crate::model::params::choice! {
    /// The program `lat.proc.exec` and `lat.proc.shell` start (`prog=`).
    pub(crate) enum Prog {
        /// A dynamically linked C program, like LMbench's `hello`.
        Hello = "hello",
        /// kdelta's tiny static ELF: the kernel's share alone.
        Static = "static",
    }
}

/// The embedded `forker` (empty when build.rs could not build it).
static FORKER: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/forker"));
/// Why build.rs could not build `forker` (empty when it could).
const FORKER_ERROR: &str = env!("KDELTA_FORKER_ERROR");

/// The `forker` image (`forker.c`: the small process `lat.proc.fork` forks
/// from), or why this kdelta has none.
pub(crate) fn forker() -> Result<&'static [u8], ProgramError> {
    if FORKER.is_empty() {
        let why = if FORKER_ERROR.is_empty() { "build.rs made an empty program" } else { FORKER_ERROR };
        return Err(ProgramError::NoForker(why));
    }
    Ok(FORKER)
}

/// Write `forker` to `dir/forker` (mode 0755).
pub(crate) fn write_forker(dir: &Path) -> anyhow::Result<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let img = forker()?;
    let path = dir.join("forker");
    std::fs::write(&path, img)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(path)
}

/// The `hello` image, or why there is none.
fn hello() -> Result<&'static [u8], ProgramError> {
    if HELLO.is_empty() {
        let why = if HELLO_ERROR.is_empty() { "build.rs made an empty program" } else { HELLO_ERROR };
        return Err(ProgramError::NoHello(why));
    }
    Ok(HELLO)
}

/// The image of a program, or why this kdelta has none.
pub(crate) fn image(prog: Prog) -> Result<Vec<u8>, ProgramError> {
    match prog {
        Prog::Hello => hello().map(<[u8]>::to_vec),
        Prog::Static => tiny::image().ok_or(ProgramError::NoTiny),
    }
}

/// How an ELF executable is linked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Linkage {
    /// The dynamic loader it names (`PT_INTERP`); `None` for a static program.
    pub(crate) interp: Option<String>,
}

impl Linkage {
    pub(crate) fn kind(&self) -> &'static str {
        if self.interp.is_some() {
            "dynamic"
        } else {
            "static"
        }
    }
}

/// Read an ELF file's program headers (32- or 64-bit, either byte order) and
/// say whether it names a loader. A static-pie program has a `PT_DYNAMIC`
/// but no `PT_INTERP`: it is static here, since nothing else is loaded.
pub(crate) fn linkage(elf: &[u8]) -> Result<Linkage, ProgramError> {
    use object::elf::{FileHeader32, FileHeader64, ELFCLASS32, ELFCLASS64};
    use object::Endianness;
    let (Some(b"\x7fELF"), Some(&class)) = (elf.get(..4), elf.get(4)) else {
        return Err(ProgramError::NotElf);
    };
    let interp = match class {
        ELFCLASS32 => interpreter::<FileHeader32<Endianness>>(elf)?,
        ELFCLASS64 => interpreter::<FileHeader64<Endianness>>(elf)?,
        c => return Err(ProgramError::Class(c)),
    };
    Ok(Linkage { interp })
}

/// The loader a `PT_INTERP` program header names, if any.
fn interpreter<H: object::read::elf::FileHeader<Endian = object::Endianness>>(
    elf: &[u8],
) -> Result<Option<String>, object::Error> {
    use object::read::elf::ProgramHeader;
    let header = H::parse(elf)?;
    let endian = header.endian()?;
    for ph in header.program_headers(endian, elf)? {
        if let Some(name) = ph.interpreter(endian, elf)? {
            return Ok(Some(String::from_utf8_lossy(name).into_owned()));
        }
    }
    Ok(None)
}

/// A program written out for a benchmark.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub(crate) path: PathBuf,
    pub(crate) bytes: u64,
    pub(crate) linkage: Linkage,
}

/// Write program `name` to `dir/<name>` (mode 0755) and describe it.
pub(crate) fn write_to(prog: Prog, dir: &Path) -> anyhow::Result<Written> {
    use crate::model::params::Choice;
    use std::os::unix::fs::PermissionsExt;
    let name = prog.name();
    let img = image(prog)?;
    let linkage = linkage(&img).map_err(|e| anyhow::anyhow!("program {name}: {e}"))?;
    let path = dir.join(name);
    std::fs::write(&path, &img)?;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755))?;
    Ok(Written { path, bytes: img.len() as u64, linkage })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiny_program_is_static() {
        if let Some(img) = tiny::image() {
            assert_eq!(linkage(&img).unwrap(), Linkage { interp: None });
        }
    }

    #[test]
    fn hello_is_dynamically_linked_and_runs() {
        let Ok(img) = hello() else {
            // Built without a C compiler: the benchmark says why instead.
            assert!(!HELLO_ERROR.is_empty());
            return;
        };
        let l = linkage(img).unwrap();
        assert_eq!(l.kind(), "dynamic");
        assert!(l.interp.as_deref().is_some_and(|i| i.starts_with('/')), "{l:?}");
        let d = tempfile::tempdir().unwrap();
        let w = write_to(Prog::Hello, d.path()).unwrap();
        assert_eq!(w.bytes, img.len() as u64);
        let out = std::process::Command::new(&w.path).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, b"Hello world\n");
    }

    /// A hand-made 32-bit big-endian header with one PT_INTERP entry.
    #[test]
    fn reads_a_32_bit_big_endian_interp() {
        let mut f = vec![0u8; 52 + 32 + 8];
        f[..7].copy_from_slice(b"\x7fELF\x01\x02\x01"); // 32-bit, big-endian, version 1
        f[0x1c..0x20].copy_from_slice(&52u32.to_be_bytes()); // e_phoff
        f[0x2a..0x2c].copy_from_slice(&32u16.to_be_bytes()); // e_phentsize
        f[0x2c..0x2e].copy_from_slice(&1u16.to_be_bytes()); // e_phnum
        f[52..56].copy_from_slice(&3u32.to_be_bytes()); // PT_INTERP
        f[56..60].copy_from_slice(&84u32.to_be_bytes()); // p_offset
        f[68..72].copy_from_slice(&8u32.to_be_bytes()); // p_filesz
        f[84..92].copy_from_slice(b"/ld.so\0\0");
        assert_eq!(linkage(&f).unwrap().interp.as_deref(), Some("/ld.so"));
        assert!(linkage(b"#!/bin/sh\n").is_err());
        f[0x2c..0x2e].copy_from_slice(&3u16.to_be_bytes()); // a third entry past the end
        assert!(linkage(&f).is_err());
    }

    proptest::proptest! {
        #[test]
        fn any_bytes_give_a_linkage_or_an_error(mut d in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..256), class in 1u8..=2) {
            if d.len() >= 7 {
                let order = d[5] % 3;
                d[..7].copy_from_slice(&[0x7f, b'E', b'L', b'F', class, order, 1]);
            }
            let _ = linkage(&d);
        }
    }
}
