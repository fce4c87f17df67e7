//! Planning a run: select benchmarks, expand each one's parameter sweep,
//! check every point and resolve every configuration, all before anything
//! runs or is stored, so that every mistake is bad input (exit 2).

use crate::config::{self, Config, Unavailable};
use crate::error::bad_input;
use crate::measure::benchmark::{BenchInfo, Benchmark, Env};
use crate::model::reach::Reach;
use crate::model::Params;
use crate::topology::Topology;
use anyhow::Result;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// `--quiet-wait`'s default, for runs made without the flag (studies).
pub(crate) const DEFAULT_QUIET_WAIT: Duration = Duration::from_secs(3);

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    pub(crate) selectors: Vec<String>,
    pub(crate) configs: Vec<String>,
    pub(crate) overrides: BTreeMap<String, String>,
    pub(crate) runs: Runs,
    /// `--runs auto`: the target half-width of each median's 95 % interval,
    /// percent, for a point that is compared with nothing.
    pub(crate) ci_target_pct: f64,
    /// The noise threshold (percent) a comparison is settled against
    /// (`stats::verdict::answer`) under `--runs auto`.
    pub(crate) threshold_pct: f64,
    /// `--budget`: no extra round starts once the run has taken this long
    /// (and a point may then take more than 3x its samples). `None`: extra
    /// rounds take at most twice the planned rounds' time.
    pub(crate) budget: Option<Duration>,
    pub(crate) quick: bool,
    pub(crate) label: Option<String>,
    pub(crate) skip_unavailable: bool,
    /// Target length of one sample.
    pub(crate) sample_time: Duration,
    /// Minimum warm-up in each worker before its first sample.
    pub(crate) warmup: Duration,
    /// Untimed runs first, for benchmarks that count them (`--warmup N`).
    pub(crate) warmup_runs: Option<u64>,
    /// No `--warmup` given: the warm-up may end once the loop settles.
    pub(crate) warmup_settles: bool,
    /// How long a whole-run sample waits for quiet CPUs after a disturbed
    /// one (`SamplerSettings::quiet_wait`).
    pub(crate) quiet_wait: Duration,
    /// `--counters`: count perf events of the measured tasks in every sample.
    pub(crate) counters: bool,
    /// Overrides every benchmark's worker time limit.
    pub(crate) timeout: Option<Duration>,
    pub(crate) command: String,
    /// Where kernel settings are judged and switched (`None`: `/`).
    pub(crate) sysfs_root: Option<std::path::PathBuf>,
    /// How the values of a compared parameter alternate.
    pub(crate) interleave: Interleave,
    /// Why `interleave` is what it is when the user did not say: what
    /// `kdelta doctor` measured on this host (stated with the run).
    pub(crate) interleave_why: Option<String>,
    /// What the user attached to the run (`--meta`), stored with it.
    pub(crate) meta: crate::model::meta::RunMeta,
    /// `--isolate`: every other task kept off the measured CPUs for the run.
    pub(crate) isolate: bool,
    /// `--profile`: how workers sample stacks after their measured samples.
    pub(crate) profile: Option<crate::measure::profile::ProfileSettings>,
    /// The queue job this run answers (`kdelta agent`), recorded with the
    /// run; the harness only passes it to the store.
    pub(crate) job: Option<i64>,
    /// No progress bar, even on a terminal (`--style color|none`).
    pub(crate) no_progress: bool,
    /// What the run may reach beyond measuring (a job of `kdelta agent`:
    /// its `--allow`); `None`: anything (a person asked for it).
    pub(crate) allowed: Option<BTreeSet<Reach>>,
}

/// How the values a user compares (`--param impl=libc,tuned`) alternate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Interleave {
    /// In one worker, sample by sample, for benchmarks that allow it
    /// (`BenchInfo::lockstep`); a worker per value otherwise.
    #[default]
    Samples,
    /// As `Samples`, the turns always in the same order (0, 1, 0, 1, ...).
    Lockstep,
    /// As `Samples`, but each cycle's samples taken at the same moment,
    /// each on its own CPU of the configuration, the CPUs swapping each
    /// cycle (`sampler::turns`); as `Samples` where the configuration has
    /// fewer CPUs than the tie has points.
    Duet,
    /// A worker per value, side by side.
    Workers,
}

