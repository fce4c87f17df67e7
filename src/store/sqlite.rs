//! The SQLite backend: one file, embedded, the default.
//!
//! Writers use WAL and `BEGIN IMMEDIATE` with a busy timeout, so several
//! kdelta processes can write one file at once. A file that is not a healthy
//! kdelta database is refused before SQLite opens it for writing
//! ([`super::check`]); the reading commands open it read-only.

use crate::error::bad_input;
use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use anyhow::Result;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::check::{self, Refusal};
#[cfg(test)]
use super::check_header;
use super::rows::{
    host_keys, host_keys_of_text, result_cols_read, ResultCols, RunCols, HISTORY_RESULT_COLS, RESULT_COLS, RUN_COLS,
};
use super::schema::{self, APPLICATION_ID, SCHEMA_VERSION};

mod files;
use files::*;

mod columns;
use columns::*;

#[cfg(test)]
#[path = "tests.rs"]
mod tests;

pub(super) struct Sqlite {
    conn: Connection,
    path: PathBuf,
    /// The schema version of the file: [`SCHEMA_VERSION`] once opened for
    /// writing (migrated); older when opened read-only.
    version: i64,
}

impl Sqlite {
    /// Open for writing (creating if absent or empty) the database at `path`,
    /// migrating an older kdelta schema. Refuses, without changing anything,
    /// a file that is not a healthy kdelta database or cannot be written.
    pub(super) fn open(path: &Path) -> Result<Sqlite> {
        let refuse = |r: Refusal| r.error(path);
        let existing = match path.metadata() {
            Ok(m) if !m.is_file() => return Err(refuse(Refusal::CannotOpen("not a regular file".into()))),
            Ok(m) => Some(m.len() > 0),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(refuse(Refusal::CannotOpen(e.to_string()))),
        };
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        match existing {
            Some(true) => drop(check::existing(path, u64::MAX).map_err(refuse)?),
            Some(false) => {}
            None => std::fs::create_dir_all(dir).map_err(|e| refuse(check::io_refusal(&e)))?,
        }
        if existing.is_some() {
            crate::sys::can_write(path).map_err(|e| refuse(Refusal::ReadOnly(format!("the file: {e}"))))?;
        }
        crate::sys::can_write(dir)
            .map_err(|e| refuse(Refusal::ReadOnly(format!("its directory, where SQLite keeps the -wal file: {e}"))))?;
        // An existing database on a full disk: refused before SQLite makes
        // a -wal and -shm beside it that it could not fill.
        let had = ["-wal", "-shm"].map(|ext| check::sibling(path, ext).exists());
        if existing == Some(true) && !had[0] {
            if let Some(free) = crate::sys::free_bytes(dir).filter(|&b| b < MIN_FREE) {
                return Err(refuse(Refusal::NoSpace(format!(
                    "{free} bytes free, less than the {MIN_FREE} its -wal and -shm need"
                ))));
            }
        }
        let pending = existing == Some(true) && check::wal_pending(path);
        let opened = Self::open_writer(path).and_then(|s| if pending { s.finish_checkpoint() } else { Ok(s) });
        if opened.is_err() {
            if existing == Some(true) {
                remove_unused_siblings(path, had);
            } else {
                remove_unmade(path, existing.is_none());
            }
        }
        opened
    }

