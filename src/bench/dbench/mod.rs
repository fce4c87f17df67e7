//! The `dbench` and `tbench` families: a file server's load replayed from a
//! dbench loadfile, on the local filesystem (`dbench.throughput`) or as TCP
//! request/reply exchanges with a server (`tbench.throughput`), in MB/s.
//!
//! Both run N clients (processes like dbench, or threads), each replaying the
//! loadfile again and again for a warm-up and then a timed phase; the figure
//! is the ReadX and WriteX payload bytes of the timed phase's whole seconds
//! before its limit ([`runner::figure_window`]: 9 s of `time=10s`), summed
//! over the clients, over that window, in 10^6 bytes per second, as dbench
//! and tbench compute it. Per-operation counts, mean and maximum latencies and
//! expected-status mismatches are stored with the result.
//!
//! Clients make dbench's per-operation parent check by default
//! ([`runner::Liveness`]), because dbench's figure includes it; how kdelta's
//! figures compare with dbench's, and why runs on a disk vary, is in
//! `docs/fidelity.md`.
//!
//! The default loadfile is kdelta's own ([`generate`]), made at run time;
//! `loadfile=PATH` takes a dbench 3.x/4.x one such as Debian's client.txt.
//!
//! Files: [`loadfile`] (format, validation, path confinement), [`generate`],
//! [`runner`] (clients, phases, statistics), [`backend_fs`] (dbench),
//! [`backend_sock`] and [`server`] (tbench), [`cli`] (`kdelta loadfile
//! generate`), [`fsinfo`] (what the filesystem under `dir` does to the figures).

use super::{bad_param, BenchInfo, Benchmark, Better, ParamKind, ParamSpec, Params, Sampler, Tasks};
use crate::model::params::Choice;
use crate::model::reach::Reach;
use anyhow::{Context, Result};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub(crate) mod backend_fs;
pub(crate) mod backend_sock;
pub(crate) mod cli;
pub(crate) mod fsinfo;
pub(crate) mod generate;
pub(crate) mod loadfile;
pub(crate) mod runner;
pub(crate) mod server;

pub(crate) use server::serve;

/// Size and seed of the default generated loadfile.
pub(crate) const GEN_OPS: usize = 50_000;
pub(crate) const GEN_SEED: u64 = 1;

/// dbench and tbench share the loadfile, its parser and the runner: one
/// directory, two families.
pub(crate) const DBENCH: super::Family = super::Family {
    benchmarks: || vec![Box::new(Dbench)],
    summary: None,
    server: None,
    command: Some(super::FamilyCommand { command: cli::command, run: cli::run }),
    run_flags: &[],
};
pub(crate) const TBENCH: super::Family = super::Family {
    benchmarks: || vec![Box::new(Tbench)],
    summary: None,
    server: Some(super::Server { name: "tbench", params: Vec::new, serve }),
    command: None,
    run_flags: &[],
};

fn common_params(info: BenchInfo) -> BenchInfo {
    info.param(
        ParamSpec::new(
            "clients",
            ParamKind::Int { min: 1, max: 1024 },
            "20,30,60,90,120",
            "clients replaying the loadfile at once (the study: 20, 30, 60, 90, 120)",
        )
        .quick("2"),
    )
    .param(ParamSpec::new(
        "model",
        ParamKind::choice::<Tasks>(),
        "processes",
        "clients as forked processes (as dbench) or as threads of one process",
    ))
    .param(ParamSpec::new(
        "liveness",
        ParamKind::choice::<runner::Liveness>(),
        "per-op",
        "per-op: like dbench and tbench, each client checks with kill(parent, 0) before every operation that its parent is alive, \
         and that system call's cost is in the figure as in theirs; signal: only the kernel's parent-death signal, no cost per operation",
    ))
    .param(ParamSpec::new("warmup", ParamKind::Duration, "2s", "warm-up before the timed phase (not counted)").quick("1s"))
    .param(
        ParamSpec::new(
            "time",
            ParamKind::Duration,
            "10s",
            "length of the timed phase (the MB/s covers its whole seconds before the limit, as dbench's: 9 s of 10s)",
        )
        .quick("3s"),
    )
    .param(ParamSpec::new(
        "loadfile",
        ParamKind::Text,
        "auto",
        "dbench 3.x/4.x loadfile to replay; auto: kdelta's NetBench-like file (50000 operations, seed 1), generated at run time",
    )
    .reaches(Reach::Files, &[]))
    .timeout(Duration::from_secs(3600))
    .samples(5, 1)
}

