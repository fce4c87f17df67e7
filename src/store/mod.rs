//! The results database: SQLite (a file, the default) or PostgreSQL (a
//! `postgresql://` URL, shared by many hosts), behind one [`Store`].
//!
//! Every run and every raw sample is kept. A run is inserted as `running`,
//! each result is written in its own transaction as soon as it is measured,
//! and the run is closed as `complete` or `incomplete` (interrupted or died:
//! a `running` run whose writer is gone reads as incomplete; SQLite tells by
//! the writer's process id and start time, PostgreSQL by the writer's
//! session lock, so across hosts). Queries that pick "the latest run" take
//! complete runs only.
//!
//! `--db` (or `$KDELTA_DB`) is a path or a URL ([`location`]): a URL with a
//! scheme kdelta does not keep results in is refused (exit 2) and never
//! taken as a path. A file that is not a healthy kdelta database is refused
//! with a one-line error before SQLite opens it for writing ([`check`]).

mod check;
#[cfg(test)]
pub(crate) mod history_tests;
pub(crate) mod location;
mod pg;
mod pg_schema;
pub(crate) mod pg_testdb;
mod pgpass;
mod rows;
mod schema;
mod sqlite;

use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use anyhow::Result;
use location::Location;
use std::path::{Path, PathBuf};

pub use check::check_header;
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