impl Interleave {
    /// Whether compared values share a worker (all but `Workers`).
    pub(crate) fn ties(self) -> bool {
        self != Interleave::Workers
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Interleave::Samples => "samples",
            Interleave::Lockstep => "lockstep",
            Interleave::Duet => "duet",
            Interleave::Workers => "workers",
        }
    }
}

/// How many samples each result takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Runs {
    /// Each benchmark's own count; `auto` when the run compares (two or
    /// more configurations, or a swept parameter) and is not `--quick`.
    #[default]
    Default,
    /// Exactly this many clean samples (disturbed ones are still retaken).
    Fixed(usize),
    /// At least each benchmark's own count, then more rounds until the
    /// median's interval meets the target or the cap (3x) is reached.
    Auto,
}

/// One benchmark at one parameter point.
pub(crate) struct Item {
    pub(crate) bench: Arc<dyn Benchmark>,
    pub(crate) info: BenchInfo,
    pub(crate) params: Params,
    pub(crate) unsupported: Option<String>,
}

/// A configuration this run uses, or one recorded as unavailable.
#[derive(Debug, Clone)]
pub(crate) enum PlannedConfig {
    Ready(Config),
    Unavailable { name: String, reason: String },
}

impl PlannedConfig {
    pub(crate) fn name(&self) -> &str {
        match self {
            PlannedConfig::Ready(c) => &c.name,
            PlannedConfig::Unavailable { name, .. } => name,
        }
    }
}

pub(crate) struct Plan {
    pub(crate) items: Vec<Item>,
    pub(crate) configs: Vec<PlannedConfig>,
}

/// Select benchmarks: a family (`lat`), a name (`lat.syscall`) or a glob
/// (`lat.sel*`). Unknown selectors are bad input listing what exists.
pub(crate) fn select(selectors: &[String], all: Vec<Box<dyn Benchmark>>) -> Result<Vec<Box<dyn Benchmark>>> {
    let infos: Vec<BenchInfo> = all.iter().map(|b| b.info()).collect();
    let mut chosen = vec![false; all.len()];
    for sel in selectors {
        let pat = glob::Pattern::new(sel).map_err(|e| bad_input(format!("bad selector {sel:?}: {e}")))?;
        let mut hit = false;
        for (i, info) in infos.iter().enumerate() {
            if info.is_named(sel) || info.family == sel || pat.matches(info.name) {
                chosen[i] = true;
                hit = true;
            }
        }
        if !hit {
            // `kdelta run 'gzip -1 f'`: a command where a benchmark goes.
            let path = std::env::var("PATH").unwrap_or_default();
            let program = sel.split_whitespace().next().unwrap_or_default();
            if sel.contains(char::is_whitespace) || crate::sys::find_in_path(program, &path).is_some() {
                return Err(bad_input(format!(
                    "unknown benchmark {sel:?}: to time a command, name the cmd family: kdelta run cmd --cmd '{}'",
                    sel.replace('\'', "'\\''")
                )));
            }
            let mut families: Vec<&str> = infos.iter().map(|i| i.family).collect();
            families.dedup();
            let near = nearest(sel, infos.iter().map(|i| i.name).chain(families.iter().copied()))
                .map(|n| format!(" (did you mean {n}?)"))
                .unwrap_or_default();
            return Err(bad_input(format!(
                "unknown benchmark {sel:?}{near}: families: {}; names: see `kdelta list`",
                families.join(", ")
            )));
        }
    }
    Ok(all.into_iter().zip(chosen).filter(|(_, c)| *c).map(|(b, _)| b).collect())
}

/// The name `sel` was most likely a typo of, when one is close enough
/// (Jaro-Winkler similarity 0.9 or more: `lat.sycall` for `lat.syscall`).
fn nearest<'a>(sel: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    names
        .map(|n| (strsim::jaro_winkler(sel, n), n))
        .filter(|(score, _)| *score >= 0.9)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, n)| n)
}

