//! The tiny program `lat.proc.exec` and `lat.proc.shell` start with
//! `prog=static`: a static ELF executable of a few dozen bytes of machine
//! code that writes "Hello world\n" to standard output and exits 0, with no
//! dynamic loader or C library start-up, so the figure is the kernel's fork
//! and exec and not ld.so's work. (The default, `prog=hello`, is the
//! dynamically linked C program LMbench runs; see `program.rs`.) kdelta
//! writes it into the worker's temporary directory at run time.
//!
//! Layout: the 64-byte ELF header, one 56-byte PT_LOAD program header mapping
//! the whole file read+execute at 0x400000, then the code, then the message.

/// Machine code for this architecture, and its ELF `e_machine`.
fn code() -> Option<(Vec<u8>, u16)> {
    let msg = b"Hello world\n";
    if cfg!(target_arch = "x86_64") {
        let mut c = vec![
            0xb8, 0x01, 0x00, 0x00, 0x00, // mov eax, 1 (write)
            0xbf, 0x01, 0x00, 0x00, 0x00, // mov edi, 1 (stdout)
            0x48, 0x8d, 0x35, 0x10, 0x00, 0x00, 0x00, // lea rsi, [rip + 16] (the message after the code)
            0xba, 0x0c, 0x00, 0x00, 0x00, // mov edx, 12
            0x0f, 0x05, // syscall
            0xb8, 0x3c, 0x00, 0x00, 0x00, // mov eax, 60 (exit)
            0x31, 0xff, // xor edi, edi
            0x0f, 0x05, // syscall
        ];
        c.extend_from_slice(msg);
        Some((c, 0x3e))
    } else if cfg!(target_arch = "aarch64") {
        let words: [u32; 8] = [
            0xd280_0808, // mov x8, #64 (write)
            0xd280_0020, // mov x0, #1
            0x1000_00c1, // adr x1, #24 (the message after the 8 instructions)
            0xd280_0182, // mov x2, #12
            0xd400_0001, // svc #0
            0xd280_0ba8, // mov x8, #93 (exit)
            0xd280_0000, // mov x0, #0
            0xd400_0001, // svc #0
        ];
        let mut c: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        c.extend_from_slice(msg);
        Some((c, 0xb7))
    } else {
        None
    }
}

/// The whole executable image, or None on an architecture kdelta has no code for.
pub(crate) fn image() -> Option<Vec<u8>> {
    let (code, machine) = code()?;
    const BASE: u64 = 0x40_0000;
    const HDRS: u64 = 64 + 56;
    let total = HDRS + code.len() as u64;
    let mut f = Vec::with_capacity(total as usize);
    f.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    f.extend_from_slice(&2u16.to_le_bytes()); // e_type: EXEC
    f.extend_from_slice(&machine.to_le_bytes());
    f.extend_from_slice(&1u32.to_le_bytes()); // e_version
    f.extend_from_slice(&(BASE + HDRS).to_le_bytes()); // e_entry
    f.extend_from_slice(&64u64.to_le_bytes()); // e_phoff
    f.extend_from_slice(&0u64.to_le_bytes()); // e_shoff
    f.extend_from_slice(&0u32.to_le_bytes()); // e_flags
    f.extend_from_slice(&64u16.to_le_bytes()); // e_ehsize
    f.extend_from_slice(&56u16.to_le_bytes()); // e_phentsize
    f.extend_from_slice(&1u16.to_le_bytes()); // e_phnum
    f.extend_from_slice(&[0; 6]); // e_shentsize, e_shnum, e_shstrndx
    f.extend_from_slice(&1u32.to_le_bytes()); // p_type: LOAD
    f.extend_from_slice(&5u32.to_le_bytes()); // p_flags: R + X
    f.extend_from_slice(&0u64.to_le_bytes()); // p_offset
    f.extend_from_slice(&BASE.to_le_bytes()); // p_vaddr
    f.extend_from_slice(&BASE.to_le_bytes()); // p_paddr
    f.extend_from_slice(&total.to_le_bytes()); // p_filesz
    f.extend_from_slice(&total.to_le_bytes()); // p_memsz
    f.extend_from_slice(&0x1000u64.to_le_bytes()); // p_align
    f.extend_from_slice(&code);
    Some(f)
}

#[cfg(test)]
mod tests {
    #[test]
    #[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
    fn the_tiny_program_runs() {
        let d = tempfile::tempdir().unwrap();
        let w = crate::bench::lat::program::write_to(crate::bench::lat::program::Prog::Static, d.path()).unwrap();
        let out = std::process::Command::new(&w.path).output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert_eq!(out.stdout, b"Hello world\n");
        assert!(w.bytes < 200 && w.linkage.interp.is_none());
    }
}
