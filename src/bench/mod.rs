//! Benchmarks: the families and their registry.
//!
//! A benchmark is one small type implementing [`Benchmark`]. It describes
//! itself ([`BenchInfo`]: name, family, unit, direction, parameters), says
//! whether it can run here ([`Benchmark::supported`]), and measures inside a
//! worker process through a [`Sampler`]. It knows nothing of configurations,
//! statistics, storage or output: the harness and reports do that.
//!
//! A family lives in one directory (or file) of `bench/`, named as its
//! benchmarks are (`lat/` for `lat.*`), and describes everything it adds in
//! one [`Family`] value, listed once in [`families`].

pub(crate) mod aim9;
pub(crate) mod build;
pub(crate) mod bw;
pub(crate) mod chat;
pub(crate) mod cmd;
pub(crate) mod dbench;
pub(crate) mod lat;
pub(crate) mod mem;
pub(crate) mod place;
pub(crate) mod testing;
pub(crate) mod thread;

pub use crate::measure::benchmark::Benchmark;
pub(crate) use crate::measure::benchmark::{BenchInfo, Env, Simple, Unsupported};
pub(crate) use crate::measure::sampler::Sampler;
pub(crate) use crate::model::params;
pub use crate::model::Params;
pub(crate) use crate::model::{Better, ParamKind, ParamSpec};

use crate::model::reach::Reach;
use crate::model::record::ResultRecord;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Everything a family adds to kdelta, in one place (as stress-ng's
/// `stressor_info_t` does for a stressor).
pub(crate) struct Family {
    pub(crate) benchmarks: fn() -> Vec<Box<dyn Benchmark>>,
    /// Lines the family adds under a run's tables, computed from its stored
    /// results (mem: speedups per cache regime).
    pub(crate) summary: Option<FamilySummary>,
    /// A server `kdelta serve` can run alone, for clients on another machine.
    pub(crate) server: Option<Server>,
    /// A subcommand of its own (dbench: `kdelta loadfile`).
    pub(crate) command: Option<FamilyCommand>,
    /// Flags it adds to `kdelta run`, each a shorthand for parameter settings.
    pub(crate) run_flags: &'static [RunFlag],
}

/// Parameter settings, as (name, value).
pub(crate) type Settings = Vec<(String, String)>;

/// A flag a family adds to `kdelta run` (`--cmd 'gzip -9 -c data'`): its clap
/// definition, and the `--param` settings the values given turn into.
pub(crate) struct RunFlag {
    /// The argument, as clap builds it; its id is how its values are found.
    pub(crate) arg: fn() -> clap::Arg,
    /// The values given on the command line, in order, as (parameter, value)
    /// settings; a refusal is bad input (exit 2).
    pub(crate) settings: fn(&[String]) -> anyhow::Result<Settings>,
}

/// Lines a family adds under a run's tables, from the run's stored results.
pub(crate) type FamilySummary = fn(&[ResultRecord]) -> Vec<String>;

/// A family's own subcommand: its clap definition and what runs it.
pub(crate) struct FamilyCommand {
    /// The subcommand (name, help, arguments), as clap builds it.
    pub(crate) command: fn() -> clap::Command,
    /// Run it on what clap parsed for it; errors map to exit statuses as any
    /// command's do (bad input: 2).
    pub(crate) run: fn(&clap::ArgMatches) -> anyhow::Result<()>,
}

/// A benchmark's server, run alone by `kdelta serve NAME --listen ADDR`.
pub(crate) struct Server {
    pub(crate) name: &'static str,
    /// The parameters it takes (one value each).
    pub(crate) params: fn() -> Vec<ParamSpec>,
    /// Serve on `listen` within the limits until `stop` becomes true; say
    /// on stderr what the limits counted when it stops.
    pub(crate) serve: fn(&str, &Params, crate::child::ServerLimits, Arc<AtomicBool>) -> anyhow::Result<()>,
}

crate::model::params::choice! {
    /// `model=`: a benchmark's tasks as threads of one process or as
    /// processes, one spelling in every family (`thread.ctx` said
    /// `thread|process`, kept as aliases).
    pub(crate) enum Tasks { Threads = "threads" | "thread", Processes = "processes" | "process" }
}

/// The value of `server` (chat, tbench) that means "start one on loopback
/// for the run"; `auto`, tbench's old spelling, is an alias.
pub(crate) const LOCAL: &str = "local";

/// The `server` parameter of the client/server families, one spelling for both.
pub(crate) fn server_param(help: &'static str) -> ParamSpec {
    ParamSpec::new("server", ParamKind::Text, LOCAL, help).aliases(&[("auto", LOCAL)]).reaches(Reach::Network, &[])
}

/// The `server` a parameter point names: `None` for [`LOCAL`] (or its
/// alias), else the address as given.
pub(crate) fn remote_server(p: &Params) -> anyhow::Result<Option<&str>> {
    let v = p.str("server")?;
    Ok(if server_param("").canonical(v) == LOCAL { None } else { Some(v) })
}

/// A parameter value a benchmark cannot take, as the user's mistake (exit 2).
pub(crate) fn bad_param(e: anyhow::Error) -> anyhow::Error {
    crate::error::bad_input(e.to_string())
}

/// Every family, in listing order. Adding a family adds one line here.
pub(crate) fn families() -> Vec<Family> {
    vec![
        lat::FAMILY,
        bw::FAMILY,
        mem::FAMILY,
        aim9::FAMILY,
        thread::FAMILY,
        chat::FAMILY,
        dbench::DBENCH,
        dbench::TBENCH,
        build::FAMILY,
        cmd::FAMILY,
        place::FAMILY,
        testing::FAMILY,
    ]
}

/// Every benchmark kdelta has, family by family, in listing order.
pub(crate) fn registry() -> Vec<Box<dyn Benchmark>> {
    families().iter().flat_map(|f| (f.benchmarks)()).collect()
}

/// The lines the families of these results add under a run's tables.
pub(crate) fn family_summaries(results: &[ResultRecord]) -> Vec<String> {
    families().iter().filter_map(|f| f.summary).flat_map(|s| s(results)).collect()
}

/// The flags families add to `kdelta run`.
pub(crate) fn run_flags() -> Vec<&'static RunFlag> {
    families().into_iter().flat_map(|f| f.run_flags.iter()).collect()
}