/// Whether `--init-schema` was given: a PostgreSQL database that holds
/// another application's tables may get kdelta's own schema beside them.
static INIT_SCHEMA: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--init-schema`: let [`Store::open`] make kdelta's schema in a PostgreSQL
/// database that holds other tables (refused otherwise, untouched).
pub(crate) fn allow_init_schema() {
    INIT_SCHEMA.store(true, std::sync::atomic::Ordering::Relaxed);
}

fn init_schema() -> bool {
    INIT_SCHEMA.load(std::sync::atomic::Ordering::Relaxed)
}

/// The results store, whichever backend holds it.
pub(crate) struct Store {
    backend: Backend,
}

enum Backend {
    Sqlite(sqlite::Sqlite),
    Pg(Box<pg::Pg>),
}

/// `$KDELTA_DB`, else `$XDG_DATA_HOME/kdelta/results.db`, else
/// `~/.local/share/kdelta/results.db`.
pub(crate) fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os("KDELTA_DB") {
        return PathBuf::from(p);
    }
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    base.join("kdelta").join("results.db")
}

macro_rules! each {
    ($self:expr, $s:ident => $e:expr) => {
        match &$self.backend {
            Backend::Sqlite($s) => $e,
            Backend::Pg($s) => $e,
        }
    };
    (mut $self:expr, $s:ident => $e:expr) => {
        match &mut $self.backend {
            Backend::Sqlite($s) => $e,
            Backend::Pg($s) => $e,
        }
    };
}

impl Store {
    /// Open for writing the store `db` names: a path (created if absent or
    /// empty, an older kdelta schema migrated) or a `postgresql://` URL
    /// (the schema created or migrated). Refuses, without changing anything,
    /// a file that is not a healthy kdelta database or cannot be written, and
    /// a URL of another scheme.
    pub(crate) fn open(db: &Path) -> Result<Store> {
        let backend = match location::locate(db)? {
            Location::File(p) => Backend::Sqlite(sqlite::Sqlite::open(&p)?),
            Location::Postgres(url) => Backend::Pg(Box::new(pg::Pg::open(&url)?)),
        };
        Ok(Store { backend })
    }

    /// Open an existing store to read it: a file is never written (it may be
    /// read-only, and an older schema is read as it is); a PostgreSQL store
    /// must already hold kdelta's schema.
    pub(crate) fn open_read_only(db: &Path) -> Result<Store> {
        let backend = match location::locate(db)? {
            Location::File(p) => Backend::Sqlite(sqlite::Sqlite::open_read_only(&p)?),
            Location::Postgres(url) => Backend::Pg(Box::new(pg::Pg::open_existing(&url)?)),
        };
        Ok(Store { backend })
    }

    /// The file's path, or the URL without its password.
    pub(crate) fn path(&self) -> &Path {
        each!(self, s => s.path())
    }

    /// Whether this is a shared (PostgreSQL) store.
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self.backend, Backend::Pg(_))
    }

    /// Insert a run as `running`; returns its id.
    pub(crate) fn begin_run(&mut self, run: &RunRecord) -> Result<i64> {
        each!(mut self, s => s.begin_run(run))
    }

    pub(crate) fn add_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
        each!(mut self, s => s.add_result(run_id, seq, r))
    }

    /// Take over an unfinished run to continue it (`study --resume`): it is
    /// marked `running` by this process, unless its writer is still alive
    /// (SQLite: the stored process id and start time name a live process;
    /// PostgreSQL: another session holds the run's lock), when nothing is
    /// changed and the answer is `false`. Checked and claimed in one step,
    /// so of two processes claiming one run only one gets it.
    pub(crate) fn claim_run(&mut self, run_id: i64) -> Result<bool> {
        each!(mut self, s => s.claim_run(run_id))
    }

    /// Close a run with its final status and environment (load, warnings).
    pub(crate) fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        environment: &crate::model::RunEnvironment,
    ) -> Result<()> {
        each!(mut self, s => s.finish_run(run_id, status, environment))
    }

    /// Runs, newest first, with their result counts.
    pub(crate) fn runs(&self, limit: usize) -> Result<Vec<(RunRecord, usize)>> {
        each!(self, s => s.runs(limit))
    }

    /// The runs `q` selects (every filter given must match; any status),
    /// newest first, without their results.
    pub(crate) fn runs_where(&self, q: &HistoryQuery) -> Result<Vec<RunRecord>> {
        each!(self, s => s.runs_where(q))
    }

    /// How many results each of runs `ids` holds; a run without any is absent.
    pub(crate) fn result_counts(&self, ids: &[i64]) -> Result<std::collections::HashMap<i64, usize>> {
        Ok(each!(self, s => s.result_counts(ids))?.into_iter().collect())
    }

    /// A run by id (`12`) or label (the newest run with that label).
    pub(crate) fn find_run(&self, key: &str) -> Result<RunRecord> {
        each!(self, s => s.find_run(key))
    }

    /// The newest complete run, if any.
    pub(crate) fn latest_complete(&self) -> Result<Option<RunRecord>> {
        each!(self, s => s.latest_complete())
    }

    pub(crate) fn results(&self, run_id: i64) -> Result<Vec<ResultRecord>> {
        each!(self, s => s.results(run_id))
    }

    /// The complete runs `q` selects, oldest first, each with its results:
    /// what `kdelta history` reads. Every filter given must match.
    /// Only the results of the benchmarks `pick` names are read (a store of
    /// many runs holds many others), with the columns a history needs
    /// (their names, samples and which were disturbed; not the summary,
    /// extras or warnings), and of each run only what names it (id, time,
    /// label, metadata, host name; not its host snapshot or environment).
    pub(crate) fn history(&self, q: &HistoryQuery, pick: &Pick) -> Result<HistoryRuns> {
        let runs = each!(self, s => s.history_runs(q))?;
        let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
        // Plain names are looked up as they are; patterns are matched
        // against the names the runs hold (from the index alone).
        let names: Vec<String> = match pick {
            Pick::Names(names) => names.clone(),
            Pick::Matching(wanted) => {
                let stored = each!(self, s => s.result_names(&ids))?;
                stored.into_iter().filter(|(b, f)| wanted(b, f)).map(|(b, _)| b).collect()
            }
        };
        // By run, in the order stored (runs come in time order, which need
        // not be their ids' order).
        let mut by_run: std::collections::HashMap<i64, Vec<ResultRecord>> = std::collections::HashMap::new();
        // A damaged row costs its own point, not the whole history.
        let mut damaged = Vec::new();
        for (id, r) in each!(self, s => s.history_results(&ids, &names))? {
            match r {
                Ok(r) => by_run.entry(id).or_default().push(r),
                Err(e) => damaged.push((id, format!("{e:#}"))),
            }
        }
        let runs = runs
            .into_iter()
            .map(|r| {
                let mine = by_run.remove(&r.id).unwrap_or_default();
                (r, mine)
            })
            .collect();
        Ok(HistoryRuns { runs, ids, damaged })
    }

    /// Every benchmark name stored in runs `ids`, sorted: what an error
    /// about a benchmark none of them holds lists.
    pub(crate) fn names_in(&self, ids: &[i64]) -> Result<Vec<String>> {
        let mut names: Vec<String> = each!(self, s => s.result_names(ids))?.into_iter().map(|(b, _)| b).collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Every (label, host name, kernel release) a stored run has.
    pub(crate) fn run_keys(&self) -> Result<Vec<RunKeys>> {
        each!(self, s => s.run_keys())
    }

    /// Whether a stored run has this label, host name or kernel release: one
    /// row looked up (by index, for labels and hosts), where [`run_keys`]
    /// reads every run.
    ///
    /// [`run_keys`]: Store::run_keys
    pub(crate) fn has_run_key(&self, key: RunKey, value: &str) -> Result<bool> {
        each!(self, s => s.has_run_key(key, value))
    }

    /// Copy a finished run and its results from another store in one
    /// transaction, once: `origin` names the run where it came from, and a
    /// run already copied from there is not copied again. Returns the new
    /// id, or `None` when it was already here. PostgreSQL stores only.
    pub(crate) fn import_run(
        &mut self,
        origin: &str,
        run: &RunRecord,
        results: &[ResultRecord],
    ) -> Result<Option<i64>> {
        match &mut self.backend {
            Backend::Pg(s) => s.import_run(origin, run, results),
            Backend::Sqlite(s) => Err(crate::error::bad_input(format!(
                "{} is an SQLite file: `kdelta push` copies runs to a shared store, give --to postgresql://USER@HOST/DBNAME",
                s.path().display()
            ))),
        }
    }
}

