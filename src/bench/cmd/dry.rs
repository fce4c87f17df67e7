//! The dry run of a command before anything runs: the shell's own syntax
//! check and its first program looked up, so a typo is bad input (exit 2)
//! and not a run of failures (exit 127).

use super::exec::How;
use super::spec;
use crate::error::bad_input;
use anyhow::Result;

/// Words a shell takes as its own syntax, not as a command to find.
const RESERVED: &[&str] =
    &["if", "then", "else", "elif", "fi", "case", "esac", "for", "while", "until", "do", "done", "{", "}", "!", "in"];

/// Refuse, before anything runs, a command that cannot run: no words, a
/// shell that is not there or that finds the text malformed (`SHELL -n`),
/// or a first program the shell cannot find (what would be exit 127).
pub(super) fn dry_run(text: &str, how: &How) -> Result<()> {
    let path = std::env::var("PATH").unwrap_or_default();
    let found = |prog: &str| {
        if prog.contains('/') {
            std::path::Path::new(prog).is_file()
        } else {
            crate::sys::find_in_path(prog, &path).is_some()
        }
    };
    let Some(sh) = &how.shell else {
        let words = spec::split_words(text).map_err(|e| bad_input(format!("`{text}`: {e}")))?;
        return match words.first() {
            None => Err(bad_input("the command is empty".to_string())),
            Some(p) if !found(p) => Err(bad_input(format!("`{text}`: {p}: command not found"))),
            Some(_) => Ok(()),
        };
    };
    if !found(sh) {
        return Err(bad_input(format!("shell {sh}: not found")));
    }
    let out =
        std::process::Command::new(sh).arg("-n").arg("-c").arg(text).stdin(std::process::Stdio::null()).output()?;
    if !out.status.success() {
        let why = String::from_utf8_lossy(&out.stderr);
        let why = why.lines().next().unwrap_or("the shell refuses it");
        return Err(bad_input(crate::model::text::printable(&format!("`{text}`: {why}")).into_owned()));
    }
    let Some(first) = first_program(text) else { return Ok(()) };
    let known = std::process::Command::new(sh)
        .args(["-c", "command -v -- \"$1\" >/dev/null 2>&1", "sh", &first])
        .stdin(std::process::Stdio::null())
        .status()?;
    if !known.success() {
        return Err(bad_input(format!("`{text}`: {first}: command not found")));
    }
    Ok(())
}

/// The program a shell command starts with, when it is plain: its first
/// word after assignments (`LANG=C sort` starts `sort`), unless that is
/// shell syntax or something the shell would expand.
fn first_program(text: &str) -> Option<String> {
    let head = text.split(|c| ";&|<>()\n".contains(c)).next()?;
    let words = spec::split_words(head).ok()?;
    let first = words.into_iter().find(|w| !is_assignment(w))?;
    let plain = !first.is_empty() && !first.contains(|c| "$`*?[{~\\\"'".contains(c));
    (plain && !RESERVED.contains(&first.as_str())).then_some(first)
}

/// `--cmd 'FAST=gzip -1'` is an assignment, then `-1`, not found: when the
/// value assigned is a program, the refusal says how to name the command.
pub(super) fn assignment_hint(e: anyhow::Error, text: &str) -> anyhow::Error {
    let first = text.split_whitespace().next().unwrap_or_default();
    let path = std::env::var("PATH").unwrap_or_default();
    match first.split_once('=') {
        Some((var, value))
            if is_assignment(first)
                && e.to_string().ends_with("command not found")
                && crate::sys::find_in_path(value, &path).is_some() =>
        {
            bad_input(format!(
                "{e} ({var}= reads as an environment assignment; to name the command, spell {var} with a \
                 lower-case letter)"
            ))
        }
        _ => e,
    }
}

fn is_assignment(w: &str) -> bool {
    w.split_once('=').is_some_and(|(n, _)| {
        n.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    })
}
