//! What kdelta gives a shell and `man`: the completion scripts, the manual
//! page, and a `--version` that names the commit it was built from.

use crate::common::{assert_ok, Env};
use std::process::Command;

/// `kdelta`'s path, for scripts that run it themselves.
fn kdelta() -> &'static str {
    env!("CARGO_BIN_EXE_kdelta")
}

fn stdout_of(e: &Env, args: &[&str]) -> String {
    let out = e.cmd().args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// Run `script` in bash with `$K` set to kdelta.
fn bash(script: &str) -> std::process::Output {
    Command::new("bash").arg("-c").arg(script).env("K", kdelta()).output().expect("bash runs")
}

#[test]
fn the_bash_script_registers_and_completes_options() {
    let out = bash(r#"source <("$K" completions bash) && complete -p kdelta"#);
    let said = String::from_utf8_lossy(&out.stdout);
    assert_ok(&out);
    assert!(said.contains("kdelta"), "{said}");
    // What bash does on TAB after `kdelta run --con`: the completion
    // function gets the words, the index of the word under the cursor, and
    // (command, word, previous word) as arguments.
    let out = bash(
        r#"source <("$K" completions bash) || exit 3
        COMP_WORDS=(kdelta run --con); COMP_CWORD=2
        COMP_LINE="kdelta run --con"; COMP_POINT=${#COMP_LINE}
        _kdelta kdelta --con run
        printf '%s\n' "${COMPREPLY[@]}""#,
    );
    let replies = String::from_utf8_lossy(&out.stdout);
    assert_ok(&out);
    assert!(replies.lines().any(|l| l == "--config"), "{replies}");
    // The subcommands themselves, families' own included.
    let out = bash(
        r#"source <("$K" completions bash) || exit 3
        COMP_WORDS=(kdelta lo); COMP_CWORD=1; COMP_LINE="kdelta lo"; COMP_POINT=${#COMP_LINE}
        _kdelta kdelta lo kdelta
        printf '%s\n' "${COMPREPLY[@]}""#,
    );
    let replies = String::from_utf8_lossy(&out.stdout);
    assert!(replies.lines().any(|l| l == "loadfile"), "{replies}");
}

#[test]
fn zsh_and_fish_get_scripts() {
    let e = Env::new();
    let zsh = stdout_of(&e, &["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef kdelta"), "{}", &zsh[..zsh.len().min(200)]);
    let fish = stdout_of(&e, &["completions", "fish"]);
    assert!(fish.contains("complete -c kdelta"), "{}", &fish[..fish.len().min(200)]);
    assert!(fish.contains("config"), "the run options are in the fish script");
}

#[test]
fn an_unknown_shell_is_refused_on_one_line() {
    let e = Env::new();
    let out = e.cmd().args(["completions", "tcsh"]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(err.contains("\"tcsh\"") && err.contains("bash, zsh, fish"), "{err}");
    assert!(out.stdout.is_empty());
}

#[test]
fn the_manual_is_a_roff_page_that_man_renders() {
    let e = Env::new();
    let page = stdout_of(&e, &["man"]);
    assert!(page.starts_with('.'), "{}", &page[..page.len().min(200)]);
    let th = page.lines().position(|l| l.starts_with(".TH kdelta 1")).expect("a .TH line");
    let sh = page.lines().position(|l| l.starts_with(".SH")).expect("sections");
    assert!(th < sh, "the title comes before the sections");
    assert!(page.contains("completions") && page.contains("Results database"), "the page describes the commands");
    // Rendered by man where it is installed.
    if Command::new("man").arg("--version").output().is_err() {
        eprintln!("man is not installed: the page is not rendered");
        return;
    }
    let out = bash(r#""$K" man | MANWIDTH=80 man -l - 2>&1"#);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("NAME") && text.contains("SYNOPSIS") && text.contains("kdelta"), "{text}");
}

#[test]
fn the_version_names_the_commit() {
    let e = Env::new();
    let version = stdout_of(&e, &["--version"]);
    assert!(version.starts_with(&format!("kdelta {} (", env!("CARGO_PKG_VERSION"))), "{version}");
    let root = env!("CARGO_MANIFEST_DIR");
    let head = Command::new("git").args(["rev-parse", "--short", "HEAD"]).current_dir(root).output();
    match head {
        Ok(h) if h.status.success() && std::path::Path::new(root).join(".git").exists() => {
            let hash = String::from_utf8_lossy(&h.stdout).trim().to_string();
            assert!(version.contains(&format!("({hash}")), "{version} does not name {hash}");
        }
        _ => assert!(version.contains("(commit unknown)"), "{version}"),
    }
}
