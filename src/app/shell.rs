//! `kdelta completions SHELL` and `kdelta man`: the completion script and
//! the manual page, both made from the command line's own definition
//! ([`super::command`], families' subcommands included), so they always
//! match the binary that writes them.

use super::*;
use crate::cli::Shell;
use std::path::Path;

pub(super) fn cmd_completions(shell: Shell) -> Result<u8> {
    let mut script = Vec::new();
    clap_complete::generate(clap_complete::Shell::from(shell), &mut command(), "kdelta", &mut script);
    out(&String::from_utf8(script).context("the completion script is not UTF-8")?);
    Ok(exit::OK)
}

pub(super) fn cmd_man() -> Result<u8> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command()).render(&mut page).context("writing the manual page")?;
    out(&String::from_utf8(page).context("the manual page is not UTF-8")?);
    Ok(exit::OK)
}

/// `kdelta man --all DIR`: one page per command and subcommand (hidden ones
/// left out), named as clap names them (`kdelta.1`, `kdelta-run.1`,
/// `kdelta-study-list.1`), into DIR, made if missing. DIR must be a
/// directory: anything else is bad input.
pub(super) fn cmd_man_all(dir: &Path) -> Result<u8> {
    match std::fs::symlink_metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(bad_input(format!("man --all {}: not a directory", dir.display())));
        }
        Ok(_) => {}
        Err(_) => std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?,
    }
    let mut root = command().disable_help_subcommand(true);
    root.build();
    let mut written = 0usize;
    write_pages(&root, dir, &mut written)?;
    eprintln!("wrote {written} manual pages to {}", dir.display());
    Ok(exit::OK)
}

/// Write `cmd`'s page and, depth first, its visible subcommands' pages.
fn write_pages(cmd: &clap::Command, dir: &Path, written: &mut usize) -> Result<()> {
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    let man = clap_mangen::Man::new(cmd.clone());
    let path = dir.join(man.get_filename());
    man.generate_to(dir).with_context(|| format!("writing {}", path.display()))?;
    *written += 1;
    Ok(())
}
