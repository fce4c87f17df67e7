//! Part of kdelta's build script (`build.rs` includes this file): builds
//! `libkdelta_mem.so` from `preload/lib.rs` with the same `rustc` and target
//! cargo uses, as a `no_std` `cdylib` with `panic=abort` (which a workspace
//! member could not have without changing the panic strategy of kdelta's
//! own profile), and copies it next to the kdelta binary, where
//! `preload=tuned` looks for it.
//!
//! Like the C programs, a failure does not fail the build: it says so
//! (`cargo:warning`) and records why in `KDELTA_PRELOAD_ERROR`, and the
//! `preload=tuned` configuration is then unavailable with that reason.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The library's own files; the kdelta files it includes by `#[path]` are
/// read from `preload/lib.rs` itself, so the list cannot miss one (it once
/// missed `avx2.rs`, and a rebuilt kdelta ran beside a stale library).
const SOURCES: [&str; 4] = ["preload/lib.rs", "preload/setup.rs", "preload/overlap.rs", "preload/build.rs"];

pub fn build(out: &Path) {
    for s in SOURCES {
        println!("cargo:rerun-if-changed={s}");
    }
    for s in included("preload/lib.rs") {
        println!("cargo:rerun-if-changed={s}");
    }
    let error = match build_lib(out) {
        Ok(()) => String::new(),
        Err(why) => {
            println!("cargo:warning=preload=tuned will be unavailable: {why}");
            why
        }
    };
    println!("cargo:rustc-env=KDELTA_PRELOAD_ERROR={}", error.replace(['\n', '\r'], " "));
}

/// The files `lib` includes with `#[path = "../X"]`, as `X` (relative to
/// the package root). An unreadable `lib` gives none: building it fails
/// later and says why.
fn included(lib: &str) -> Vec<String> {
    let text = std::fs::read_to_string(lib).unwrap_or_default();
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("#[path = \"")?.split('"').next())
        .map(|p| p.strip_prefix("../").unwrap_or(p).to_string())
        .collect()
}

fn build_lib(out: &Path) -> Result<(), String> {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os != "linux" || !(arch == "x86_64" || arch == "aarch64") {
        return Err(format!("libkdelta_mem.so is written for Linux on x86-64 and aarch64, not {os} on {arch}"));
    }
    let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    let target = std::env::var("TARGET").map_err(|_| "cargo did not set TARGET".to_string())?;
    let lib = out.join("libkdelta_mem.so");
    let mut cmd = Command::new(&rustc);
    cmd.args(["--crate-name", "kdelta_mem", "--crate-type", "cdylib", "--edition", "2021", "--target", &target])
        .args(["-C", "opt-level=3", "-C", "panic=abort", "-C", "codegen-units=1", "-C", "debuginfo=0"])
        .arg("-o")
        .arg(&lib)
        .arg("preload/lib.rs");
    if let Ok(linker) = std::env::var(format!("CARGO_TARGET_{}_LINKER", target.to_uppercase().replace('-', "_"))) {
        cmd.arg("-C").arg(format!("linker={linker}"));
    }
    let shown = format!("{cmd:?}");
    let res = cmd.output().map_err(|e| format!("could not run {}: {e}", Path::new(&rustc).display()))?;
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let first = err.lines().find(|l| l.starts_with("error")).unwrap_or("").trim().to_string();
        return Err(format!("building preload/lib.rs failed ({}): {first} [{shown}]", res.status));
    }
    // OUT_DIR is <target dir>/[<triple>/]<profile>/build/kdelta-<hash>/out:
    // three levels up is the directory holding the kdelta binary.
    let bin_dir: PathBuf = out.ancestors().nth(3).ok_or("OUT_DIR has no profile directory above it")?.to_path_buf();
    let dest = bin_dir.join("libkdelta_mem.so");
    // Replace rather than overwrite in place: a running process may have the old one mapped.
    let tmp = bin_dir.join(".libkdelta_mem.so.tmp");
    std::fs::copy(&lib, &tmp).map_err(|e| format!("copying {} to {}: {e}", lib.display(), tmp.display()))?;
    std::fs::rename(&tmp, &dest).map_err(|e| format!("renaming {} to {}: {e}", tmp.display(), dest.display()))?;
    Ok(())
}
