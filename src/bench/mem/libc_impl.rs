//! Which implementation the C library's `ifunc` resolved: the name of the
//! routine at the address the loader bound (the pointer the `libc`
//! implementation calls), e.g. `__memmove_avx512_unaligned_erms`.
//!
//! Those names are local symbols, absent from the dynamic symbol table, so
//! `dladdr` alone cannot give them. The address is mapped back to its file
//! (`dladdr`: the object's path and load address), and the function
//! covering it is looked up in that file's `.symtab`, or when the file is
//! stripped (Debian's `libc.so.6` is) in its separate debug file found by
//! build id (`/usr/lib/debug/.build-id/xx/yyyy.debug`, Debian's
//! `libc6-dbg`) or debuglink (`sys::debuginfo::find`, as profiles find
//! theirs). Without one, the result says why the name is unknown.
//!
//! The files are read with the `object` crate, which checks every offset
//! against the bytes read: a truncated or hostile file gives an error,
//! never a panic.

use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};

/// The largest file read (a libc debug file is ~4 MiB).
const MAX_FILE: u64 = 256 << 20;

/// Why an ELF file's bytes cannot be read as one (no file named).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ElfError {
    #[error("{0}")]
    Object(#[from] object::Error),
    #[error("no loadable segment")]
    NoLoadableSegment,
}

/// Why the routine at an address cannot be named: one line, stored with
/// the result after `unavailable: `.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NameError {
    #[error("no loaded object holds address {0:#x}")]
    NoObject(usize),
    #[error("{}: {source}", .file.display())]
    Io { file: PathBuf, source: std::io::Error },
    #[error("{}: {len} bytes, more than the {MAX_FILE} read", .file.display())]
    TooLarge { file: PathBuf, len: u64 },
    #[error("{}: {source}", .file.display())]
    Elf { file: PathBuf, source: ElfError },
    #[error(transparent)]
    Read(#[from] ElfError),
    #[error("{} has no symbol table and no debug file by build-id or debuglink under {} (Debian: libc6-dbg)", .0.display(), crate::sys::debuginfo::ROOT)]
    NoDebugFile(PathBuf),
    #[error("{} has no symbol table", .0.display())]
    NoSymbolTable(PathBuf),
    #[error("no function covers offset {vaddr:#x} of {}", .file.display())]
    NoFunction { vaddr: u64, file: PathBuf },
}

impl NameError {
    fn elf(file: &Path) -> impl Fn(ElfError) -> NameError + '_ {
        move |source| NameError::Elf { file: file.to_path_buf(), source }
    }
}

/// The name(s) of the function at `addr` (aliases joined by ` = `,
/// sorted), with the object's file name when it is not the C library
/// (a preloaded library), or why it cannot be told.
pub(crate) fn name_at(addr: usize) -> Result<String, NameError> {
    let (file, base) = object_of(addr)?;
    let data = read_capped(&file)?;
    let elf = Elf::parse(&data).map_err(NameError::elf(&file))?;
    let vaddr = addr.wrapping_sub(base).wrapping_add(elf.first_load_vaddr()? as usize) as u64;
    let names = match elf.functions_at(vaddr)? {
        Some(n) => n,
        None => {
            let root = Path::new(crate::sys::debuginfo::ROOT);
            let debug = crate::sys::debuginfo::find(&file, &elf.file, root)
                .ok_or_else(|| NameError::NoDebugFile(file.clone()))?;
            let dd = read_capped(&debug)?;
            let de = Elf::parse(&dd).map_err(NameError::elf(&debug))?;
            de.functions_at(vaddr)?.ok_or_else(|| NameError::NoSymbolTable(debug.clone()))?
        }
    };
    if names.is_empty() {
        return Err(NameError::NoFunction { vaddr, file });
    }
    let joined = names.join(" = ");
    let fname = file.file_name().map(|f| f.to_string_lossy().into_owned()).unwrap_or_default();
    Ok(if fname.starts_with("libc.so") { joined } else { format!("{joined} ({fname})") })
}

