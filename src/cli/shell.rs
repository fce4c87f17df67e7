//! `kdelta completions SHELL`: the shells, and their parser.

use crate::error::BadInput;

/// `completions SHELL`: the shells kdelta writes a completion script for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Shell {
    Bash,
    Zsh,
    Fish,
}

impl From<Shell> for clap_complete::Shell {
    fn from(s: Shell) -> clap_complete::Shell {
        match s {
            Shell::Bash => clap_complete::Shell::Bash,
            Shell::Zsh => clap_complete::Shell::Zsh,
            Shell::Fish => clap_complete::Shell::Fish,
        }
    }
}

/// Parses [`Shell`] and lists its values for `--help` and the completion
/// scripts, like clap's own enum parser, but refuses an unknown shell on
/// one line ([`BadInput`]) instead of clap's usage block.
#[derive(Clone)]
pub(super) struct ShellParser;

impl clap::builder::TypedValueParser for ShellParser {
    type Value = Shell;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Shell, clap::Error> {
        let one = |s: String| {
            <Shell as clap::ValueEnum>::from_str(&s, false).map_err(|_| {
                let names: Vec<String> = possible_shells().map(|v| v.get_name().to_string()).collect();
                BadInput(format!("unknown shell {s:?}: allowed: {}", names.join(", ")))
            })
        };
        clap::builder::StringValueParser::new().try_map(one).parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = clap::builder::PossibleValue> + '_>> {
        Some(Box::new(possible_shells()))
    }
}

fn possible_shells() -> impl Iterator<Item = clap::builder::PossibleValue> {
    <Shell as clap::ValueEnum>::value_variants().iter().filter_map(clap::ValueEnum::to_possible_value)
}
