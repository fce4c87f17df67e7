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
//! `libc6-dbg`). Without one, the result says why the name is unknown.
//!
//! The ELF reader is a few bounded reads of a 64-bit little-endian file:
//! every offset is checked against the bytes read, so a truncated or
//! hostile file gives an error, never a panic.

use std::ffi::{c_void, CStr};
use std::path::{Path, PathBuf};

/// The largest file read (a libc debug file is ~4 MiB).
const MAX_FILE: u64 = 256 << 20;

/// Why an ELF file's bytes cannot be read as one (no file named).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ElfError {
    #[error("not an ELF file")]
    NotElf,
    #[error("not a 64-bit little-endian ELF file")]
    NotWideLittle,
    #[error("offset overflows")]
    OffsetOverflows,
    #[error("truncated: {len} bytes at {off:#x} lie outside the file")]
    Truncated { len: u64, off: u64 },
    #[error("short read")]
    ShortRead,
    #[error("section header size {0} below 64")]
    SectionHeaderSize(u64),
    #[error("no loadable segment")]
    NoLoadableSegment,
    #[error("symbol size {0} below 24")]
    SymbolSize(u64),
    #[error("string table {0} does not exist")]
    NoStringTable(u32),
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
    #[error("{} has no symbol table and no build id to find its debug file", .0.display())]
    NoBuildId(PathBuf),
    #[error("{} has no symbol table and its debug file is unreadable ({source}; Debian: libc6-dbg)", .file.display())]
    NoDebugFile { file: PathBuf, source: Box<NameError> },
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
            let id = elf.build_id()?.ok_or_else(|| NameError::NoBuildId(file.clone()))?;
            let debug = crate::sys::debuginfo::by_build_id(Path::new(crate::sys::debuginfo::ROOT), &id);
            let dd =
                read_capped(&debug).map_err(|e| NameError::NoDebugFile { file: file.clone(), source: Box::new(e) })?;
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

/// A section header: type, file offset, size, link, entry size.
type Section = (u32, u64, u64, u32, u64);

/// A 64-bit little-endian ELF file's bytes, checked on every read.
pub(crate) struct Elf<'a> {
    d: &'a [u8],
}