/// Build the plan from the benchmarks kdelta has (`all`); every mistake in
/// the request is reported here, before anything runs or is stored.
pub(crate) fn plan(req: &Request, topo: &Topology, all: Vec<Box<dyn Benchmark>>) -> Result<Plan> {
    if req.selectors.is_empty() {
        return Err(bad_input(
            "no benchmark given: name a family (lat), a benchmark (lat.syscall) or a glob; see `kdelta list`",
        ));
    }
    if req.isolate {
        within_reach(req, [(Reach::Settings, "--isolate".to_string())])?;
    }
    let benches = select(&req.selectors, all)?;
    let infos: Vec<BenchInfo> = benches.iter().map(|b| b.info()).collect();
    check_overrides(req, &infos)?;
    let env = Env { topology: topo };
    let memory = crate::sys::memory::meminfo();
    let mut items = Vec::new();
    for (b, info) in benches.into_iter().zip(infos) {
        let own = own_values(req, &info);
        let points = crate::model::params::expand_open(&info.params, &own, req.quick, info.name, info.open)
            .map_err(|e| bad_input(e.to_string()))?;
        let b: Arc<dyn Benchmark> = Arc::from(b);
        for p in points {
            within_reach(req, point_reach(&info, &p))?;
            let unsupported = b.supported_at(&env, &p).err().map(|e| e.to_string());
            if unsupported.is_none() {
                b.check(&p)?;
                if let (Some(need), Some(m)) = (b.memory(&p), memory) {
                    check_memory(info.name, &p, need, m)?;
                }
            }
            items.push(Item { bench: b.clone(), info: info.clone(), params: p, unsupported });
        }
    }
    let names: Vec<String> = if req.configs.is_empty() { vec!["all".to_string()] } else { req.configs.clone() };
    let mut configs = Vec::new();
    for n in &names {
        within_reach(req, config::reach(n))?;
        match config::resolve(n, topo).and_then(|c| check_knobs(c, req)) {
            Ok(c) => {
                if configs.iter().any(|x: &PlannedConfig| x.name() == c.name) {
                    return Err(bad_input(format!("configuration {:?} given twice", c.name)));
                }
                configs.push(PlannedConfig::Ready(c));
            }
            Err(e) => match e.downcast_ref::<Unavailable>() {
                Some(u) if req.skip_unavailable => {
                    configs.push(PlannedConfig::Unavailable { name: u.name.clone(), reason: u.reason.clone() })
                }
                Some(_) => return Err(e.context("add --skip-unavailable to record it as unavailable and run the rest")),
                None => return Err(e),
            },
        }
    }
    if configs.iter().any(|c| matches!(c, PlannedConfig::Ready(c) if !c.knobs.is_empty())) {
        super::journal::preflight(&req.root())?;
    }
    let ready: Vec<Config> =
        configs.iter().filter_map(|c| if let PlannedConfig::Ready(c) = c { Some(c.clone()) } else { None }).collect();
    isolated_cpus(req, &ready, topo)?;
    if req.isolate || ready.iter().any(|c| !c.cgroup.is_empty()) {
        super::journal::preflight_cgroups(&req.root())?;
    }
    Ok(Plan { items, configs })
}

/// The values the request sets for `info`'s parameters.
fn own_values(req: &Request, info: &BenchInfo) -> BTreeMap<String, String> {
    // Scoped overrides (`bw.mem.*:size=1M`) win over plain ones (`size=1M`).
    let mut own: BTreeMap<String, String> = BTreeMap::new();
    for scoped in [false, true] {
        for (k, v) in &req.overrides {
            if k.contains(':') == scoped {
                if let Some(name) = param_for(k, info) {
                    own.insert(name.to_string(), v.clone());
                }
            }
        }
    }
    // `--warmup N` is the count of a benchmark's own warm-up runs
    // (`cmd`): stored as its parameter, so every output says it.
    if let Some(n) = req.warmup_runs {
        let counted = |s: &crate::model::ParamSpec| {
            s.name == "warmup" && matches!(s.kind, crate::model::params::ParamKind::Int { .. })
        };
        if info.params.iter().any(counted) {
            own.entry("warmup".to_string()).or_insert_with(|| n.to_string());
        }
    }
    own
}

/// Every `--param` must belong to at least one selected benchmark; else
/// bad input listing the parameters they take.
fn check_overrides(req: &Request, infos: &[BenchInfo]) -> Result<()> {
    for k in req.overrides.keys() {
        if !infos.iter().any(|i| param_for(k, i).is_some()) {
            let mut names: Vec<&str> = Vec::new();
            for i in infos {
                for p in &i.params {
                    if !names.contains(&p.name) {
                        names.push(p.name);
                    }
                }
            }
            let allowed = if names.is_empty() {
                "the selected benchmarks take no parameters".to_string()
            } else {
                format!("allowed: {}", names.join(", "))
            };
            return Err(bad_input(format!(
                "unknown parameter {k:?}: {allowed} (scope one to some benchmarks with SELECTOR:NAME=V)"
            )));
        }
    }
    Ok(())
}

