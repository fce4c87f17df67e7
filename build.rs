//! Builds `hello`, the dynamically linked C program `lat.proc.exec` and
//! `lat.proc.shell` start (`src/bench/lat/hello.c`), with the target's C
//! compiler as the `cc` crate finds it (`$CC`, `$TARGET_CC`, or the
//! platform's default). kdelta embeds its bytes and writes it into each run's
//! temporary directory, so an installed kdelta needs no file beside it.
//!
//! Without a working C compiler the build still succeeds: it says so
//! (`cargo:warning`), embeds an empty program and records why, and those two
//! benchmarks are reported unavailable with that reason. Nothing falls back
//! to another program silently.

use std::path::PathBuf;
use std::process::Command;

const SOURCE: &str = "src/bench/lat/hello.c";

fn main() {
    println!("cargo:rerun-if-changed={SOURCE}");
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let exe = out.join("hello");
    let error = match build_hello(&exe) {
        Ok(()) => String::new(),
        Err(why) => {
            println!("cargo:warning=lat.proc.exec and lat.proc.shell will be unavailable: {why}");
            // An empty file keeps include_bytes! working; the error says why it is empty.
            std::fs::write(&exe, b"").expect("writing OUT_DIR/hello");
            why
        }
    };
    // One line: cargo reads rustc-env up to the end of the line.
    println!("cargo:rustc-env=KDELTA_HELLO_ERROR={}", error.replace(['\n', '\r'], " "));
}

fn build_hello(exe: &std::path::Path) -> Result<(), String> {
    let tool = cc::Build::new()
        .cargo_metadata(false)
        .debug(false)
        .opt_level(2)
        .try_get_compiler()
        .map_err(|e| format!("no C compiler found to build {SOURCE}: {e}"))?;
    let mut cmd: Command = tool.to_command();
    cmd.arg("-o").arg(exe).arg(SOURCE);
    let shown = format!("{cmd:?}");
    let res = cmd.output().map_err(|e| format!("could not run the C compiler {}: {e}", tool.path().display()))?;
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        return Err(format!("building {SOURCE} failed ({}): {first} [{shown}]", res.status));
    }
    match std::fs::metadata(exe) {
        Ok(m) if m.len() > 0 => Ok(()),
        _ => Err(format!("the C compiler made no program from {SOURCE} [{shown}]")),
    }
}
