//! `kdelta loadfile`, the family's own subcommand: `loadfile generate [--ops N]
//! [--seed S] [-o FILE]` writes kdelta's NetBench-like loadfile (see
//! [`super::generate`]) to a file or stdout.

use anyhow::{Context, Result};
use std::io::Write;
use std::path::PathBuf;

/// Largest loadfile `generate` writes (about 400 MB of text).
pub(crate) const MAX_OPS: usize = 10_000_000;

/// Loadfiles for dbench and tbench.
#[derive(clap::Parser, Debug)]
#[command(name = "loadfile")]
struct Loadfile {
    #[command(subcommand)]
    command: LoadfileCommand,
}

#[derive(clap::Subcommand, Debug)]
enum LoadfileCommand {
    /// Write kdelta's deterministic NetBench-like loadfile (dbench 4 format).
    Generate(LoadfileGenerateArgs),
}

/// The subcommand's definition, for the top-level parser.
pub(crate) fn command() -> clap::Command {
    <Loadfile as clap::CommandFactory>::command()
}

/// Run what the top-level parser matched for `loadfile`.
pub(crate) fn run(m: &clap::ArgMatches) -> Result<()> {
    let l = <Loadfile as clap::FromArgMatches>::from_arg_matches(m)
        .map_err(|e| crate::error::bad_input(e.to_string().trim_end().to_string()))?;
    match l.command {
        LoadfileCommand::Generate(a) => loadfile_generate(&a),
    }
}

#[derive(clap::Args, Debug, Clone)]
pub(crate) struct LoadfileGenerateArgs {
    /// Number of operations (lines that are not comments)
    #[arg(long, default_value_t = super::GEN_OPS)]
    pub(crate) ops: usize,
    /// Seed: the same seed and count give the same file
    #[arg(long, default_value_t = super::GEN_SEED)]
    pub(crate) seed: u64,
    /// Write to FILE instead of stdout
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub(crate) output: Option<PathBuf>,
}

pub(crate) fn loadfile_generate(args: &LoadfileGenerateArgs) -> Result<()> {
    if args.ops < super::generate::MIN_OPS || args.ops > MAX_OPS {
        return Err(crate::error::bad_input(format!(
            "--ops {} is not allowed: expected {} to {}",
            args.ops,
            super::generate::MIN_OPS,
            MAX_OPS
        )));
    }
    if let Some(p) = &args.output {
        crate::sys::output::check_output_path("-o", p)?;
    }
    let text = super::generate::generate(args.ops, args.seed);
    match &args.output {
        Some(p) => crate::sys::output::write_output("-o", p, text.as_bytes()),
        None => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).context("writing the loadfile to stdout")?;
            out.flush().context("writing the loadfile to stdout")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_a_file_and_refuses_bad_counts() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("lf.txt");
        loadfile_generate(&LoadfileGenerateArgs { ops: 100, seed: 3, output: Some(p.clone()) }).unwrap();
        let lf = crate::bench::dbench::loadfile::load(&p).unwrap();
        assert_eq!(lf.ops.len(), 100);
        let e = loadfile_generate(&LoadfileGenerateArgs { ops: 1, seed: 3, output: Some(p) }).unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{e}");
    }
}
