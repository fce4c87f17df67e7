//! The results database (SQLite through rusqlite).
//!
//! Every run and every raw sample is kept. A run is inserted as `running`,
//! each result is written in its own transaction as soon as it is measured,
//! and the run is closed as `complete` or `incomplete` (interrupted or died:
//! a `running` row whose process is gone reads as incomplete). Queries that
//! pick "the latest run" take complete runs only. Writers use WAL and
//! `BEGIN IMMEDIATE` with a busy timeout, so several kdelta processes can
//! write one database at once.
//!
//! A file that is not an SQLite database, or is one but not kdelta's, is
//! damaged or newer, is refused with a one-line error (exit 2) before SQLite
//! opens it for writing: its header is read as plain bytes and its schema
//! through a connection that creates no `-wal`, `-shm` or `-journal`
//! ([`check`]). The reading commands open the store read-only
//! ([`Store::open_read_only`]), so they work on a read-only file or directory.

mod check;
mod schema;
#[cfg(test)]
mod tests;

use crate::error::bad_input;
use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use check::{check_header, Header, Refusal};
pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// The schema version of the file: [`SCHEMA_VERSION`] once opened for
    /// writing (migrated); older when opened read-only.
    version: i64,
}

/// `$KDELTA_DB`, else `$XDG_DATA_HOME/kdelta/results.db`, else
/// `~/.local/share/kdelta/results.db`.
pub fn default_path() -> PathBuf {
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

impl Store {
    /// Open for writing (creating if absent or empty) the database at `path`,
    /// migrating an older kdelta schema. Refuses, without changing anything,
    /// a file that is not a healthy kdelta database or cannot be written.
    pub fn open(path: &Path) -> Result<Store> {
        let refuse = |r: Refusal| r.error(path);
        let existing = match path.metadata() {
            Ok(m) if !m.is_file() => return Err(refuse(Refusal::CannotOpen("not a regular file".into()))),
            Ok(m) => Some(m.len() > 0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(refuse(Refusal::CannotOpen(e.to_string()))),
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        match existing {
            Some(true) => drop(check::existing(path).map_err(refuse)?),
            Some(false) => {}
            None => std::fs::create_dir_all(dir).map_err(|e| refuse(check::io_refusal(&e)))?,
        }
        if existing.is_some() {
            crate::sys::can_write(path).map_err(|e| refuse(Refusal::ReadOnly(format!("the file: {e}"))))?;
        }
        crate::sys::can_write(dir).map_err(|e| refuse(Refusal::ReadOnly(format!("its directory, where SQLite keeps the -wal file: {e}"))))?;
        let sql = |e: rusqlite::Error| match check::write_refusal(&e, path) {
            Some(r) => r.error(path),
            None => anyhow::Error::from(e).context(format!("opening database {}", path.display())),
        };
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(sql)?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // WAL lets readers and one writer work at once; retried because two
        // processes switching a new file to WAL together can briefly collide.
        let mut tries = 0;
        loop {
            match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(e) if tries < 50 && check::write_refusal(&e, path).is_none() => {
                    tries += 1;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(sql(e)),
            }
        }
        let mut store = Store { conn, path: path.to_path_buf(), version: SCHEMA_VERSION as i64 };
        store.migrate().map_err(|e| refused(path, e))?;
        Ok(store)
    }

    /// Open an existing kdelta database to read it, never writing to it or
    /// beside it: works on a read-only file, directory or filesystem, and
    /// reads older schemas as they are.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let refuse = |r: Refusal| r.error(path);
        match path.metadata() {
            Ok(m) if !m.is_file() => return Err(refuse(Refusal::CannotOpen("not a regular file".into()))),
            Ok(m) if m.len() == 0 => return Err(refuse(Refusal::NotKdelta("an empty file".into()))),
            Ok(_) => {}
            Err(e) => return Err(refuse(Refusal::CannotOpen(e.to_string()))),
        }
        let (found, conn) = check::existing(path).map_err(refuse)?;
        match found {
            check::Found::EmptySqlite => Err(refuse(Refusal::NotKdelta("an empty SQLite database: no kdelta tables".into()))),
            check::Found::Kdelta(version) => Ok(Store { conn, path: path.to_path_buf(), version }),
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version > SCHEMA_VERSION as i64 {
            return Err(Refusal::Newer(version).error(&self.path));
        }
        if version == 0 {
            // Checked again under the write lock: only an empty file is ours.
            let objects: i64 = tx.query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))?;
            if objects > 0 {
                return Err(Refusal::NotKdelta("an SQLite database that is not kdelta's".into()).error(&self.path));
            }
            tx.execute_batch(schema::V1)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        if version < 2 {
            tx.execute_batch(schema::V2)?;
        }
        if version < 3 {
            tx.execute_batch(schema::V3)?;
        }
        if version < SCHEMA_VERSION as i64 {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Insert a run as `running`; returns its id.
    pub fn begin_run(&mut self, run: &RunRecord) -> Result<i64> {
        self.insert_run(run).map_err(|e| refused(&self.path, e))
    }

    fn insert_run(&mut self, run: &RunRecord) -> Result<i64> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (label, started, status, kdelta_version, command, pid, pid_start, configs, host, environment)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?9, ?6, ?7, ?8)",
            params![
                run.label,
                run.started,
                run.kdelta_version,
                run.command,
                std::process::id(),
                serde_json::to_string(&run.configs)?,
                serde_json::to_string(&run.host)?,
                serde_json::to_string(&run.environment)?,
                crate::sys::task::start_time(std::process::id() as i32).map(|t| t as i64),
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    pub fn add_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
        self.insert_result(run_id, seq, r).map_err(|e| refused(&self.path, e))
    }

    fn insert_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO results (run_id, seq, benchmark, family, params, config, cpus, unit, better, status, reason,
                                  samples, summary, extras, notes, warnings, iterations, simulated,
                                  samples_meta, quality, placement, below_resolution)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)",
            params![
                run_id,
                seq as i64,
                r.benchmark,
                r.family,
                serde_json::to_string(&r.params)?,
                r.config,
                r.cpus,
                r.unit,
                r.better.as_str(),
                r.status.as_str(),
                r.reason,
                serde_json::to_string(&r.samples)?,
                serde_json::to_string(&r.summary)?,
                serde_json::to_string(&r.extras)?,
                serde_json::to_string(&r.notes)?,
                serde_json::to_string(&r.warnings)?,
                r.iterations.map(|i| i as i64),
                r.simulated,
                serde_json::to_string(&r.samples_meta)?,
                r.quality.as_ref().map(serde_json::to_string).transpose()?,
                serde_json::to_string(&r.placement)?,
                r.below_resolution,
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Close a run with its final status and environment (load, warnings).
    pub fn finish_run(&mut self, run_id: i64, status: RunStatus, environment: &crate::model::RunEnvironment) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE runs SET status = ?2, finished = ?3, environment = ?4 WHERE id = ?1",
            params![run_id, status.as_str(), crate::model::record::now_rfc3339(), serde_json::to_string(environment)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Runs, newest first, with their result counts.
    pub fn runs(&self, limit: usize) -> Result<Vec<(RunRecord, usize)>> {
        let mut st =
            self.conn.prepare(&format!("SELECT {}, (SELECT COUNT(*) FROM results WHERE run_id = runs.id) FROM runs ORDER BY id DESC LIMIT ?1", self.run_cols()))?;
        let rows = st.query_map([limit as i64], |row| Ok((run_from_row(row)?, row.get::<_, i64>(12)? as usize)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A run by id (`12`) or label (the newest run with that label).
    pub fn find_run(&self, key: &str) -> Result<RunRecord> {
        let row = if let Ok(id) = key.parse::<i64>() {
            self.conn.query_row(&format!("SELECT {} FROM runs WHERE id = ?1", self.run_cols()), [id], run_from_row).optional()?
        } else {
            self.conn.query_row(&format!("SELECT {} FROM runs WHERE label = ?1 ORDER BY id DESC LIMIT 1", self.run_cols()), [key], run_from_row).optional()?
        };
        match row {
            Some(r) => Ok(r),
            None => {
                let n: i64 = self.conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
                Err(bad_input(format!("no run {key:?} in {}: give a run id or label from `kdelta runs` ({n} runs stored)", self.path.display())))
            }
        }
    }

    /// The newest complete run, if any.
    pub fn latest_complete(&self) -> Result<Option<RunRecord>> {
        let mut st = self.conn.prepare(&format!("SELECT {} FROM runs WHERE status = 'complete' ORDER BY id DESC LIMIT 1", self.run_cols()))?;
        Ok(st.query_row([], run_from_row).optional()?)
    }

    pub fn results(&self, run_id: i64) -> Result<Vec<ResultRecord>> {
        // A version-1 file read as it is has no per-sample columns.
        let v2 = if self.version >= 2 { "samples_meta, quality, placement, below_resolution" } else { "NULL, NULL, NULL, NULL" };
        let mut st = self.conn.prepare(&format!(
            "SELECT benchmark, family, params, config, cpus, unit, better, status, reason, samples, summary, extras, notes, warnings, iterations, simulated,
                    {v2}
             FROM results WHERE run_id = ?1 ORDER BY seq, id"
        ))?;
        let rows = st.query_map([run_id], |row| {
            let json = |i: usize| -> rusqlite::Result<String> { row.get::<_, Option<String>>(i).map(|s| s.unwrap_or_else(|| "null".into())) };
            Ok((
                row.get::<_, String>(0)?,
                row.get::<_, String>(1)?,
                json(2)?,
                row.get::<_, String>(3)?,
                row.get::<_, String>(4)?,
                row.get::<_, String>(5)?,
                row.get::<_, String>(6)?,
                row.get::<_, String>(7)?,
                row.get::<_, Option<String>>(8)?,
                json(9)?,
                json(10)?,
                json(11)?,
                json(12)?,
                json(13)?,
                row.get::<_, Option<i64>>(14)?,
                row.get::<_, bool>(15)?,
                json(16)?,
                json(17)?,
                json(18)?,
                row.get::<_, Option<f64>>(19)?,
            ))
        })?;
        let mut out = Vec::new();
        for r in rows {
            let (
                benchmark,
                family,
                params,
                config,
                cpus,
                unit,
                better,
                status,
                reason,
                samples,
                summary,
                extras,
                notes,
                warnings,
                iterations,
                simulated,
                samples_meta,
                quality,
                placement,
                below_resolution,
            ) = r?;
            let ctx = || format!("reading result {benchmark} of run {run_id}");
            out.push(ResultRecord {
                params: serde_json::from_str(&params).with_context(ctx)?,
                better: crate::model::Better::parse(&better).with_context(ctx)?,
                status: crate::model::record::Status::parse(&status).with_context(ctx)?,
                samples: serde_json::from_str(&samples).with_context(ctx)?,
                summary: serde_json::from_str(&summary).with_context(ctx)?,
                extras: serde_json::from_str::<Option<_>>(&extras).with_context(ctx)?.unwrap_or_default(),
                notes: serde_json::from_str::<Option<_>>(&notes).with_context(ctx)?.unwrap_or_default(),
                warnings: serde_json::from_str::<Option<_>>(&warnings).with_context(ctx)?.unwrap_or_default(),
                iterations: iterations.map(|i| i as u64),
                samples_meta: serde_json::from_str::<Option<_>>(&samples_meta).with_context(ctx)?.unwrap_or_default(),
                quality: serde_json::from_str(&quality).with_context(ctx)?,
                placement: serde_json::from_str::<Option<_>>(&placement).with_context(ctx)?.unwrap_or_default(),
                below_resolution,
                benchmark,
                family,
                config,
                cpus,
                unit,
                reason,
                simulated,
            });
        }
        Ok(out)
    }
}

impl Store {
    /// The columns [`run_from_row`] reads (a file before version 3 has no `pid_start`).
    fn run_cols(&self) -> String {
        let start = if self.version >= 3 { "pid_start" } else { "NULL" };
        format!("id, label, started, finished, status, kdelta_version, command, pid, configs, host, environment, {start}")
    }
}

fn run_from_row(row: &rusqlite::Row) -> rusqlite::Result<RunRecord> {
    let js = |i: usize| -> rusqlite::Result<serde_json::Value> {
        let s: Option<String> = row.get(i)?;
        Ok(s.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or(serde_json::Value::Null))
    };
    let status = RunStatus::parse(&row.get::<_, String>(4)?).unwrap_or(RunStatus::Incomplete);
    let pid = row.get::<_, Option<i64>>(7)?.map(|p| p as u32);
    let pid_start = row.get::<_, Option<i64>>(11)?.map(|t| t as u64);
    Ok(RunRecord {
        id: row.get(0)?,
        label: row.get(1)?,
        started: row.get(2)?,
        finished: row.get(3)?,
        status: effective_status(status, pid, pid_start),
        kdelta_version: row.get(5)?,
        command: row.get(6)?,
        pid,
        configs: serde_json::from_value(js(8)?).unwrap_or_default(),
        host: js(9)?,
        environment: crate::model::RunEnvironment::from_json(js(10)?),
    })
}

/// A failed write as the refusal it is (full disk, read-only), else as it was.
fn refused(path: &Path, e: anyhow::Error) -> anyhow::Error {
    match e.downcast_ref::<rusqlite::Error>().and_then(|s| check::write_refusal(s, path)) {
        Some(r) => r.error(path),
        None => e,
    }
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