/// The loadfile at `path`, or kdelta's generated one for `None`.
fn load(path: Option<&Path>) -> Result<loadfile::Loadfile> {
    match path {
        None => {
            let text = generate::generate(GEN_OPS, GEN_SEED);
            loadfile::parse("generated", &text)
                .map_err(|e| anyhow::anyhow!("kdelta's generated loadfile does not parse (a bug): {e}"))
        }
        Some(p) => loadfile::load(p),
    }
}

/// The parameters dbench and tbench share, read once by [`Common::from`].
struct Common {
    spec: runner::Spec,
    /// `None`: kdelta's generated loadfile (`loadfile=auto`).
    loadfile: Option<PathBuf>,
}

impl Common {
    fn from(params: &Params) -> Result<Self> {
        let spec = runner::Spec {
            clients: params.usize("clients")?,
            threads: params.choice::<Tasks>("model").map_err(bad_param)? == Tasks::Threads,
            warmup: params.duration("warmup")?,
            time: params.duration("time")?,
            // tbench has no `strict`: its server, not the client, checks statuses.
            strict: if params.0.contains_key("strict") { params.bool("strict").map_err(bad_param)? } else { false },
            liveness: params.choice("liveness").map_err(bad_param)?,
        };
        Ok(Common { spec, loadfile: params.text_or_auto("loadfile")?.map(PathBuf::from) })
    }
    /// Parse the user's loadfile now, so a bad one is refused before the run.
    fn check(&self) -> Result<()> {
        if self.spec.time.is_zero() {
            return Err(crate::error::bad_input(format!(
                "time={}s is not allowed: the timed phase must be longer than 0 (e.g. time=10s)",
                self.spec.time.as_secs_f64()
            )));
        }
        match &self.loadfile {
            Some(p) => {
                let lf = load(Some(p))?;
                match idle_timed_phase(&lf, self.spec.warmup, self.spec.time) {
                    Some(why) => Err(crate::error::bad_input(format!("loadfile={}: {why}", p.display()))),
                    None => Ok(()),
                }
            }
            None => Ok(()),
        }
    }
    fn load(&self) -> Result<loadfile::Loadfile> {
        load(self.loadfile.as_deref())
    }
}

/// Why a loadfile's timestamps leave the timed phase without payload, or
/// `None`. A client waits for each operation's timestamp (seconds from the
/// start of its pass), so when they run past the end of the run
/// (`warmup + time`) only the first pass is replayed, and the timed phase
/// moves the payload of the ReadX and WriteX operations due in it. dbench
/// reports that, whatever it is; when no such operation is due there at
/// all, its figure would be 0 MB/s by the timestamps alone, never by the
/// machine: refused before the run.
fn idle_timed_phase(lf: &loadfile::Loadfile, warmup: Duration, time: Duration) -> Option<String> {
    let last = lf.ops.iter().filter_map(|o| o.time).fold(None, |m: Option<f64>, t| Some(m.map_or(t, |m| m.max(t))))?;
    let (from, to) = (warmup.as_secs_f64(), (warmup + time).as_secs_f64());
    if last < to {
        return None;
    }
    let payload = |o: &&loadfile::Op| {
        matches!(o.kind, loadfile::OpKind::ReadX { .. } | loadfile::OpKind::WriteX { .. })
            && o.time.is_some_and(|t| t >= from && t < to)
    };
    if lf.ops.iter().any(|o| payload(&o)) {
        return None;
    }
    Some(format!(
        "its timestamps run to {last:.3} s, past the run's end (warmup {from} s + time {} s), and none of its ReadX \
         or WriteX operations is due between {from} s and {to} s: the timed phase would move nothing (0 MB/s); \
         give warmup= and time= that reach its operations, or a loadfile without timestamps",
        time.as_secs_f64()
    ))
}

/// `dbench.throughput`'s parameters.
struct DbenchParams {
    common: Common,
    /// `None`: the run's temporary directory (`dir=auto`).
    dir: Option<PathBuf>,
}

impl DbenchParams {
    fn from(params: &Params) -> Result<Self> {
        Ok(DbenchParams { common: Common::from(params)?, dir: params.text_or_auto("dir")?.map(PathBuf::from) })
    }
}

/// `tbench.throughput`'s parameters.
struct TbenchParams {
    common: Common,
    /// `None`: start a server on loopback for the run (`server=local`).
    server: Option<String>,
}

