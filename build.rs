//! Builds the two C programs of the `lat.proc` benchmarks with the target's C
//! compiler as the `cc` crate finds it (`$CC`, `$TARGET_CC`, or the
//! platform's default): `hello` (`src/bench/lat/hello.c`), the dynamically
//! linked program `lat.proc.exec` and `lat.proc.shell` start, and `forker`
//! (`src/bench/lat/forker.c`), the small process `lat.proc.fork` forks from.
//! kdelta embeds their bytes and writes them into each run's temporary
//! directory, so an installed kdelta needs no file beside it.
//!
//! Without a working C compiler the build still succeeds: it says so
//! (`cargo:warning`), embeds an empty program and records why, and the
//! benchmarks (or parameter points) that need it are reported unavailable
//! with that reason. Nothing falls back to another program silently.
//!
//! It also compiles `src/bench/aim9/jmp.c` (AIM9's setjmp/longjmp loop for
//! `aim9.jmp_test`) into a static library linked into kdelta, with the same
//! compiler; without one, `aim9.jmp_test` is unavailable with the reason
//! (`KDELTA_AIM9_JMP_ERROR`), and the `kdelta_aim9_jmp` cfg is not set.
//!
//! It also builds the preload library `libkdelta_mem.so` next to the kdelta
//! binary (`preload/build.rs`, the same rules).
//!
//! And it stamps the version `kdelta --version` prints (`KDELTA_VERSION`):
//! the package's version and the commit it was built from, `0.1.0 (1a2b3c4)`,
//! with `-dirty` after the hash when tracked files differed from that commit
//! as the stamp was taken, and `(commit unknown)` without git or without a
//! `.git` beside this file.
//! The stamp is taken again whenever HEAD or the branch it names moves (a
//! commit, a checkout), not at every edit: a tree changed since the last
//! commit shows `-dirty` only once one of those moves.

use std::path::PathBuf;
use std::process::Command;

#[path = "preload/build.rs"]
mod preload;

/// (program, source, environment variable for the error, what needs it)
const PROGRAMS: [(&str, &str, &str, &str); 2] = [
    ("hello", "src/bench/lat/hello.c", "KDELTA_HELLO_ERROR", "lat.proc.exec and lat.proc.shell"),
    ("forker", "src/bench/lat/forker.c", "KDELTA_FORKER_ERROR", "lat.proc.fork parent=small"),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    preload::build(&out);
    aim9_jmp();
    version_stamp();
    for (name, source, var, users) in PROGRAMS {
        println!("cargo:rerun-if-changed={source}");
        let exe = out.join(name);
        let error = match build(source, &exe) {
            Ok(()) => String::new(),
            Err(why) => {
                println!("cargo:warning={users} will be unavailable: {why}");
                // An empty file keeps include_bytes! working; the error says why it is empty.
                std::fs::write(&exe, b"").expect("writing a program into OUT_DIR");
                why
            }
        };
        // One line: cargo reads rustc-env up to the end of the line.
        println!("cargo:rustc-env={var}={}", error.replace(['\n', '\r'], " "));
    }
}

fn build(source: &str, exe: &std::path::Path) -> Result<(), String> {
    let tool = cc::Build::new()
        .cargo_metadata(false)
        .debug(false)
        .opt_level(2)
        .try_get_compiler()
        .map_err(|e| format!("no C compiler found to build {source}: {e}"))?;
    let mut cmd: Command = tool.to_command();
    cmd.arg("-o").arg(exe).arg(source);
    let shown = format!("{cmd:?}");
    let res = cmd.output().map_err(|e| format!("could not run the C compiler {}: {e}", tool.path().display()))?;
    if !res.status.success() {
        let err = String::from_utf8_lossy(&res.stderr);
        let first = err.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim().to_string();
        return Err(format!("building {source} failed ({}): {first} [{shown}]", res.status));
    }
    match std::fs::metadata(exe) {
        Ok(m) if m.len() > 0 => Ok(()),
        _ => Err(format!("the C compiler made no program from {source} [{shown}]")),
    }
}

/// AIM9's jmp_test loop as a static library: `-O1` (AIM9 was built with
/// `gcc -O`) and no sibling calls, so the 10-frame recursion keeps its frames.
fn aim9_jmp() {
    const SRC: &str = "src/bench/aim9/jmp.c";
    println!("cargo:rerun-if-changed={SRC}");
    println!("cargo:rustc-check-cfg=cfg(kdelta_aim9_jmp)");
    let res = cc::Build::new()
        .file(SRC)
        .opt_level(1)
        .debug(false)
        .flag_if_supported("-fno-optimize-sibling-calls")
        // gcc takes the dive for endless: it cannot see that longjmp ends it.
        .flag_if_supported("-Wno-infinite-recursion")
        .try_compile("kdelta_aim9_jmp");
    let error = match res {
        Ok(()) => {
            println!("cargo:rustc-cfg=kdelta_aim9_jmp");
            String::new()
        }
        Err(e) => {
            let why = format!("the C compiler did not build {SRC}: {e}");
            println!("cargo:warning=aim9.jmp_test will be unavailable: {why}");
            why
        }
    };
    println!("cargo:rustc-env=KDELTA_AIM9_JMP_ERROR={}", error.replace(['\n', '\r'], " "));
}

/// `KDELTA_VERSION`: the package's version and the commit (see the top).
fn version_stamp() {
    // Only this package's own repository: not one it happens to sit inside.
    let own = std::path::Path::new(".git").exists();
    let commit = match git(&["rev-parse", "--short", "HEAD"]).filter(|_| own) {
        Some(hash) => {
            // Reads only: `--no-optional-locks` keeps status from refreshing the index.
            let dirty = git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            format!("{hash}{}", if dirty { "-dirty" } else { "" })
        }
        None => "commit unknown".to_string(),
    };
    println!("cargo:rustc-env=KDELTA_VERSION={} ({commit})", env!("CARGO_PKG_VERSION"));
    // HEAD, and the branch file it points to (or packed-refs, where git
    // packed it), each where git keeps it (in a worktree, not under ./.git).
    if !own {
        return;
    }
    let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
    watched.extend(git(&["rev-parse", "--symbolic-full-name", "HEAD"]).filter(|r| r.starts_with("refs/")));
    for name in watched {
        // A file that does not exist would make cargo run this script at every build.
        if let Some(path) = git(&["rev-parse", "--git-path", &name]).filter(|p| std::path::Path::new(p).exists()) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
}

/// What `git ARGS` prints, trimmed; `None` when git is missing or fails
/// (no repository).
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
