//! `libkdelta_mem.so`, the preload library `cargo build` puts next to the
//! kdelta binary: its exported symbols, that it never calls them itself, its
//! routines against references through a C program (`tests/preload/check.c`,
//! guard pages, random sizes, offsets and overlaps), real programs giving
//! byte-identical output under `LD_PRELOAD`, and the `preload=` modifier.
//! Tools that are missing (nm, objdump, cc, sort, python3, git) skip their
//! part with a printed `SKIPPED:` reason.

use crate::common;
use crate::common::{assert_ok, Env};
use std::path::{Path, PathBuf};
use std::process::Command;

const EXPORTS: [&str; 4] = ["memcpy", "memmove", "memset", "strlen"];

fn lib() -> PathBuf {
    let exe = assert_cmd::cargo::cargo_bin("kdelta");
    let lib = exe.parent().unwrap().join("libkdelta_mem.so");
    assert!(lib.is_file(), "cargo build should have put {} next to kdelta", lib.display());
    lib
}

fn have(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().is_ok_and(|o| o.status.success())
}

fn run(cmd: &mut Command) -> std::process::Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn exports_exactly_the_four_routines() {
    if !have("nm") {
        println!("SKIPPED: nm (binutils) not installed");
        return;
    }
    let out = run(Command::new("nm").args(["-D", "--defined-only"]).arg(lib()));
    let mut names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
        .collect();
    names.sort();
    assert_eq!(names, EXPORTS, "exported symbols");
    // And it needs nothing but a few C library calls of its constructor.
    let out = run(Command::new("nm").args(["-D", "--undefined-only"]).arg(lib()));
    let undefined = String::from_utf8_lossy(&out.stdout).to_string();
    for name in EXPORTS {
        assert!(!undefined.lines().any(|l| l.split_whitespace().last() == Some(name)), "imports {name}: {undefined}");
    }
}

#[test]
fn never_calls_what_it_defines() {
    if !have("objdump") {
        println!("SKIPPED: objdump (binutils) not installed");
        return;
    }
    let out = run(Command::new("objdump").args(["-d", "--no-show-raw-insn"]).arg(lib()));
    let text = String::from_utf8_lossy(&out.stdout);
    let mut bad = Vec::new();
    for line in text.lines() {
        let Some(insn) = line.split('\t').nth(1) else { continue };
        if !(insn.starts_with("call")
            || insn.starts_with("jmp")
            || insn.starts_with('j')
            || insn.starts_with("bl")
            || insn.starts_with('b'))
        {
            continue;
        }
        // A branch to the start of one of the four (or its PLT entry), not
        // within it (`<memcpy+0x40>`).
        for name in EXPORTS {
            if line.contains(&format!("<{name}>")) || line.contains(&format!("<{name}@plt>")) {
                bad.push(line.to_string());
            }
        }
    }
    assert!(bad.is_empty(), "the library calls its own symbols:\n{}", bad.join("\n"));
    // No relocation lets it reach the four through its GOT either.
    let out = run(Command::new("objdump").arg("-R").arg(lib()));
    let relocs = String::from_utf8_lossy(&out.stdout);
    for name in EXPORTS {
        assert!(
            !relocs.lines().any(|l| l.split_whitespace().last() == Some(name)),
            "relocation against {name}:\n{relocs}"
        );
    }
}

#[test]
fn routines_match_references_between_guard_pages() {
    if !have("cc") {
        println!("SKIPPED: no C compiler (cc) to build the check program");
        return;
    }
    let t = tempfile::tempdir().unwrap();
    let exe = t.path().join("check");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/preload/check.c");
    run(Command::new("cc").args(["-O1", "-fno-builtin", "-o"]).arg(&exe).arg(&src).arg("-ldl"));
    let lib = lib();
    for seed in 1..=3 {
        let out = run(Command::new(&exe).arg(&lib).arg(seed.to_string()).arg("1500"));
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.starts_with("ok 1500 cases") && said.contains("libkdelta_mem.so"), "{said}");
    }
    // The same program with the library preloaded (its own loops and the
    // C library's internals then run on it too).
    run(Command::new(&exe).env("LD_PRELOAD", &lib).arg(&lib).arg("9").arg("500"));
}

/// `cmd` in `dir`, with and without the library: the outputs (stdout, and
/// the files named) must be byte-identical.
fn same_with_and_without(what: &str, dir: &Path, script: &str, files: &[&str]) {
    let go = |preload: bool| {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script).current_dir(dir).env("LC_ALL", "C");
        if preload {
            c.env("LD_PRELOAD", lib());
        }
        let out = run(&mut c);
        let mut bytes = out.stdout;
        for f in files {
            bytes.extend(std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{what}: {f}: {e}")));
        }
        bytes
    };
    let plain = go(false);
    let preloaded = go(true);
    assert!(!plain.is_empty(), "{what}: no output");
    assert!(
        plain == preloaded,
        "{what}: output differs under LD_PRELOAD ({} vs {} bytes)",
        plain.len(),
        preloaded.len()
    );
    println!("{what}: {} bytes identical with and without the preload", plain.len());
}

