//! Inlined functions named in `perf script` stacks, from the binaries'
//! DWARF, each binary mapped once.
//!
//! `perf script` can name inlined functions itself, but it asks binutils'
//! `addr2line` about every address: a profiled worker's `perf script` took
//! 0.59 s (median) that way and 0.12 s without, where this file's lookup
//! takes about 0.1 s. Here `perf script --no-inline` names each frame by its ELF
//! symbol, and every user-space frame in a binary that carries DWARF (or
//! whose separate debug file is found by build-id or debuglink) is preceded
//! by the functions inlined at that address, innermost first, as `ADDR NAME
//! (inlined)`: the lines `perf script` itself writes, so `inferno` folds
//! them the same way. The frame's own line keeps its ELF symbol (perf
//! prints the DWARF name there where the two differ, e.g. `__GI___sysconf`
//! for `__sysconf`, `handle_intel` for `handle_intel.constprop.0`).
//!
//! A binary that cannot be read, or has no DWARF, keeps its frames as they
//! are: a flame graph without inlined names, never a failed profile.

use gimli::{EndianSlice, RunTimeEndian, SectionId};
use object::{Object, ObjectSection, ObjectSegment};
use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// A file mapped read-only (a binary or its debug file can be tens of MB,
/// of which a lookup touches little).
fn map(path: &Path) -> Option<memmap2::Mmap> {
    let file = std::fs::File::open(path).ok()?;
    // SAFETY: the mapping is private and read-only; a binary changed under
    // it while a profile is folded gives wrong names, not unsafety in Rust's
    // sense, as the bytes are only ever read through parsers that check
    // every bound.
    unsafe { memmap2::Mmap::map(&file) }.ok()
}

/// The functions inlined at each of `offsets` (offsets into the binary at
/// `path`, as perf writes them), innermost first; the function they were
/// inlined into (the frame's own) is not among them. Empty where the
/// binary cannot be read or carries no DWARF.
/// A binary stripped of its DWARF is looked up in its separate debug file
/// under `debug_root`.
fn inlined(path: &Path, offsets: &BTreeSet<u64>, debug_root: &Path) -> HashMap<u64, Vec<String>> {
    let mut found = HashMap::new();
    let Some(data) = map(path) else { return found };
    let Ok(file) = object::File::parse(&*data) else { return found };
    // `(file offset, size, address)` of each loaded segment.
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|s| {
            let (offset, size) = s.file_range();
            (offset, size, s.address())
        })
        .collect();
    let debug_data;
    let debug_file;
    let dwarf_file = if file.section_by_name(".debug_info").is_some() {
        &file
    } else {
        let Some(data) = crate::sys::debuginfo::find(path, &file, debug_root).and_then(|p| map(&p)) else {
            return found;
        };
        debug_data = data;
        let Ok(f) = object::File::parse(&*debug_data) else { return found };
        debug_file = f;
        &debug_file
    };
    let sections = sections(dwarf_file);
    let endian = if dwarf_file.is_little_endian() { RunTimeEndian::Little } else { RunTimeEndian::Big };
    let load = |id: SectionId| -> Result<_, gimli::Error> {
        Ok(EndianSlice::new(sections.get(&id).map(|d| &**d).unwrap_or(&[]), endian))
    };
    let Ok(context) = gimli::Dwarf::load(load).and_then(addr2line::Context::from_dwarf) else { return found };
    for &offset in offsets {
        let Some(addr) =
            segments.iter().find(|(o, size, _)| (*o..o + size).contains(&offset)).map(|(o, _, a)| offset - o + a)
        else {
            continue;
        };
        let Ok(mut frames) = context.find_frames(addr).skip_all_loads() else { continue };
        let mut names = Vec::new();
        while let Ok(Some(frame)) = frames.next() {
            let name = frame.function.as_ref().and_then(|f| f.demangle().ok()).map(Cow::into_owned);
            names.push(name.unwrap_or_else(|| "??".to_string()));
        }
        names.pop();
        found.insert(offset, names);
    }
    found
}

/// The DWARF sections a lookup of names and lines reads, inflated where
/// the file compresses them with zlib (as Debian's debug files do); the
/// location lists of variables, often the largest, are left out.
fn sections<'a>(file: &object::File<'a>) -> HashMap<SectionId, Cow<'a, [u8]>> {
    use SectionId::*;
    let wanted = [
        DebugAbbrev,
        DebugAddr,
        DebugAranges,
        DebugInfo,
        DebugLine,
        DebugLineStr,
        DebugRanges,
        DebugRngLists,
        DebugStr,
        DebugStrOffsets,
        DebugTypes,
    ];
    wanted.into_iter().filter_map(|id| Some((id, section_data(&file.section_by_name(id.name())?)?))).collect()
}