impl TbenchParams {
    fn from(params: &Params) -> Result<Self> {
        Ok(TbenchParams { common: Common::from(params)?, server: super::remote_server(params)?.map(str::to_string) })
    }
}

/// Sums over the samples of one run, for the extras.
fn add_totals(acc: &mut Option<runner::Totals>, t: runner::Totals) {
    match acc {
        None => *acc = Some(t),
        Some(a) => {
            a.add(&t.ops, [t.bytes, t.tail_bytes, t.passes, t.refused], t.examples);
            a.secs += t.secs;
            a.timed_secs += t.timed_secs;
        }
    }
}

fn record(s: &mut Sampler, lf: &loadfile::Loadfile, sp: &runner::Spec, tot: Option<runner::Totals>) {
    s.extra("clients", sp.clients as u64);
    s.extra("model", if sp.threads { Tasks::Threads } else { Tasks::Processes }.name());
    s.extra("liveness", sp.liveness.name());
    s.extra("loadfile", lf.name.clone());
    s.extra("loadfile_ops", lf.ops.len() as u64);
    if let Some(t) = tot {
        s.extra("ops", t.ops_json());
        s.extra("bytes", t.bytes);
        s.extra("figure_seconds", t.secs);
        s.extra("timed_seconds", t.timed_secs);
        s.extra("tail_bytes", t.tail_bytes);
        s.extra("passes", t.passes);
        s.extra("mismatches", t.mismatches());
        if t.refused > 0 {
            s.extra("refused_links", t.refused);
            s.note(format!(
                "{} operations were refused because a symbolic link was in their path inside the working tree (someone else writes there; kdelta follows no link in it)",
                t.refused
            ));
        }
        if t.mismatches() > 0 {
            s.extra("mismatch_examples", serde_json::json!(t.examples));
            s.note(format!(
                "{} operations did not return the status the loadfile expects (counted per operation in the stored extras; strict=true fails on the first)",
                t.mismatches()
            ));
        }
    }
}

/// `dbench.throughput`: the loadfile on the local filesystem.
pub(crate) struct Dbench;

/// The working tree of one run, removed when dropped: `DIR/kdelta-dbench-XXXXXX`,
/// an unpredictable name made by mkdtemp(3) with mode 0700 (a predictable one
/// let anyone who can write in `dir=` plant a link there first), marked and
/// listed for the harness, which removes it even when the worker is killed
/// ([`Sampler::owned_dir`]).
struct Tree {
    root: PathBuf,
}