#[test]
fn real_programs_give_identical_output() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path();
    if have("cc") {
        std::fs::write(d.join("a.c"), "#include <string.h>\n#include <stdio.h>\nint f(const char *s);\nint main(void){char b[64];memset(b,'x',63);b[63]=0;printf(\"%d %zu\\n\",f(b),strlen(b));return 0;}\n").unwrap();
        std::fs::write(d.join("b.c"), "#include <string.h>\nint f(const char *s){char t[128];memcpy(t,s,strlen(s)+1);memmove(t+1,t,32);return (int)strlen(t);}\n").unwrap();
        same_with_and_without(
            "cc",
            d,
            "cc -O2 -c a.c -o a.o && cc -O2 -c b.c -o b.o && cc -o prog a.o b.o && ./prog",
            &["a.o", "b.o"],
        );
    } else {
        println!("SKIPPED: cc not installed");
    }
    if have("sort") {
        // About 6 MB of pseudo-random lines.
        let mut s = String::new();
        let mut x: u64 = 88172645463325252;
        for _ in 0..200_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            s.push_str(&format!("{:016x} line {}\n", x, x % 1000));
        }
        std::fs::write(d.join("big.txt"), s).unwrap();
        same_with_and_without(
            "sort",
            d,
            "sort big.txt | sort -k3,3n -s | md5sum; sort -u big.txt > sorted.txt",
            &["sorted.txt"],
        );
    } else {
        println!("SKIPPED: sort not installed");
    }
    if have("python3") {
        same_with_and_without(
            "python3",
            d,
            "python3 -c 'import json,hashlib,re; d={str(i):[i*i,\"x\"*(i%300)] for i in range(20000)}; s=json.dumps(d,sort_keys=True); print(hashlib.sha256(s.encode()).hexdigest(), len(re.findall(\"x+\", s)), bytes(range(256))*3 == bytearray(bytes(range(256))*3))'",
            &[],
        );
    } else {
        println!("SKIPPED: python3 not installed");
    }
    if have("git") {
        let repo = d.join("repo");
        std::fs::create_dir(&repo).unwrap();
        let env = "GIT_AUTHOR_NAME=k GIT_AUTHOR_EMAIL=k@x GIT_COMMITTER_NAME=k GIT_COMMITTER_EMAIL=k@x GIT_AUTHOR_DATE='2001-01-01T00:00:00Z' GIT_COMMITTER_DATE='2001-01-01T00:00:00Z' HOME=/nonexistent GIT_CONFIG_NOSYSTEM=1";
        let script = format!(
            "rm -rf .git ./*.txt && for i in $(seq 0 19); do yes \"file $i\" | head -n $((100 + i * 50)) > f$i.txt; done && {env} git init -q . && {env} git add . && {env} git commit -q -m one && sed -i 's/file 3/FILE 3/' f3.txt && {env} git commit -qam two && {env} git log --stat && {env} git diff HEAD~1 && {env} git rev-parse HEAD && {env} git gc -q && {env} git fsck --full 2>&1"
        );
        same_with_and_without("git", &repo, &script, &[]);
    } else {
        println!("SKIPPED: git not installed");
    }
}

#[test]
fn preload_modifier_runs_and_refuses() {
    let e = Env::new();
    // preload=tuned: the worker runs with LD_PRELOAD; the run completes.
    let out = e
        .cmd()
        .args([
            "run",
            "mem.strlen",
            "--param",
            "impl=libc,tuned",
            "--param",
            "size=1K",
            "--param",
            "cache=warm",
            "--config",
            "up,up+preload=tuned",
        ])
        .args(["--runs", "1", "--sample-time", "1ms", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let v = common::json(&out.stdout);
    let configs: Vec<&str> = v["results"].as_array().unwrap().iter().map(|r| r["config"].as_str().unwrap()).collect();
    assert!(configs.contains(&"up+preload=tuned") && configs.contains(&"up"), "{configs:?}");
    // A path that does not exist is bad input; a file that is no shared
    // library makes the configuration unavailable, with the reason.
    let out = e.cmd().args(["run", "mem.strlen", "--config", "up+preload=/no/such/lib.so"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file"));
    let text = e.dir.path().join("not-a-lib.so");
    std::fs::write(&text, "hello\n").unwrap();
    let out =
        e.cmd().args(["run", "mem.strlen", "--config"]).arg(format!("up+preload={}", text.display())).output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unavailable") && err.contains("not an ELF"), "{err}");
}
