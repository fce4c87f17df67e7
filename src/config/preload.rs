//! The `preload=tuned|PATH` modifier: run the worker (and every program it
//! starts, such as `build.make`'s compilers) with `LD_PRELOAD` naming a
//! library, by default kdelta's `libkdelta_mem.so` (its tuned `memcpy`,
//! `memmove`, `memset` and `strlen`), found next to the kdelta binary.
//!
//! A library that cannot take effect makes the configuration unavailable,
//! with the reason, never a silent run without it: missing, not a shared
//! object, built for another machine, a machine the preload library is not
//! written for, or a kdelta that is statically linked (its worker has no
//! dynamic loader to read `LD_PRELOAD`). A malformed value (empty, a path
//! with a space or colon, which `LD_PRELOAD` would split) is bad input.

use crate::error::bad_input;
use std::path::{Path, PathBuf};

/// The preload library's file name.
pub(crate) const LIB_NAME: &str = "libkdelta_mem.so";

/// What `preload=` resolved to, or why it cannot be used.
pub(crate) enum Resolved {
    /// The absolute path to put in `LD_PRELOAD`.
    Path(String),
    /// The configuration is unavailable here, for this reason.
    Unavailable(String),
}

/// Resolve `preload=V`. `Err` is bad input.
pub(crate) fn resolve(v: &str) -> anyhow::Result<Resolved> {
    let lib = match v {
        "" => {
            return Err(bad_input("empty preload modifier: expected preload=tuned or preload=PATH (a shared library)"))
        }
        "tuned" => match tuned_path() {
            Ok(p) => p,
            Err(why) => return Ok(Resolved::Unavailable(why.to_string())),
        },
        path => {
            if path.contains([' ', ':', '\0']) {
                return Err(bad_input(format!(
                    "preload={path}: LD_PRELOAD splits at spaces and colons; give a path without them"
                )));
            }
            let p = Path::new(path);
            if !p.exists() {
                return Err(bad_input(format!(
                    "preload={path}: no such file (expected preload=tuned or the path of a shared library)"
                )));
            }
            std::fs::canonicalize(p).map_err(|e| bad_input(format!("preload={path}: {e}")))?
        }
    };
    let shown = lib.display().to_string();
    if shown.contains([' ', ':']) {
        return Ok(Resolved::Unavailable(format!(
            "{shown}: LD_PRELOAD splits at spaces and colons, and this path has one"
        )));
    }
    if let Err(why) = usable(&lib) {
        return Ok(Resolved::Unavailable(format!("{shown}: {why}")));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Ok(Elf { interp: false, .. }) = read_elf(&exe) {
            return Ok(Resolved::Unavailable(format!(
                "kdelta ({}) is statically linked: its worker has no dynamic loader, so LD_PRELOAD would be ignored",
                exe.display()
            )));
        }
    }
    Ok(Resolved::Path(shown))
}

/// Why `preload=tuned` has no library here.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NoTuned {
    #[error("{lib} was not built: {0}", lib = LIB_NAME)]
    NotBuilt(&'static str),
    #[error("cannot find the kdelta binary to look for {lib} beside it: {0}", lib = LIB_NAME)]
    NoExe(std::io::Error),
    #[error("{} has no directory", .0.display())]
    NoDir(PathBuf),
    #[error("{lib} is not next to kdelta in {} (cargo build puts it there; install it beside the binary)", .0.display(), lib = LIB_NAME)]
    Absent(PathBuf),
}

/// `libkdelta_mem.so` next to the running kdelta.
fn tuned_path() -> Result<PathBuf, NoTuned> {
    let build_error = env!("KDELTA_PRELOAD_ERROR");
    if !build_error.is_empty() {
        return Err(NoTuned::NotBuilt(build_error));
    }
    let exe = std::env::current_exe().map_err(NoTuned::NoExe)?;
    let dir = exe.parent().ok_or_else(|| NoTuned::NoDir(exe.clone()))?;
    let lib = dir.join(LIB_NAME);
    if !lib.is_file() {
        return Err(NoTuned::Absent(dir.to_path_buf()));
    }
    Ok(lib)
}

/// The ELF facts that matter here.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Elf {
    /// `e_type`: 2 executable, 3 shared object (or position-independent executable).
    pub(crate) kind: u16,
    /// `e_machine`.
    pub(crate) machine: u16,
    /// Whether it names a dynamic loader (`PT_INTERP`).
    pub(crate) interp: bool,
}

/// The `e_machine` of the machine kdelta was built for, with a name.
pub(crate) fn host_machine() -> Option<(u16, &'static str)> {
    if cfg!(target_arch = "x86_64") {
        Some((62, "x86-64"))
    } else if cfg!(target_arch = "aarch64") {
        Some((183, "aarch64"))
    } else {
        None
    }
}