/// A section's bytes, inflated if zlib-compressed (`SHF_COMPRESSED` or an
/// old `.zdebug_*` section); `None` for another compression (zstd: that
/// binary's frames keep their ELF symbols) or a size past `MAX_SECTION`.
fn section_data<'a>(section: &object::Section<'a, '_>) -> Option<Cow<'a, [u8]>> {
    use object::CompressionFormat;
    let packed = section.compressed_data().ok()?;
    match packed.format {
        CompressionFormat::None => Some(Cow::Borrowed(packed.data)),
        CompressionFormat::Zlib => {
            let size = usize::try_from(packed.uncompressed_size).ok().filter(|&n| n <= MAX_SECTION)?;
            let data = miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(packed.data, size).ok()?;
            (data.len() == size).then_some(Cow::Owned(data))
        }
        _ => None,
    }
}

/// The largest debug section inflated: a header claiming more is not
/// believed (memory stays bounded whatever a mapped file says).
const MAX_SECTION: usize = 1 << 30;

/// The parts of a `perf script` frame line (`\t ADDR SYMBOL (DSO)`): the
/// address and the DSO, where the DSO is a file.
fn frame(line: &str) -> Option<(u64, &str)> {
    let body = line.strip_prefix('\t')?.trim_start();
    let (addr, rest) = body.split_once(' ')?;
    let open = rest.rfind(" (")?;
    let dso = rest[open + 2..].trim_end().strip_suffix(')')?;
    if !dso.starts_with('/') {
        return None;
    }
    Some((u64::from_str_radix(addr, 16).ok()?, dso))
}