/// A configuration whose kernel settings this machine cannot apply is
/// [`Unavailable`], with the machine's reason.
fn check_knobs(c: Config, req: &Request) -> Result<Config> {
    if let Err(reason) = config::cgroup::check(&c.cgroup, &req.root()) {
        return Err(anyhow::Error::new(Unavailable { name: c.name.clone(), reason }));
    }
    config::knobs::check_distinct(&c.knobs, &req.root(), &c.name)?;
    for s in &c.knobs {
        if let Err(reason) = config::knobs::check(s, &req.root()) {
            return Err(anyhow::Error::new(Unavailable { name: c.name.clone(), reason }));
        }
    }
    Ok(c)
}

/// With `--isolate`, the CPUs kept for measuring: every CPU the
/// configurations that run use. Bad input, one line, when it cannot be done:
/// not root, no cpuset controller, or no CPU left for the other tasks.
pub(crate) fn isolated_cpus(req: &Request, ready: &[Config], topo: &Topology) -> Result<Option<crate::cpuset::CpuSet>> {
    if !req.isolate {
        return Ok(None);
    }
    let root = req.root();
    if root == std::path::Path::new("/") && !crate::sys::knobs::is_root() {
        return Err(bad_input("--isolate needs root: it moves every other task off the measured CPUs"));
    }
    let layout = crate::sys::cgroup::Layout::read(&root);
    if layout.cpuset.is_none() {
        return Err(bad_input(format!(
            "--isolate needs the cgroup cpuset controller, not mounted here ({})",
            layout.describe()
        )));
    }
    let mut cpus = crate::cpuset::CpuSet::new();
    for c in ready {
        cpus = cpus.union(&c.cpus);
    }
    let usable = topo.usable().online.clone();
    if cpus.is_empty() || usable.difference(&cpus).is_empty() {
        return Err(bad_input(format!(
            "--isolate needs a CPU left for every other task: the configurations use CPUs {cpus} of the usable {usable}; measure on fewer (e.g. --config cpus={})",
            usable.iter().last().unwrap_or(0)
        )));
    }
    Ok(Some(cpus))
}

/// What parameter point `p` of `info` reaches beyond measuring, each with
/// the parameter that does.
fn point_reach(info: &BenchInfo, p: &Params) -> Vec<(Reach, String)> {
    info.params
        .iter()
        .filter_map(|s| {
            let v = p.0.get(s.name)?;
            let r = s.reach_of(v)?;
            let shown: String = v.chars().take(60).collect();
            Some((r, format!("{} {}={shown}", info.name, s.name)))
        })
        .collect()
}

/// A request's work beyond what it allows: its class and where.
#[derive(Debug, thiserror::Error)]
#[error("{}", .0.refusal(.1))]
pub(crate) struct BeyondReach(pub(crate) Reach, pub(crate) String);

/// Refuse (bad input, before anything runs) what the request does not
/// allow: a job's work an agent's operator did not let it do.
fn within_reach(req: &Request, reach: impl IntoIterator<Item = (Reach, String)>) -> Result<()> {
    let Some(allowed) = &req.allowed else { return Ok(()) };
    match reach.into_iter().find(|(r, _)| !allowed.contains(r)) {
        Some((r, example)) => {
            let e = BeyondReach(r, example);
            let line = e.to_string();
            Err(anyhow::Error::new(e).context(crate::error::BadInput(line)))
        }
        None => Ok(()),
    }
}

/// Every class of work beyond measuring that `req` needs, each with its
/// first example, as planning on `topo` finds them (what `submit` tells
/// the submitter an agent must allow). Planning stops at the first class
/// missing, so it is planned again with each class found allowed; what
/// cannot be planned here (a configuration this machine lacks) ends the
/// search.
pub(crate) fn reach_needed(
    req: &Request,
    topo: &Topology,
    all: impl Fn() -> Vec<Box<dyn Benchmark>>,
) -> Vec<(Reach, String)> {
    let mut probe = req.clone();
    let mut found: Vec<(Reach, String)> = Vec::new();
    while found.len() < Reach::ALL.len() {
        probe.allowed = Some(found.iter().map(|(r, _)| *r).collect());
        let Err(e) = plan(&probe, topo, all()) else { break };
        let Some(b) = e.chain().find_map(|c| c.downcast_ref::<BeyondReach>()) else { break };
        found.push((b.0, b.1.clone()));
    }
    found
}