/// The servers `kdelta serve` can run.
pub(crate) fn servers() -> Vec<Server> {
    families().into_iter().filter_map(|f| f.server).collect()
}

/// Find one benchmark by exact name or former name (`chat` for `chat.rooms`).
pub fn find(name: &str) -> Option<Box<dyn Benchmark>> {
    registry().into_iter().find(|b| b.info().is_named(name))
}

/// A benchmark's options with their defaults, as (name, default): what
/// text outputs leave unsaid ([`crate::model::Params::display_set`]). None
/// for a benchmark kdelta does not have.
pub(crate) fn option_defaults(benchmark: &str) -> Vec<(&'static str, &'static str)> {
    infos().iter().find(|i| i.is_named(benchmark)).map(BenchInfo::option_defaults).unwrap_or_default()
}

/// Every benchmark's description, made once per process: reports ask
/// [`option_defaults`] for each result they print, and `find` would build
/// the whole registry each time.
fn infos() -> &'static [BenchInfo] {
    static INFOS: std::sync::OnceLock<Vec<BenchInfo>> = std::sync::OnceLock::new();
    INFOS.get_or_init(|| registry().iter().map(|b| b.info()).collect())
}

/// Stored results as today's benchmarks name them: a former benchmark name
/// becomes the current one and parameter values take their canonical
/// spelling (`model=thread` is `model=threads`), so old runs compare with
/// new ones. Results of benchmarks kdelta no longer has are left as they are.
pub(crate) fn canonical_results(results: &mut [ResultRecord]) {
    let infos: Vec<BenchInfo> = registry().iter().map(|b| b.info()).collect();
    for r in results {
        if let Some(info) = infos.iter().find(|i| i.is_named(&r.benchmark)) {
            r.benchmark = info.name.to_string();
            r.family = info.family.to_string();
            params::canonicalise(&info.params, &mut r.params);
            if info.name == "cmd.run" {
                for (k, v) in cmd::ADDED {
                    r.params.0.entry(k.to_string()).or_insert_with(|| v.to_string());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_benchmark_is_listed_by_the_family_it_is_named_after() {
        let (mut names, mut seen) = (Vec::new(), Vec::new());
        for f in families() {
            let benches = (f.benchmarks)();
            // The hidden test family lists nothing unless asked to.
            let Some(first) = benches.first() else { continue };
            let family = first.info().family;
            assert!(!seen.contains(&family), "two families list {family}");
            seen.push(family);
            for b in benches {
                let info = b.info();
                assert_eq!(info.family, family, "{} is listed with the {family} family", info.name);
                let before_dot = info.name.split('.').next();
                assert_eq!(before_dot, Some(family), "{} is named after another family", info.name);
                assert!(!names.contains(&info.name), "{} listed twice", info.name);
                names.push(info.name);
            }
        }
        assert!(names.len() >= 30, "{}", names.len());
    }

    /// Free text is where paths, commands and addresses go: every text
    /// parameter says what it reaches (`model::reach`), so an agent's
    /// `--allow` covers it, unless it is listed here as naming none.
    #[test]
    fn every_text_parameter_declares_its_reach() {
        const NAMES_NOTHING: &[(&str, &str)] = &[];
        let mut text = 0;
        for b in registry() {
            let info = b.info();
            for p in &info.params {
                if !matches!(p.kind, ParamKind::Text | ParamKind::Lines) {
                    continue;
                }
                text += 1;
                assert!(
                    p.reach.is_some() || NAMES_NOTHING.contains(&(info.name, p.name)),
                    "{} {}= is free text and declares no reach (ParamSpec::reaches)",
                    info.name,
                    p.name
                );
            }
        }
        assert!(text >= 15, "{text}");
    }

    #[test]
    fn former_names_find_the_benchmark() {
        assert_eq!(find("chat").unwrap().info().name, "chat.rooms");
        assert_eq!(find("chat.rooms").unwrap().info().family, "chat");
        assert!(find("chat.nonesuch").is_none());
    }

    #[test]
    fn servers_and_summaries_come_from_their_families() {
        let servers: Vec<&str> = servers().iter().map(|s| s.name).collect();
        assert_eq!(servers, ["lat.tcp", "chat", "tbench"]);
        assert!(family_summaries(&[]).is_empty());
    }
}