/// `script` (`perf script --no-inline -F ...,ip,sym,dso` output) with the
/// inlined functions of each user frame added before it. Each binary is
/// mapped once, for all its addresses.
pub(crate) fn expand(script: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(script);
    let lines: Vec<(&str, Option<(u64, &str)>)> = text.split_inclusive('\n').map(|l| (l, frame(l))).collect();
    let mut wanted: HashMap<&str, BTreeSet<u64>> = HashMap::new();
    for (addr, dso) in lines.iter().filter_map(|(_, f)| *f) {
        wanted.entry(dso).or_default().insert(addr);
    }
    let names: HashMap<&str, HashMap<u64, Vec<String>>> = wanted
        .iter()
        .map(|(dso, offsets)| (*dso, inlined(Path::new(dso), offsets, Path::new(crate::sys::debuginfo::ROOT))))
        .collect();
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    for (line, f) in lines {
        if let Some((addr, dso)) = f {
            for name in names.get(dso).and_then(|n| n.get(&addr)).into_iter().flatten() {
                out.push_str(&format!("\t{addr:>16x} {name} (inlined)\n"));
            }
        }
        out.push_str(line);
    }
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn a_frame_line_gives_its_address_and_file() {
        assert_eq!(
            frame("\t          5b7b11 kdelta::bench::lat::pipe::round_trip (/usr/bin/kdelta)\n"),
            Some((0x5b7b11, "/usr/bin/kdelta"))
        );
        assert_eq!(frame("\t 27249 f (a b) (/lib/libc.so.6)"), Some((0x27249, "/lib/libc.so.6")));
        assert_eq!(frame("\tffffffff810d4a10 try_to_wake_up ([kernel.kallsyms])\n"), None);
        assert_eq!(frame("\tffffffffffffffff [unknown] ([unknown])\n"), None);
        assert_eq!(frame("kdelta 1200/1200 cpu-clock: \n"), None);
        assert_eq!(frame("\t f82ad __GI___libc_write (inlined)\n"), None);
        assert_eq!(frame("\tzz f (/bin/x)\n"), None);
    }

    #[test]
    fn frames_in_a_file_that_is_not_a_binary_are_kept_as_they_are() {
        let d = tempfile::tempdir().unwrap();
        let junk = d.path().join("junk");
        std::fs::write(&junk, b"not an ELF file").unwrap();
        let script = format!(
            "prog 1/1 cpu-clock: \n\t 10 f ({})\n\t 20 g ({}/missing)\n\tffffffff81000000 k ([kernel.kallsyms])\n\n",
            junk.display(),
            d.path().display()
        );
        assert_eq!(expand(script.as_bytes()), script.as_bytes());
    }

    /// A function the compiler must inline, in a function it must not,
    /// compiled with DWARF and linked at 0x400000 (so that the offsets perf
    /// writes are not the addresses DWARF speaks of): the program, and the
    /// file offsets of the first 32 bytes of the function that inlines.
    fn compiled(dir: &Path) -> Option<(PathBuf, BTreeSet<u64>)> {
        use object::{ObjectSegment, ObjectSymbol, ObjectSymbolTable};
        let src = dir.join("t.c");
        std::fs::write(
            &src,
            "static inline __attribute__((always_inline)) int inner(volatile int *p) { return *p * 3 + 1; }\n\
             __attribute__((noinline)) int outer(volatile int *p) { return inner(p) + 2; }\n\
             int main(void) { volatile int x = 4; return outer(&x) == 15 ? 0 : 1; }\n",
        )
        .unwrap();
        let exe = dir.join("t");
        let cc = std::process::Command::new("cc")
            .args(["-O1", "-g", "-no-pie", "-Wl,--build-id", "-o"])
            .arg(&exe)
            .arg(&src)
            .status();
        if !cc.is_ok_and(|s| s.success()) {
            eprintln!("no C compiler: skipped");
            return None;
        }
        let data = std::fs::read(&exe).unwrap();
        let file = object::File::parse(&*data).unwrap();
        let outer = file.symbol_table().unwrap().symbols().find(|s| s.name() == Ok("outer")).unwrap().address();
        let seg = file.segments().find(|s| (s.address()..s.address() + s.size()).contains(&outer)).unwrap();
        let offset = seg.file_range().0;
        assert_ne!(seg.address(), offset, "offsets and addresses differ");
        Some((exe, (0..32).map(|i| outer + i - seg.address() + offset).collect()))
    }

    /// The offsets at which `names` has `inner` inlined.
    fn inner_at(names: &HashMap<u64, Vec<String>>) -> Vec<u64> {
        let mut at: Vec<u64> = names.iter().filter(|(_, n)| n == &&["inner"]).map(|(o, _)| *o).collect();
        at.sort();
        at
    }

    #[test]
    fn an_inlined_function_is_named_before_its_caller() {
        let d = tempfile::tempdir().unwrap();
        let Some((exe, offsets)) = compiled(d.path()) else { return };
        let at = inner_at(&inlined(&exe, &offsets, d.path()));
        assert!(!at.is_empty(), "no byte of outer is inner's body");
        let line = format!("\t{:>16x} outer ({})\n", at[0], exe.display());
        let got = String::from_utf8(expand(format!("t 1/1 cpu-clock: \n{line}\n").as_bytes())).unwrap();
        assert_eq!(got, format!("t 1/1 cpu-clock: \n\t{:>16x} inner (inlined)\n{line}\n", at[0]));
    }

    /// A program stripped of its DWARF, as a distribution ships it, with
    /// the DWARF in a debug file named by its build-id.
    #[test]
    fn a_stripped_binary_is_read_through_its_debug_file() {
        let d = tempfile::tempdir().unwrap();
        let Some((exe, offsets)) = compiled(d.path()) else { return };
        let whole = inner_at(&inlined(&exe, &offsets, d.path()));
        let data = std::fs::read(&exe).unwrap();
        let id = object::File::parse(&*data).unwrap().build_id().unwrap().expect("a build-id");
        let root = d.path().join("debug");
        let debug = crate::sys::debuginfo::by_build_id(&root, id);
        std::fs::create_dir_all(debug.parent().unwrap()).unwrap();
        let objcopy = |args: &[&str], f: &Path| std::process::Command::new("objcopy").args(args).arg(f).status();
        if !objcopy(&["--only-keep-debug", exe.to_str().unwrap()], &debug).is_ok_and(|s| s.success()) {
            eprintln!("no objcopy: skipped");
            return;
        }
        assert!(objcopy(&["--strip-debug"], &exe).unwrap().success());
        assert_eq!(inner_at(&inlined(&exe, &offsets, d.path())), Vec::<u64>::new(), "no DWARF without the debug file");
        assert_eq!(inner_at(&inlined(&exe, &offsets, &root)), whole);
    }
}