impl Request {
    /// The root kernel settings are judged and switched below.
    pub(crate) fn root(&self) -> std::path::PathBuf {
        self.sysfs_root.clone().unwrap_or_else(|| "/".into())
    }
}

/// Refuse a point whose buffers need more than [`MemInfo::buffer_limit`]:
/// the worker would abort allocating them, or swap.
fn check_memory(name: &str, p: &Params, need: u64, m: crate::sys::memory::MemInfo) -> Result<()> {
    let limit = m.buffer_limit();
    if need <= limit {
        return Ok(());
    }
    let why = match m.available {
        Some(a) => format!("the smaller of half of MemTotal {} and MemAvailable {}", approx(m.total), approx(a)),
        None => format!("half of MemTotal {}", approx(m.total)),
    };
    let at = p.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ");
    Err(bad_input(format!(
        "{name} at {at} needs {} of buffers: allowed at most {} ({why})",
        approx(need),
        approx(limit)
    )))
}

/// Bytes in MiB, GiB or TiB with one decimal.
fn approx(b: u64) -> String {
    let (unit, div) =
        [("TiB", 1u64 << 40), ("GiB", 1 << 30)].into_iter().find(|&(_, d)| b >= d).unwrap_or(("MiB", 1 << 20));
    format!("{:.1} {unit}", b as f64 / div as f64)
}

/// The parameter name an override key sets on this benchmark: `NAME`, or
/// `SELECTOR:NAME` when the selector (family, name or glob) matches it.
pub(super) fn param_for<'a>(key: &'a str, info: &BenchInfo) -> Option<&'a str> {
    let (sel, name) = match key.split_once(':') {
        Some((sel, name)) => (Some(sel), name),
        None => (None, key),
    };
    if let Some(sel) = sel {
        let hit = info.is_named(sel)
            || sel == info.family
            || glob::Pattern::new(sel).map(|p| p.matches(info.name)).unwrap_or(false);
        if !hit {
            return None;
        }
    }
    (info.open && !name.is_empty() || info.params.iter().any(|p| p.name == name)).then_some(name)
}

/// Samples per result: the fixed count, or the benchmark's own.
pub(super) fn wanted(req: &Request, info: &BenchInfo) -> usize {
    match req.runs {
        Runs::Fixed(n) => n.max(1),
        _ if req.quick => info.quick_samples.max(1),
        _ => info.samples.max(1),
    }
}

/// Samples per result split into rounds of workers: at most 5 rounds, the
/// samples spread as evenly as possible. Returns the samples of each round.
pub(crate) fn split_rounds(total: usize) -> Vec<usize> {
    let total = total.max(1);
    let r = total.min(5);
    (0..r).map(|i| total / r + usize::from(i < total % r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typo_is_answered_with_the_nearest_name_and_nonsense_with_none() {
        let names = ["lat.syscall", "lat.pipe", "bw.mem.rd", "lat", "bw"];
        let near = |s: &str| nearest(s, names.iter().copied());
        assert_eq!(near("lat.sycall"), Some("lat.syscall"));
        assert_eq!(near("lat.pipee"), Some("lat.pipe"));
        assert_eq!(near("bw.mem.red"), Some("bw.mem.rd"));
        assert_eq!((near("nonsense"), near("zzz"), near("")), (None, None, None));
    }

    #[test]
    fn rounds_cover_every_sample() {
        for total in 0..200 {
            let v = split_rounds(total);
            assert_eq!(v.iter().sum::<usize>(), total.max(1), "{total}");
            assert!(v.len() <= 5 && v.iter().all(|&x| x >= 1));
            assert!(v.iter().max().unwrap() - v.iter().min().unwrap() <= 1);
        }
    }

    #[test]
    fn buffers_over_the_limit_are_bad_input() {
        let m = crate::sys::memory::MemInfo { total: 8 << 30, available: Some(3 << 30) };
        let p = Params([("size".to_string(), "999T".to_string())].into_iter().collect());
        assert!(check_memory("bw.mem.rd", &p, 3 << 30, m).is_ok());
        let e = check_memory("bw.mem.rd", &p, 999 << 40, m).unwrap_err();
        assert!(crate::error::is_bad_input(&e));
        assert_eq!(
            e.to_string(),
            "bw.mem.rd at size=999T needs 999.0 TiB of buffers: allowed at most 3.0 GiB (the smaller of half of MemTotal 8.0 GiB and MemAvailable 3.0 GiB)"
        );
    }
}
