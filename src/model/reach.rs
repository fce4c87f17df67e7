//! What a run reaches on its machine beyond kdelta's own benchmarks: the
//! classes of work a queued job may do on an agent's host (`kdelta agent
//! --allow`). Anyone who can write the fleet's store can queue a job, and
//! an agent usually runs as root, so an agent runs none of these unless its
//! operator allows them: a store writer is not made root of every host.
//!
//! Where a reach comes from: a benchmark parameter declares its own
//! ([`crate::model::ParamSpec::reaches`]: any value but its harmless ones),
//! a configuration's modifiers theirs (`config::reach`), `--isolate` is a
//! setting. The plan refuses a point or configuration beyond what the
//! request allows, before anything of it runs (`harness::plan`).
//!
//! A new parameter or modifier that runs, reads, writes or connects to
//! something its user names must declare its class here: an undeclared one
//! runs on every agent.

use std::collections::BTreeSet;

/// One class of work beyond measuring.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Reach {
    /// Runs programs the job names (`cmd`'s commands, a build in your own
    /// tree, `env=`, `preload=PATH`).
    Commands,
    /// Switches kernel settings, makes cgroups or confines other tasks
    /// (`thp=`, `sysfs=`, `memory.max=`, `--isolate`).
    Settings,
    /// Reads or writes files the job names (`cmd`'s `output=FILE`,
    /// dbench's `dir=` and `loadfile=`).
    Files,
    /// Connects to a server the job names (`server=HOST:PORT`).
    Network,
}

impl Reach {
    pub(crate) const ALL: [Reach; 4] = [Reach::Commands, Reach::Settings, Reach::Files, Reach::Network];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Reach::Commands => "commands",
            Reach::Settings => "settings",
            Reach::Files => "files",
            Reach::Network => "network",
        }
    }

    /// What a job of this reach does, after "a job that".
    fn does(self) -> &'static str {
        match self {
            Reach::Commands => "runs commands of its own",
            Reach::Settings => "switches kernel settings, makes cgroups or isolates CPUs",
            Reach::Files => "reads or writes files it names",
            Reach::Network => "connects to a server it names",
        }
    }

    /// `--allow`'s value: `none`, `all`, or names joined by commas.
    pub(crate) fn parse_list(s: &str) -> Result<BTreeSet<Reach>, String> {
        let names = || Reach::ALL.iter().map(|r| r.name()).collect::<Vec<_>>().join(", ");
        match s.trim() {
            "none" => return Ok(BTreeSet::new()),
            "all" => return Ok(Reach::ALL.into_iter().collect()),
            _ => {}
        }
        s.split(',')
            .map(|n| {
                let n = n.trim();
                Reach::ALL
                    .into_iter()
                    .find(|r| r.name() == n)
                    .ok_or_else(|| format!("unknown class {n:?}: allowed: none, all, or any of {}", names()))
            })
            .collect()
    }

    /// The list [`Reach::parse_list`] reads back.
    pub(crate) fn show_list(set: &BTreeSet<Reach>) -> String {
        if set.is_empty() {
            "none".to_string()
        } else {
            set.iter().map(|r| r.name()).collect::<Vec<_>>().join(",")
        }
    }

    /// Why a job is refused: what it would do, where (`example`), and the
    /// flag that lets it.
    pub(crate) fn refusal(self, example: &str) -> String {
        format!(
            "this agent runs no job that {} ({example}); its operator lets it with `kdelta agent --allow {}`",
            self.does(),
            self.name()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_read_back_and_unknown_names_are_refused() {
        assert!(Reach::parse_list("none").unwrap().is_empty());
        assert_eq!(Reach::parse_list("all").unwrap().len(), 4);
        let s = Reach::parse_list("settings, commands").unwrap();
        assert_eq!(Reach::show_list(&s), "commands,settings");
        assert_eq!(Reach::parse_list(&Reach::show_list(&s)).unwrap(), s);
        let e = Reach::parse_list("commands,root").unwrap_err();
        assert!(e.contains("\"root\"") && e.contains("files"), "{e}");
    }
}
