//! `kdelta completions SHELL` and `kdelta man`: the completion script and
//! the manual page, both made from the command line's own definition
//! ([`super::command`], families' subcommands included), so they always
//! match the binary that writes them.

use super::*;
use crate::cli::Shell;

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