/// A connection of its own to the shared (PostgreSQL) store `db` names, for
/// the fleet's queue (`fleet/queue.rs`), which keeps its own tables beside
/// the runs: the schema made or migrated first. An SQLite file is refused
/// (exit 2): a queue is shared by hosts.
pub(crate) fn queue_client(db: &Path) -> Result<(postgres::Client, PathBuf)> {
    match location::locate(db)? {
        Location::Postgres(url) => pg::queue_client(&url),
        Location::File(p) => Err(crate::error::bad_input(format!(
            "{} is an SQLite file: the fleet's queue lives in a shared store, give --db postgresql://USER@HOST/DBNAME",
            p.display()
        ))),
    }
}

/// [`queue_client`] to read: nothing made or migrated, `None` when the
/// shared store holds no queue yet (an SQLite file is refused as there).
pub(crate) fn queue_client_existing(db: &Path) -> Result<Option<(postgres::Client, PathBuf)>> {
    match location::locate(db)? {
        Location::Postgres(url) => pg::queue_client_existing(&url),
        Location::File(p) => Err(crate::error::bad_input(format!(
            "{} is an SQLite file: the fleet's queue lives in a shared store, give --db postgresql://USER@HOST/DBNAME",
            p.display()
        ))),
    }
}

/// A PostgreSQL error on the queue's connection as every store error reads
/// (missing rights: one line, exit 2).
pub(crate) fn pg_error(shown: &Path, e: postgres::Error) -> anyhow::Error {
    pg::err(shown, e)
}

/// The advisory lock key the writer of run `id` holds while it writes
/// (session-level: freed when its connection ends, however it ends).
pub(crate) fn run_lock_key(id: i64) -> i64 {
    pg::run_lock(id)
}

/// A stored run's label, host name and kernel release.
pub(crate) type RunKeys = (Option<String>, Option<String>, Option<String>);

/// One of a run's keys that `history` filters by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RunKey {
    Label,
    Host,
    Kernel,
}

impl RunKey {
    /// Its column, given how the backend reads a run's host name and kernel.
    pub(super) fn column<'a>(self, host: &'a str, kernel: &'a str) -> &'a str {
        match self {
            RunKey::Label => "label",
            RunKey::Host => host,
            RunKey::Kernel => kernel,
        }
    }
}

/// What [`Store::history`] read: the runs with their wanted results, and
/// every benchmark name those runs hold.
pub(crate) struct HistoryRuns {
    pub(crate) runs: Vec<(RunRecord, Vec<ResultRecord>)>,
    /// The runs' ids, for [`Store::names_in`].
    pub(crate) ids: Vec<i64>,
    /// Result rows that do not parse, left out of `runs`: each run's id and
    /// why (one line naming the result, its run and the column).
    pub(crate) damaged: Vec<(i64, String)>,
}

/// Which results [`Store::history`] reads.
pub(crate) enum Pick<'a> {
    /// Those whose benchmark or family is one of these names.
    Names(Vec<String>),
    /// Those `wanted(benchmark, family)` keeps, of the names the runs hold.
    Matching(&'a dyn Fn(&str, &str) -> bool),
}

/// Which runs [`Store::history`] reads. Each backend turns every field
/// given into one condition of its runs query (`history_runs`).
#[derive(Debug, Clone, Default)]
pub(crate) struct HistoryQuery {
    /// Runs with this label.
    pub(crate) label: Option<String>,
    /// Runs from this host: the `hostname` of the stored host snapshot.
    pub(crate) hostname: Option<String>,
    /// Runs under this kernel release: the snapshot's `kernel_release`.
    pub(crate) kernel: Option<String>,
    /// Runs started at or after this RFC 3339 time or date (`2024-05-01`),
    /// compared as the stored text (UTC, `...Z`) sorts.
    pub(crate) since: Option<String>,
}

/// A `running` run whose process is gone was interrupted without closing.
/// The process is the one with the stored id and start time; without a
/// start time (runs stored before schema 3) any process with the id counts.
fn effective_status(status: RunStatus, pid: Option<u32>, pid_start: Option<u64>) -> RunStatus {
    if status != RunStatus::Running {
        return status;
    }
    let alive = match (pid.map(|p| p as i32), pid_start) {
        (Some(p), Some(start)) => crate::sys::task::start_time(p) == Some(start),
        (Some(p), None) => crate::sys::task::exists(p),
        (None, _) => false,
    };
    if alive {
        RunStatus::Running
    } else {
        RunStatus::Incomplete
    }
}