    /// Copy every page of the `-wal` into the file and empty the `-wal`
    /// (`wal_checkpoint(TRUNCATE)`): the repair of a database whose last
    /// checkpoint ran out of space, its first page newer than the rest of the
    /// file. Refused as a full disk, nothing lost, while there is no room.
    fn finish_checkpoint(self) -> Result<Sqlite> {
        // Busy (its first column 1): a reader holds an older snapshot; the
        // pages stay in the -wal, read through it, and a later checkpoint
        // copies them.
        self.conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get::<_, i64>(0))
            .map_err(|e| refused(&self.path, e.into()))?;
        Ok(self)
    }

    /// [`Sqlite::open`] once the file is judged: connect, WAL, migrate.
    fn open_writer(path: &Path) -> Result<Sqlite> {
        let sql = |e: rusqlite::Error| match check::write_refusal(&e, path) {
            Some(r) => r.error(path),
            None => anyhow::Error::from(e).context(format!("opening database {}", path.display())),
        };
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
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
        let mut store = Sqlite { conn, path: path.to_path_buf(), version: SCHEMA_VERSION as i64 };
        store.migrate().map_err(|e| refused(path, e))?;
        Ok(store)
    }

    /// Open an existing kdelta database to read it, never changing what it
    /// holds: works on a read-only file, directory or filesystem, and reads
    /// older schemas as they are; a `-wal` a full disk left is folded in
    /// once there is room ([`fold_left_wal`]). Every page of a file up to
    /// [`check::READ_CHECK_MAX`] bytes is checked.
    pub(super) fn open_read_only(path: &Path) -> Result<Sqlite> {
        Self::open_read_only_checking(path, check::READ_CHECK_MAX)
    }

    /// [`Sqlite::open_read_only`], checking every page of a file up to
    /// `pages_up_to` bytes long.
    fn open_read_only_checking(path: &Path, pages_up_to: u64) -> Result<Sqlite> {
        let refuse = |r: Refusal| r.error(path);
        match path.metadata() {
            Ok(m) if !m.is_file() => return Err(refuse(Refusal::CannotOpen("not a regular file".into()))),
            Ok(m) if m.len() == 0 => return Err(refuse(Refusal::NotKdelta("an empty file".into()))),
            Ok(_) => {}
            Err(e) => return Err(refuse(Refusal::CannotOpen(e.to_string()))),
        }
        let (found, conn) = check::existing(path, pages_up_to).map_err(refuse)?;
        match found {
            check::Found::EmptySqlite => {
                Err(refuse(Refusal::NotKdelta("an empty SQLite database: no kdelta tables".into())))
            }
            check::Found::Kdelta(version) => {
                Ok(Sqlite { conn: fold_left_wal(path, conn).map_err(refuse)?, path: path.to_path_buf(), version })
            }
        }
    }

    pub(super) fn path(&self) -> &Path {
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
        if version < 4 {
            tx.execute_batch(schema::V4)?;
            fill_host_keys(&tx)?;
        }
        if version < 5 {
            tx.execute_batch(schema::V5)?;
        }
        if version < 6 {
            tx.execute_batch(schema::V6)?;
        }
        if version < SCHEMA_VERSION as i64 {
            tx.pragma_update(None, "user_version", SCHEMA_VERSION)?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Insert a run as `running`; returns its id.
    pub(super) fn begin_run(&mut self, run: &RunRecord) -> Result<i64> {
        self.insert_run(run).map_err(|e| refused(&self.path, e))
    }

    fn insert_run(&mut self, run: &RunRecord) -> Result<i64> {
        let (hostname, kernel) = host_keys(&run.host);
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO runs (label, started, status, kdelta_version, command, pid, pid_start, configs, host, environment,
                               meta, hostname, kernel)
             VALUES (?1, ?2, 'running', ?3, ?4, ?5, ?9, ?6, ?7, ?8, ?10, ?11, ?12)",
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
                run.meta.to_json(),
                hostname,
                kernel,
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.commit()?;
        Ok(id)
    }

    pub(super) fn add_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
        self.insert_result(run_id, seq, r).map_err(|e| refused(&self.path, e))
    }

    fn insert_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "INSERT INTO results (run_id, seq, benchmark, family, params, config, cpus, unit, better, status, reason,
                                  samples, summary, extras, notes, warnings, iterations, simulated,
                                  samples_meta, quality, placement, below_resolution, profile)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23)",
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
                r.profile.as_ref().map(serde_json::to_string).transpose()?,
            ],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Take over an unfinished run unless its writer is alive (see [`super::Store::claim_run`]).
    pub(super) fn claim_run(&mut self, run_id: i64) -> Result<bool> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(|e| refused(&self.path, e.into()))?;
        let row: Option<(String, Option<i64>, Option<i64>)> = tx
            .query_row("SELECT status, pid, pid_start FROM runs WHERE id = ?1", [run_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?))
            })
            .optional()?;
        let Some((status, pid, pid_start)) = row else {
            return Err(bad_input(format!("no run {run_id} in {}", self.path.display())));
        };
        let status = super::effective_status(
            RunStatus::parse(&status).unwrap_or(RunStatus::Incomplete),
            pid.map(|p| p as u32),
            pid_start.map(|t| t as u64),
        );
        if status == RunStatus::Running {
            return Ok(false);
        }
        let me = std::process::id();
        tx.execute(
            "UPDATE runs SET status = 'running', finished = NULL, pid = ?2, pid_start = ?3 WHERE id = ?1",
            params![run_id, me, crate::sys::task::start_time(me as i32).map(|t| t as i64)],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Close a run with its final status and environment (load, warnings).
    pub(super) fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        environment: &crate::model::RunEnvironment,
    ) -> Result<()> {
        let tx = self.conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "UPDATE runs SET status = ?2, finished = ?3, environment = ?4 WHERE id = ?1",
            params![run_id, status.as_str(), crate::model::record::now_rfc3339(), serde_json::to_string(environment)?],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Runs, newest first, with their result counts.
    pub(super) fn runs(&self, limit: usize) -> Result<Vec<(RunRecord, usize)>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT {}, (SELECT COUNT(*) FROM results WHERE run_id = runs.id) FROM runs ORDER BY id DESC LIMIT ?1",
            self.run_cols()
        ))?;
        let rows = st.query_map([limit as i64], |row| Ok((run_from_row(row)?, row.get::<_, i64>(13)? as usize)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// A run by id (`12`) or label (the newest run with that label).
    pub(super) fn find_run(&self, key: &str) -> Result<RunRecord> {
        let row = if let Ok(id) = key.parse::<i64>() {
            self.conn
                .query_row(&format!("SELECT {} FROM runs WHERE id = ?1", self.run_cols()), [id], run_from_row)
                .optional()?
        } else {
            self.conn
                .query_row(
                    &format!("SELECT {} FROM runs WHERE label = ?1 ORDER BY id DESC LIMIT 1", self.run_cols()),
                    [key],
                    run_from_row,
                )
                .optional()?
        };
        match row {
            Some(r) => Ok(r),
            None => {
                let n: i64 = self.conn.query_row("SELECT COUNT(*) FROM runs", [], |r| r.get(0))?;
                Err(bad_input(format!(
                    "no run {key:?} in {}: give a run id or label from `kdelta runs` ({n} runs stored)",
                    self.path.display()
                )))
            }
        }
    }

    /// The newest complete run, if any.
    pub(super) fn latest_complete(&self) -> Result<Option<RunRecord>> {
        let mut st = self.conn.prepare(&format!(
            "SELECT {} FROM runs WHERE status = 'complete' ORDER BY id DESC LIMIT 1",
            self.run_cols()
        ))?;
        Ok(st.query_row([], run_from_row).optional()?)
    }

    /// The complete runs `q` selects, oldest first. Only the filters given
    /// are in the SQL: a `?1 IS NULL OR` term would keep SQLite's planner
    /// from the index on host name and start time.
    pub(super) fn history_runs(&self, q: &super::HistoryQuery) -> Result<Vec<RunRecord>> {
        let (sql, values) = self.history_runs_sql(q);
        self.reading(|| {
            let mut st = self.conn.prepare(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(values), run_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// [`Sqlite::history_runs`]'s statement and the values it binds.
    fn history_runs_sql<'q>(&self, q: &'q super::HistoryQuery) -> (String, Vec<&'q str>) {
        // The host snapshot and environment stay on disk: history names a
        // run's host by its indexed name.
        let cols = if self.version >= 4 {
            self.run_cols().replace(", host, environment,", ", json_object('hostname', hostname), NULL,")
        } else {
            self.run_cols()
        };
        self.runs_sql(&cols, "status = 'complete'", q, "started, id")
    }

    /// Every run `q` selects, whatever its status, newest first.
    pub(super) fn runs_where(&self, q: &super::HistoryQuery) -> Result<Vec<RunRecord>> {
        let (sql, values) = self.runs_sql(&self.run_cols(), "1", q, "id DESC");
        self.reading(|| {
            let mut st = self.conn.prepare(&sql)?;
            let rows = st.query_map(rusqlite::params_from_iter(values), run_from_row)?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// How many results each of runs `ids` holds (from the index on run).
    pub(super) fn result_counts(&self, ids: &[i64]) -> Result<Vec<(i64, usize)>> {
        self.reading(|| {
            let mut st = self.conn.prepare(
                "SELECT run_id, COUNT(*) FROM results WHERE run_id IN (SELECT value FROM json_each(?1)) GROUP BY run_id",
            )?;
            let rows =
                st.query_map([serde_json::to_string(ids)?], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)? as usize)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// `SELECT cols FROM runs WHERE base` and each filter of `q` given,
    /// ordered by `order`, and the values it binds.
    fn runs_sql<'q>(&self, cols: &str, base: &str, q: &'q super::HistoryQuery, order: &str) -> (String, Vec<&'q str>) {
        let (host, kernel) = self.host_keys();
        let mut sql = format!("SELECT {cols} FROM runs WHERE {base}");
        let mut values: Vec<&str> = Vec::new();
        for (col, op, v) in
            [("label", "=", &q.label), (host, "=", &q.hostname), (kernel, "=", &q.kernel), ("started", ">=", &q.since)]
        {
            if let Some(v) = v {
                values.push(v);
                sql.push_str(&format!(" AND {col} {op} ?{}", values.len()));
            }
        }
        sql.push_str(&format!(" ORDER BY {order}"));
        (sql, values)
    }

    /// Every label, host name and kernel release of a stored run (what
    /// `history` checks its filters against), from the small columns.
    pub(super) fn run_keys(&self) -> Result<Vec<super::RunKeys>> {
        let (host, kernel) = self.host_keys();
        self.reading(|| {
            let mut st = self.conn.prepare(&format!("SELECT DISTINCT label, {host}, {kernel} FROM runs"))?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    pub(super) fn has_run_key(&self, key: super::RunKey, value: &str) -> Result<bool> {
        let (host, kernel) = self.host_keys();
        let col = key.column(host, kernel);
        self.reading(|| {
            let sql = format!("SELECT EXISTS (SELECT 1 FROM runs WHERE {col} = ?1)");
            Ok(self.conn.query_row(&sql, [value], |r| r.get::<_, bool>(0))?)
        })
    }

    /// The benchmark and family names stored in runs `ids` (from the index
    /// `results_run_benchmark` alone, from schema 5).
    pub(super) fn result_names(&self, ids: &[i64]) -> Result<Vec<(String, String)>> {
        self.reading(|| {
            let mut st = self.conn.prepare(RESULT_NAMES_SQL)?;
            let rows = st.query_map([serde_json::to_string(ids)?], |r| Ok((r.get(0)?, r.get(1)?)))?;
            Ok(rows.collect::<rusqlite::Result<_>>()?)
        })
    }

    /// `read`, with a damaged page it reached (a file too large to be
    /// checked whole when opened for reading) refused as such: one line,
    /// exit 2.
    fn reading<T>(&self, read: impl FnOnce() -> Result<T>) -> Result<T> {
        read().map_err(|e| refused(&self.path, e))
    }

    pub(super) fn results(&self, run_id: i64) -> Result<Vec<ResultRecord>> {
        self.reading(|| self.query_results(&self.results_sql(), run_id, None))
    }

    /// The statement of [`Sqlite::results`].
    fn results_sql(&self) -> String {
        // A version-1 file read as it is has no per-sample columns.
        // A version-5 file read as it is has no profiles.
        // An oversized profile is never fetched (`result_cols_read`):
        // octet_length reads a column's length from the row's header, where
        // length(CAST(.. AS BLOB)) loads the whole text first.
        let cols = if self.version >= 6 {
            result_cols_read(&|c| format!("octet_length({c})"))
        } else {
            RESULT_COLS.replace(", profile", ", NULL")
        };
        let cols = if self.version >= 2 {
            cols
        } else {
            cols.replace("samples_meta, quality, placement, below_resolution", "NULL, NULL, NULL, NULL")
        };
        format!("SELECT {cols} FROM results WHERE run_id = ?1 ORDER BY seq, id")
    }

    /// The results of runs `ids` whose benchmark or family is one of
    /// `names`, with the columns history reads ([`HISTORY_RESULT_COLS`]),
    /// each with its run's id: run by run through one cached statement.
    /// A row that does not parse comes as its error, for history to leave
    /// out with a warning.
    pub(super) fn history_results(&self, ids: &[i64], names: &[String]) -> Result<Vec<(i64, Result<ResultRecord>)>> {
        let sql = self.history_results_sql();
        let names = serde_json::to_string(names)?;
        self.reading(|| {
            let mut out = Vec::new();
            for &id in ids {
                out.extend(self.query_rows(&sql, id, Some(names.clone()))?.into_iter().map(|r| (id, r)));
            }
            Ok(out)
        })
    }

    /// The statement of [`Sqlite::history_results`], for one run.
    fn history_results_sql(&self) -> String {
        let cols = if self.version >= 2 {
            HISTORY_RESULT_COLS.to_string()
        } else {
            HISTORY_RESULT_COLS.replace("samples_meta", "NULL")
        };
        // Two halves: a benchmark named, then a family named (its benchmarks
        // not named), each through the index on (run, benchmark, family) from
        // schema 5, whose entries say the family before a row is read. The
        // rows' order (seq, id) follows the 21 columns.
        let names = "(SELECT value FROM json_each(?2))";
        let index = if self.version >= 5 { "INDEXED BY results_run_benchmark" } else { "" };
        format!(
            "SELECT {cols}, seq, id FROM results WHERE run_id = ?1 AND benchmark IN {names} \
             UNION ALL SELECT {cols}, seq, id FROM results {index} WHERE run_id = ?1 AND family IN {names} \
             AND benchmark NOT IN {names} ORDER BY 22, 23"
        )
    }

    /// Results by `sql`, whose `?1` is the run's id and `?2`, when given,
    /// a JSON array of names.
    fn query_results(&self, sql: &str, run_id: i64, names: Option<String>) -> Result<Vec<ResultRecord>> {
        self.query_rows(sql, run_id, names)?.into_iter().collect()
    }

    /// [`Sqlite::query_results`], each row's record or why it does not parse.
    fn query_rows(&self, sql: &str, run_id: i64, names: Option<String>) -> Result<Vec<Result<ResultRecord>>> {
        let mut st = self.conn.prepare_cached(sql)?;
        let values: Vec<rusqlite::types::Value> = std::iter::once(run_id.into()).chain(names.map(Into::into)).collect();
        let rows = st.query_map(rusqlite::params_from_iter(values), |row| {
            let json = |i: usize| -> rusqlite::Result<String> {
                row.get::<_, Option<String>>(i).map(|s| s.unwrap_or_else(|| "null".into()))
            };
            Ok(ResultCols {
                benchmark: row.get(0)?,
                family: row.get(1)?,
                params: json(2)?,
                config: row.get(3)?,
                cpus: row.get(4)?,
                unit: row.get(5)?,
                better: row.get(6)?,
                status: row.get(7)?,
                reason: row.get(8)?,
                samples: json(9)?,
                summary: json(10)?,
                extras: json(11)?,
                notes: json(12)?,
                warnings: json(13)?,
                iterations: row.get(14)?,
                simulated: row.get(15)?,
                samples_meta: json(16)?,
                quality: row.get(17)?,
                placement: json(18)?,
                below_resolution: row.get(19)?,
                profile: row.get(20)?,
            })
        })?;
        let mut out = Vec::new();
        for r in rows {
            out.push(r?.record(run_id));
        }
        Ok(out)
    }
}

impl Sqlite {
    /// The run's host name and kernel release as SQL: the indexed columns
    /// of version 4, else read from the host snapshot.
    fn host_keys(&self) -> (&'static str, &'static str) {
        if self.version >= 4 {
            ("hostname", "kernel")
        } else {
            ("json_extract(host, '$.hostname')", "json_extract(host, '$.kernel_release')")
        }
    }

    /// The columns [`run_from_row`] reads (a file before version 3 has no
    /// `pid_start`, one before version 4 no `meta`).
    fn run_cols(&self) -> String {
        let mut cols = RUN_COLS.to_string();
        if self.version < 3 {
            cols = cols.replace("pid_start", "NULL");
        }
        if self.version < 4 {
            cols = cols.replace(", meta", ", NULL");
        }
        cols
    }
}