/// The file holding `addr` and the address it was loaded at.
fn object_of(addr: usize) -> Result<(PathBuf, usize), NameError> {
    let mut info = libc::Dl_info {
        dli_fname: std::ptr::null(),
        dli_fbase: std::ptr::null_mut(),
        dli_sname: std::ptr::null(),
        dli_saddr: std::ptr::null_mut(),
    };
    // SAFETY: `info` is a valid out-parameter; dladdr only reads the
    // loader's tables for the address, which it does not dereference.
    let ok = unsafe { libc::dladdr(addr as *const c_void, &mut info) };
    if ok == 0 || info.dli_fname.is_null() {
        return Err(NameError::NoObject(addr));
    }
    // SAFETY: dladdr set dli_fname to the loader's NUL-terminated path.
    let name = unsafe { CStr::from_ptr(info.dli_fname) }.to_string_lossy().into_owned();
    Ok((PathBuf::from(name), info.dli_fbase as usize))
}

fn read_capped(path: &Path) -> Result<Vec<u8>, NameError> {
    let io = |source| NameError::Io { file: path.to_path_buf(), source };
    let len = std::fs::metadata(path).map_err(io)?.len();
    if len > MAX_FILE {
        return Err(NameError::TooLarge { file: path.to_path_buf(), len });
    }
    std::fs::read(path).map_err(io)
}

/// An ELF file's bytes, parsed.
pub(crate) struct Elf<'a> {
    file: object::File<'a>,
}

impl<'a> Elf<'a> {
    pub(crate) fn parse(d: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        Ok(Elf { file: object::File::parse(d)? })
    }

    /// The virtual address of the first loadable segment, page-aligned
    /// (the object's load address maps to it).
    fn first_load_vaddr(&self) -> Result<u64, ElfError> {
        use object::{Object, ObjectSegment};
        let first = self.file.segments().next().ok_or(ElfError::NoLoadableSegment)?;
        Ok(first.address() & !0xfff)
    }

    /// The names of the functions in `.symtab` covering `vaddr` (those
    /// starting exactly there when any do), sorted; `None` without a
    /// `.symtab`.
    pub(crate) fn functions_at(&self, vaddr: u64) -> Result<Option<Vec<String>>, ElfError> {
        use object::{Object, ObjectSymbol, ObjectSymbolTable, SymbolKind};
        let Some(table) = self.file.symbol_table() else { return Ok(None) };
        let (mut exact, mut covering) = (Vec::new(), Vec::new());
        // Functions and ifunc resolvers (STT_FUNC, STT_GNU_IFUNC) are `Text`.
        for sym in table.symbols().filter(|s| s.kind() == SymbolKind::Text) {
            let (value, size) = (sym.address(), sym.size());
            if vaddr < value || vaddr >= value.saturating_add(size.max(1)) {
                continue;
            }
            let Ok(name) = sym.name() else { continue };
            if value == vaddr {
                exact.push(name.to_string())
            } else {
                covering.push(name.to_string())
            }
        }
        let mut names = if exact.is_empty() { covering } else { exact };
        names.sort();
        names.dedup();
        Ok(Some(names))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_librarys_memcpy_is_named_or_the_reason_given() {
        let f = std::hint::black_box(libc::memcpy as *const () as usize);
        match name_at(f) {
            // glibc on x86-64: an implementation behind the ifunc
            // (`__memmove_avx512_unaligned_erms`, `__memcpy_..`), never the
            // exported name itself.
            Ok(n) => assert!(n.contains("__mem") || n.contains("memcpy"), "{n}"),
            Err(e) => assert!(e.to_string().contains("symbol table") || e.to_string().contains("debug"), "{e}"),
        }
        if Path::new("/usr/lib/debug/.build-id").is_dir() {
            if let Ok(n) = name_at(f) {
                eprintln!("memcpy resolves to {n}");
            }
        }
        assert!(name_at(0).is_err());
    }

    #[test]
    fn bad_files_are_errors() {
        assert!(Elf::parse(b"").is_err());
        assert!(Elf::parse(b"\x7fELF\x01\x01").is_err());
        let mut hdr = vec![0u8; 64];
        hdr[..6].copy_from_slice(b"\x7fELF\x02\x01");
        hdr[0x28] = 0xff; // section headers past the end
        hdr[0x3c] = 1;
        hdr[0x3a] = 64;
        // Refused when parsed, or when its sections or segments are read.
        let refused = Elf::parse(&hdr).map_or(true, |e| e.functions_at(0).is_err() || e.first_load_vaddr().is_err());
        assert!(refused);
    }

    proptest::proptest! {
        #[test]
        fn the_reader_never_panics(mut d in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), v: u64) {
            if d.len() >= 6 {
                d[..6].copy_from_slice(b"\x7fELF\x02\x01");
            }
            if let Ok(e) = Elf::parse(&d) {
                let _ = e.functions_at(v);
                let _ = e.first_load_vaddr();
            }
        }
    }
}
