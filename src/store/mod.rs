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
//! A file that is not an SQLite database, or is one but not kdelta's, or is
//! damaged, is refused with a clear error before anything is written to it.

mod schema;

use crate::error::bad_input;
use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use anyhow::{Context, Result};
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use schema::{APPLICATION_ID, SCHEMA_VERSION};

pub struct Store {
    conn: Connection,
    path: PathBuf,
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
    /// Open (creating if absent or empty) the database at `path`.
    pub fn open(path: &Path) -> Result<Store> {
        let exists = path.metadata().map(|m| m.len() > 0).unwrap_or(false);
        if exists {
            check_existing(path)?;
        } else if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("creating the directory of database {}", path.display()))?;
        }
        let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .with_context(|| format!("opening database {}", path.display()))?;
        conn.busy_timeout(Duration::from_secs(30))?;
        conn.pragma_update(None, "foreign_keys", true)?;
        // WAL lets readers and one writer work at once; retried because two
        // processes switching a new file to WAL together can briefly collide.
        let mut tries = 0;
        loop {
            match conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0)) {
                Ok(_) => break,
                Err(e) if tries < 50 => {
                    tries += 1;
                    let _ = e;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e).context("setting WAL mode"),
            }
        }
        let mut store = Store { conn, path: path.to_path_buf() };
        store.migrate()?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn migrate(&mut self) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let version: i64 = tx.query_row("PRAGMA user_version", [], |r| r.get(0))?;
        if version == 0 {
            tx.execute_batch(schema::V1)?;
            tx.pragma_update(None, "application_id", APPLICATION_ID)?;
        }
        if version < 2 {
            tx.execute_batch(schema::V2)?;
        }
        if version < SCHEMA_VERSION as i64 {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Insert a run as `running`; returns its id.
    pub fn begin_run(&mut self, run: &RunRecord) -> Result<i64> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (label, started, status, kdelta_version, command, pid, configs, host, environment)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run.label,
                run.started,
                run.kdelta_version,
                run.command,
                std::process::id(),
                serde_json::to_string(&run.configs)?,
                serde_json::to_string(&run.host)?,
                serde_json::to_string(&run.environment)?,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    pub fn add_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
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
            self.conn.prepare(&format!("SELECT {RUN_COLS}, (SELECT COUNT(*) FROM results WHERE run_id = runs.id) FROM runs ORDER BY id DESC LIMIT ?1"))?;
        let rows = st.query_map([limit as i64], |row| Ok((run_from_row(row)?, row.get::<_, i64>(11)? as usize)))?;
        let mut out = Vec::new();
        for r in rows {
            let (mut run, n) = r?;
            run.status = effective_status(&run);
            out.push((run, n));
        }
        Ok(out)
    }

    /// A run by id (`12`) or label (the newest run with that label).
    pub fn find_run(&self, key: &str) -> Result<RunRecord> {
        let row = if let Ok(id) = key.parse::<i64>() {
            self.conn.query_row(&format!("SELECT {RUN_COLS} FROM runs WHERE id = ?1"), [id], run_from_row).optional()?
        } else {
            self.conn.query_row(&format!("SELECT {RUN_COLS} FROM runs WHERE label = ?1 ORDER BY id DESC LIMIT 1"), [key], run_from_row).optional()?
        };
        match row {
            Some(mut r) => {
                r.status = effective_status(&r);
                Ok(r)
            }
            None => {
                let n: i64 = self.conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
                Err(bad_input(format!("no run {key:?} in {}: give a run id or label from `kdelta runs` ({n} runs stored)", self.path.display())))
            }
        }
    }

    /// The newest complete run, if any.
    pub fn latest_complete(&self) -> Result<Option<RunRecord>> {
        let mut st = self.conn.prepare(&format!("SELECT {RUN_COLS} FROM runs WHERE status = 'complete' ORDER BY id DESC LIMIT 1"))?;
        Ok(st.query_row([], run_from_row).optional()?)
    }

    pub fn results(&self, run_id: i64) -> Result<Vec<ResultRecord>> {
        let mut st = self.conn.prepare(
            "SELECT benchmark, family, params, config, cpus, unit, better, status, reason, samples, summary, extras, notes, warnings, iterations, simulated,
                    samples_meta, quality, placement, below_resolution
             FROM results WHERE run_id = ?1 ORDER BY seq, id",
        )?;
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

const RUN_COLS: &str = "id, label, started, finished, status, kdelta_version, command, pid, configs, host, environment";

fn run_from_row(row: &rusqlite::Row) -> rusqlite::Result<RunRecord> {
    let js = |i: usize| -> rusqlite::Result<serde_json::Value> {
        let s: Option<String> = row.get(i)?;
        Ok(s.and_then(|s| serde_json::from_str(&s).ok()).unwrap_or(serde_json::Value::Null))
    };
    let status: String = row.get(4)?;
    Ok(RunRecord {
        id: row.get(0)?,
        label: row.get(1)?,
        started: row.get(2)?,
        finished: row.get(3)?,
        status: RunStatus::parse(&status).unwrap_or(RunStatus::Incomplete),
        kdelta_version: row.get(5)?,
        command: row.get(6)?,
        pid: row.get::<_, Option<i64>>(7)?.map(|p| p as u32),
        configs: serde_json::from_value(js(8)?).unwrap_or_default(),
        host: js(9)?,
        environment: crate::model::RunEnvironment::from_json(js(10)?),
    })
}

/// A `running` run whose process is gone was interrupted without closing.
fn effective_status(r: &RunRecord) -> RunStatus {
    if r.status == RunStatus::Running {
        let alive = r.pid.map(|p| crate::sys::task::exists(p as i32)).unwrap_or(false);
        if !alive {
            return RunStatus::Incomplete;
        }
    }
    r.status
}

/// Refuse a file that is not a healthy kdelta database, without writing to it.
fn check_existing(path: &Path) -> Result<()> {
    let shown = path.display();
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX)
        .map_err(|e| bad_input(format!("cannot open database {shown}: {e}; the file was left untouched")))?;
    let _ = conn.busy_timeout(Duration::from_secs(30));
    let app: i64 = match conn.query_row("PRAGMA application_id", [], |r| r.get(0)) {
        Ok(v) => v,
        Err(e) => {
            return Err(bad_input(format!("{shown} is not a kdelta database ({e}); the file was left untouched: choose another path with --db")));
        }
    };
    let version: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0)).unwrap_or(-1);
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut st| st.query_map([], |r| r.get::<_, String>(0))?.collect())
        .map_err(|e| bad_input(format!("{shown} is damaged or not a database ({e}); the file was left untouched")))?;
    if app != APPLICATION_ID as i64 {
        if app == 0 && tables.is_empty() {
            return Ok(()); // an empty SQLite file: ours to initialise
        }
        return Err(bad_input(format!(
            "{shown} is an SQLite database but not kdelta's (application_id {app:#x}, tables: {}); the file was left untouched: choose another path with --db",
            if tables.is_empty() { "none".to_string() } else { tables.join(", ") }
        )));
    }
    if version > SCHEMA_VERSION as i64 {
        return Err(bad_input(format!(
            "{shown} was written by a newer kdelta (schema {version}, this one reads up to {SCHEMA_VERSION}); the file was left untouched"
        )));
    }
    let check: String =
        conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(|e| bad_input(format!("{shown} is damaged ({e}); the file was left untouched")))?;
    if check != "ok" {
        return Err(bad_input(format!("{shown} is damaged (integrity check: {check}); the file was left untouched")));
    }
    Ok(())
}