impl Tree {
    fn create(s: &Sampler, base: &Path, clients: usize) -> Result<Tree> {
        let t = Tree { root: s.owned_dir(base, "kdelta-dbench-")? };
        // Inside a new 0700 directory of ours: nothing else can be there.
        for n in 1..=clients {
            std::fs::create_dir_all(t.root.join(format!("clients/client{n}")))
                .with_context(|| format!("cannot create {}", t.root.display()))?;
        }
        Ok(t)
    }
    /// Bytes the tree takes on disk now (allocated blocks).
    fn disk_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        fn walk(p: &Path) -> u64 {
            let Ok(m) = std::fs::symlink_metadata(p) else {
                return 0;
            };
            let mut n = m.blocks() * 512;
            if m.is_dir() {
                if let Ok(rd) = std::fs::read_dir(p) {
                    n += rd.flatten().map(|e| walk(&e.path())).sum::<u64>();
                }
            }
            n
        }
        walk(&self.root)
    }
    fn remove(mut self) -> Result<()> {
        let root = std::mem::take(&mut self.root);
        std::fs::remove_dir_all(&root).with_context(|| format!("cannot remove the working tree {}", root.display()))
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        if !self.root.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

impl Benchmark for Dbench {
    fn info(&self) -> BenchInfo {
        common_params(BenchInfo::new(
            "dbench.throughput",
            "dbench: N clients replay a file server's loadfile on the local filesystem; ReadX+WriteX payload MB/s",
            "MB/s",
            Better::Higher,
        ))
        .param(
            ParamSpec::new(
                "dir",
                ParamKind::Text,
                "auto",
                "base directory on the filesystem to measure; auto: the run's temporary directory",
            )
            .reaches(Reach::Files, &[]),
        )
        .param(ParamSpec::new(
            "strict",
            ParamKind::Bool,
            "false",
            "fail the run at the first operation whose outcome differs from the loadfile's expected status",
        ))
    }

    fn check(&self, params: &Params) -> Result<()> {
        let p = DbenchParams::from(params)?;
        p.common.check()?;
        if let Some(d) = &p.dir {
            if !d.is_dir() {
                return Err(crate::error::bad_input(format!(
                    "dir={:?} is not an existing directory",
                    d.display().to_string()
                )));
            }
        }
        Ok(())
    }

    fn run(&self, params: &Params, s: &mut Sampler) -> Result<()> {
        let DbenchParams { common, dir } = DbenchParams::from(params)?;
        let lf = common.load()?;
        let sp = common.spec;
        let base = dir.unwrap_or_else(|| s.tmpdir().to_path_buf());
        // Free space: an upper bound of what the loadfile's writes keep on disk.
        let per_client = loadfile::space_per_client(&lf);
        let need = per_client * sp.clients as u64;
        let vfs = nix::sys::statvfs::statvfs(&base).with_context(|| format!("statvfs {}", base.display()))?;
        let avail = vfs.blocks_available() as u64 * vfs.fragment_size() as u64;
        if need > avail {
            return Err(crate::error::bad_input(format!(
                "dbench with clients={} needs about {} MB free in {} ({} MB per client for {}), only {} MB are available: use fewer clients or another dir=",
                sp.clients,
                need / 1_000_000,
                base.display(),
                per_client / 1_000_000,
                lf.name,
                avail / 1_000_000
            )));
        }
        s.extra("space_needed_mb", need as f64 / 1e6);
        if let Some(n) = fsinfo::history_note(&base) {
            s.note(n);
        }
        let mut acc = None;
        let mut max_disk = 0u64;
        for _ in 0..s.samples_wanted() {
            let tree = Tree::create(s, &base, sp.clients)?;
            let root = tree.root.clone();
            let make =
                |n: usize| -> Result<Box<dyn runner::Backend>> { Ok(Box::new(backend_fs::FsClient::new(n, &root)?)) };
            s.begin_sample();
            let r = runner::run(&lf, &sp, &make);
            max_disk = max_disk.max(tree.disk_bytes());
            tree.remove()?;
            let t = r?;
            s.push(t.mbps(), Duration::from_secs_f64(t.secs));
            add_totals(&mut acc, t);
        }
        s.extra("disk_used_mb", max_disk as f64 / 1e6);
        record(s, &lf, &sp, acc);
        Ok(())
    }
}

/// `tbench.throughput`: the loadfile as TCP exchanges with a tbench server.
pub(crate) struct Tbench;

impl Benchmark for Tbench {
    fn info(&self) -> BenchInfo {
        common_params(BenchInfo::new(
            "tbench.throughput",
            "tbench: N clients replay a file server's loadfile as TCP request/reply exchanges (no disk); ReadX+WriteX payload MB/s",
            "MB/s",
            Better::Higher,
        ))
        .param(super::server_param(
            "local: start a server on loopback for the run (auto, the old spelling, too); or HOST:PORT of a running `kdelta serve tbench` (or dbench's tbench_srv)",
        ))
    }

    fn check(&self, params: &Params) -> Result<()> {
        let p = TbenchParams::from(params)?;
        p.common.check()?;
        if let Some(a) = &p.server {
            backend_sock::resolve(a)?;
        }
        Ok(())
    }

    fn run(&self, params: &Params, s: &mut Sampler) -> Result<()> {
        let TbenchParams { common, server: remote } = TbenchParams::from(params)?;
        let lf = common.load()?;
        let sp = common.spec;
        let mut acc = None;
        if let Some(r) = &remote {
            s.profile_local_only(&format!("the tbench server at {r}"));
        }
        for _ in 0..s.samples_wanted() {
            let local = if remote.is_none() { Some(server::LocalServer::start(sp.threads)?) } else { None };
            if local.as_ref().is_some_and(|l| l.in_process() && !sp.threads) {
                s.note("the tbench server ran in a thread of the client process (the caller already had threads, so no fork)");
            }
            let addr = match (&local, &remote) {
                (Some(l), _) => l.addr().to_string(),
                (None, r) => r.clone().unwrap_or_default(),
            };
            let make = |n: usize| -> Result<Box<dyn runner::Backend>> {
                Ok(Box::new(backend_sock::SockClient::connect(n, &addr)?))
            };
            s.begin_sample();
            let r = runner::run(&lf, &sp, &make);
            drop(local);
            let t = r?;
            s.push(t.mbps(), Duration::from_secs_f64(t.secs));
            add_totals(&mut acc, t);
        }
        s.extra("server", remote.unwrap_or_else(|| "loopback (started by the run)".to_string()));
        record(s, &lf, &sp, acc);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