/// Why a file cannot be preloaded here ([`usable`]), or read as ELF
/// ([`read_elf`]).
#[derive(Debug, PartialEq, thiserror::Error)]
pub(crate) enum Unusable {
    #[error("the preload library is written for x86-64 and aarch64, not {}", std::env::consts::ARCH)]
    Arch,
    #[error("not a shared library (ELF type {0})")]
    NotShared(u16),
    #[error("built for ELF machine {found}, this is {name} ({machine})")]
    Machine { found: u16, name: &'static str, machine: u16 },
    #[error("cannot open: {0}")]
    Open(String),
    #[error("cannot read: {0}")]
    Read(String),
    #[error("not an ELF file")]
    NotElf,
    #[error("not a 64-bit little-endian ELF file (class {class}, data {data})")]
    Not64Le { class: u8, data: u8 },
    #[error("truncated program headers")]
    Truncated,
}

/// Why `lib` cannot be preloaded here, if it cannot.
pub(crate) fn usable(lib: &Path) -> Result<(), Unusable> {
    let Some((machine, name)) = host_machine() else {
        return Err(Unusable::Arch);
    };
    let elf = read_elf(lib)?;
    if elf.kind != 3 {
        return Err(Unusable::NotShared(elf.kind));
    }
    if elf.machine != machine {
        return Err(Unusable::Machine { found: elf.machine, name, machine });
    }
    Ok(())
}

/// Read a 64-bit little-endian ELF header and its program headers.
pub(crate) fn read_elf(path: &Path) -> Result<Elf, Unusable> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| Unusable::Open(e.to_string()))?;
    let mut head = Vec::new();
    f.by_ref().take(64 * 1024).read_to_end(&mut head).map_err(|e| Unusable::Read(e.to_string()))?;
    parse_elf(&head)
}

/// [`read_elf`] on bytes (the first 64 KiB suffice for the program headers
/// of any ordinary file).
pub(crate) fn parse_elf(b: &[u8]) -> Result<Elf, Unusable> {
    if b.len() < 64 || &b[..4] != b"\x7fELF" {
        return Err(Unusable::NotElf);
    }
    if b[4] != 2 || b[5] != 1 {
        return Err(Unusable::Not64Le { class: b[4], data: b[5] });
    }
    let u16_at = |o: usize| b.get(o..o + 2).map(|s| u16::from_le_bytes([s[0], s[1]]));
    let u32_at = |o: usize| b.get(o..o + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]));
    let u64_at = |o: usize| b.get(o..o + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])));
    let kind = u16_at(16).unwrap_or(0);
    let machine = u16_at(18).unwrap_or(0);
    let phoff = u64_at(32).unwrap_or(0) as usize;
    let phentsize = u16_at(54).unwrap_or(0) as usize;
    let phnum = u16_at(56).unwrap_or(0) as usize;
    let mut interp = false;
    if phentsize >= 4 {
        for i in 0..phnum.min(256) {
            match phoff.checked_add(i * phentsize).and_then(u32_at) {
                Some(3) => interp = true, // PT_INTERP
                Some(_) => {}
                None => return Err(Unusable::Truncated),
            }
        }
    }
    Ok(Elf { kind, machine, interp })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(kind: u16, machine: u16, interp: bool) -> Vec<u8> {
        let mut b = vec![0u8; 64 + 2 * 56];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[16..18].copy_from_slice(&kind.to_le_bytes());
        b[18..20].copy_from_slice(&machine.to_le_bytes());
        b[32..40].copy_from_slice(&64u64.to_le_bytes());
        b[54..56].copy_from_slice(&56u16.to_le_bytes());
        b[56..58].copy_from_slice(&2u16.to_le_bytes());
        b[64..68].copy_from_slice(&1u32.to_le_bytes()); // PT_LOAD
        b[120..124].copy_from_slice(&(if interp { 3u32 } else { 1 }).to_le_bytes());
        b
    }

    #[test]
    fn elf_headers() {
        assert_eq!(parse_elf(&header(3, 62, true)), Ok(Elf { kind: 3, machine: 62, interp: true }));
        assert_eq!(parse_elf(&header(2, 183, false)), Ok(Elf { kind: 2, machine: 183, interp: false }));
        assert!(parse_elf(b"#!/bin/sh\n").is_err());
        let mut b = header(3, 62, false);
        b[4] = 1;
        assert!(parse_elf(&b).unwrap_err().to_string().contains("64-bit"));
        assert!(parse_elf(&header(3, 62, false)[..100]).unwrap_err().to_string().contains("truncated"));
    }

    #[test]
    fn unusable_libraries_say_why() {
        let t = tempfile::tempdir().unwrap();
        let (machine, _) = host_machine().unwrap();
        let other = if machine == 62 { 183 } else { 62 };
        for (name, bytes, why) in [
            ("script.so", b"#!/bin/sh\n".to_vec(), "not an ELF"),
            ("exe.so", header(2, machine, true), "not a shared library"),
            ("arm.so", header(3, other, false), "built for ELF machine"),
        ] {
            let p = t.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            assert!(usable(&p).unwrap_err().to_string().contains(why), "{name}");
            match resolve(p.to_str().unwrap()).unwrap() {
                Resolved::Unavailable(r) => assert!(r.contains(why), "{r}"),
                Resolved::Path(p) => panic!("{p} accepted"),
            }
        }
        let ok = t.path().join("ok.so");
        std::fs::write(&ok, header(3, machine, false)).unwrap();
        assert!(matches!(resolve(ok.to_str().unwrap()).unwrap(), Resolved::Path(p) if p.ends_with("ok.so")));
        for bad in ["", "/no/such/lib.so", "a b.so", "a:b.so"] {
            assert!(crate::error::is_bad_input(&resolve(bad).err().unwrap()), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn elf_parser_never_panics(b in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            let _ = parse_elf(&b);
            let mut h = header(3, 62, true);
            h.extend_from_slice(&b);
            let _ = parse_elf(&h);
        }
    }
}