impl<'a> Elf<'a> {
    pub(crate) fn parse(d: &'a [u8]) -> Result<Elf<'a>, ElfError> {
        if d.get(..4) != Some(b"\x7fELF") {
            return Err(ElfError::NotElf);
        }
        if d.get(4) != Some(&2) || d.get(5) != Some(&1) {
            return Err(ElfError::NotWideLittle);
        }
        Ok(Elf { d })
    }

    fn bytes(&self, off: u64, len: u64) -> Result<&'a [u8], ElfError> {
        let end = off.checked_add(len).ok_or(ElfError::OffsetOverflows)?;
        usize::try_from(off)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(a, b)| self.d.get(a..b))
            .ok_or(ElfError::Truncated { len, off })
    }
    fn u16(&self, off: u64) -> Result<u16, ElfError> {
        Ok(u16::from_le_bytes(self.bytes(off, 2)?.try_into().map_err(|_| ElfError::ShortRead)?))
    }
    fn u32(&self, off: u64) -> Result<u32, ElfError> {
        Ok(u32::from_le_bytes(self.bytes(off, 4)?.try_into().map_err(|_| ElfError::ShortRead)?))
    }
    fn u64(&self, off: u64) -> Result<u64, ElfError> {
        Ok(u64::from_le_bytes(self.bytes(off, 8)?.try_into().map_err(|_| ElfError::ShortRead)?))
    }

    /// The section headers.
    fn sections(&self) -> Result<Vec<Section>, ElfError> {
        let shoff = self.u64(0x28)?;
        let shentsize = u64::from(self.u16(0x3a)?);
        let shnum = u64::from(self.u16(0x3c)?);
        if shoff == 0 || shnum == 0 {
            return Ok(Vec::new());
        }
        if shentsize < 64 {
            return Err(ElfError::SectionHeaderSize(shentsize));
        }
        (0..shnum)
            .map(|i| {
                let h = shoff.saturating_add(i.saturating_mul(shentsize));
                Ok((
                    self.u32(h.saturating_add(4))?,
                    self.u64(h.saturating_add(0x18))?,
                    self.u64(h.saturating_add(0x20))?,
                    self.u32(h.saturating_add(0x28))?,
                    self.u64(h.saturating_add(0x38))?,
                ))
            })
            .collect()
    }

    /// The virtual address of the first loadable segment, page-aligned
    /// (the object's load address maps to it).
    fn first_load_vaddr(&self) -> Result<u64, ElfError> {
        let phoff = self.u64(0x20)?;
        let phentsize = u64::from(self.u16(0x36)?);
        let phnum = u64::from(self.u16(0x38)?);
        for i in 0..phnum {
            let h = phoff.saturating_add(i.saturating_mul(phentsize));
            if self.u32(h)? == 1 {
                return Ok(self.u64(h.saturating_add(16))? & !0xfff);
            }
        }
        Err(ElfError::NoLoadableSegment)
    }

    /// The GNU build id, from a note section.
    fn build_id(&self) -> Result<Option<Vec<u8>>, ElfError> {
        for (ty, off, size, _, _) in self.sections()? {
            if ty != 7 {
                continue;
            }
            let mut p = off;
            let end = off.saturating_add(size);
            while p.saturating_add(12) <= end {
                let (namesz, descsz, nt) = (
                    u64::from(self.u32(p)?),
                    u64::from(self.u32(p.saturating_add(4))?),
                    self.u32(p.saturating_add(8))?,
                );
                let name_at = p.saturating_add(12);
                let desc_at = name_at.saturating_add(namesz.div_ceil(4) * 4);
                if nt == 3 && self.bytes(name_at, namesz)? == b"GNU\0" {
                    return Ok(Some(self.bytes(desc_at, descsz)?.to_vec()));
                }
                p = desc_at.saturating_add(descsz.div_ceil(4) * 4);
            }
        }
        Ok(None)
    }

    /// The names of the functions in `.symtab` covering `vaddr` (those
    /// starting exactly there when any do), sorted; `None` without a
    /// `.symtab`.
    pub(crate) fn functions_at(&self, vaddr: u64) -> Result<Option<Vec<String>>, ElfError> {
        let secs = self.sections()?;
        let Some(&(_, off, size, link, entsize)) = secs.iter().find(|s| s.0 == 2) else {
            return Ok(None);
        };
        if entsize < 24 {
            return Err(ElfError::SymbolSize(entsize));
        }
        let &(_, stroff, strsize, _, _) = secs.get(link as usize).ok_or(ElfError::NoStringTable(link))?;
        let strtab = self.bytes(stroff, strsize)?;
        let (mut exact, mut covering) = (Vec::new(), Vec::new());
        for i in 0..size / entsize {
            let s = off.saturating_add(i.saturating_mul(entsize));
            let info = self.bytes(s.saturating_add(4), 1)?[0];
            // STT_FUNC (2) or STT_GNU_IFUNC (10).
            if !matches!(info & 0xf, 2 | 10) {
                continue;
            }
            let (value, sz) = (self.u64(s.saturating_add(8))?, self.u64(s.saturating_add(16))?);
            if vaddr < value || vaddr >= value.saturating_add(sz.max(1)) {
                continue;
            }
            let name_off = self.u32(s)? as usize;
            let name = strtab.get(name_off..).and_then(|t| CStr::from_bytes_until_nul(t).ok());
            let Some(name) = name else { continue };
            let name = name.to_string_lossy().into_owned();
            if value == vaddr {
                exact.push(name)
            } else {
                covering.push(name)
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
        let e = Elf::parse(&hdr).unwrap();
        assert!(e.functions_at(0).is_err());
        assert!(e.first_load_vaddr().is_err());
    }

    proptest::proptest! {
        #[test]
        fn the_reader_never_panics(mut d in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512), v: u64) {
            if d.len() >= 6 {
                d[..6].copy_from_slice(b"\x7fELF\x02\x01");
            }
            if let Ok(e) = Elf::parse(&d) {
                let _ = e.functions_at(v);
                let _ = e.build_id();
                let _ = e.first_load_vaddr();
            }
        }
    }
}
