//! The PostgreSQL backend: one database shared by many hosts.
//!
//! Every write is one transaction; ids come from the server's sequences, so
//! writers on any number of hosts never collide. A writer holds a session
//! advisory lock on each run it has open ([`run_lock`]): the server drops it
//! when the writer's connection ends, however it ends, so the next kdelta
//! that reads a `running` run whose lock it can take knows its writer is
//! gone and marks it `incomplete` (the process id means nothing on another
//! host). A lost connection fails the writer's next write with an error and
//! leaves every committed row as it was.

use super::location::{redact, scrub, secrets};
use super::pg_schema::{HOST_KEYS, MIGRATION_LOCK, PG_VERSION, PROFILES, STEPS};
use super::rows::{
    host_keys, host_keys_of_text, result_cols_read, ResultCols, RunCols, HISTORY_RESULT_COLS, RESULT_COLS, RUN_COLS,
};
use crate::error::bad_input;
use crate::model::record::{ResultRecord, RunRecord, RunStatus};
use anyhow::{Context, Result};
use postgres::{Client, GenericClient, NoTls, Row};
use std::cell::RefCell;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

mod rows;
use rows::*;

mod migrate;
use migrate::*;

pub(super) struct Pg {
    client: RefCell<Client>,
    /// The URL without its password, for messages.
    shown: PathBuf,
    /// Runs this connection holds open (and their locks).
    held: HashSet<i64>,
    /// The schema version: [`PG_VERSION`] once opened for writing
    /// (migrated); possibly older when opened to read.
    version: i32,
}

/// The advisory lock key of a run: "kdlt" in the high half, so it cannot
/// meet [`MIGRATION_LOCK`] or another program's small keys.
pub(super) fn run_lock(id: i64) -> i64 {
    (0x6b64_6c74_i64 << 32) | (id & 0xffff_ffff)
}

/// The time a connection may take, TCP, TLS and login together, unless the
/// URL says `connect_timeout=N`.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest a statement may run on the server, unless the URL's
/// `options` set `statement_timeout` (a lock another kdelta holds included).
pub(super) const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);
/// TCP keep-alives: the first after this long idle, then every
/// [`KEEPALIVE_INTERVAL`], the connection dropped after
/// [`KEEPALIVE_RETRIES`] unanswered; data unacknowledged for
/// [`TCP_USER_TIMEOUT`] drops it too. A host that died or a network that
/// broke fails the next statement within about a minute.
pub(super) const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);
pub(super) const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
pub(super) const KEEPALIVE_RETRIES: u32 = 3;
pub(super) const TCP_USER_TIMEOUT: Duration = Duration::from_secs(60);

/// Every time limit kdelta sets, where the URL has not set it.
fn limit_time(cfg: &mut postgres::Config) {
    if cfg.get_connect_timeout().is_none() {
        cfg.connect_timeout(CONNECT_TIMEOUT);
    }
    // Keep-alives are on unless the URL says `keepalives=0`; the client's
    // default idle time is two hours.
    if cfg.get_keepalives_idle() == Duration::from_secs(2 * 60 * 60) {
        cfg.keepalives_idle(KEEPALIVE_IDLE);
    }
    if cfg.get_keepalives_interval().is_none() {
        cfg.keepalives_interval(KEEPALIVE_INTERVAL);
    }
    if cfg.get_keepalives_retries().is_none() {
        cfg.keepalives_retries(KEEPALIVE_RETRIES);
    }
    if cfg.get_tcp_user_timeout().is_none() {
        cfg.tcp_user_timeout(TCP_USER_TIMEOUT);
    }
    let options = cfg.get_options().unwrap_or("").to_string();
    if !options.contains("statement_timeout") {
        cfg.options(format!("{options} -c statement_timeout={}s", STATEMENT_TIMEOUT.as_secs()).trim_start());
    }
}

/// A client error on one line (the server's message and detail).
fn one_line(e: &postgres::Error) -> String {
    let s = match e.as_db_error() {
        Some(db) => format!("{}: {}", db.severity(), db.message()),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(c) = src {
                let t = c.to_string();
                if !s.contains(&t) {
                    s = format!("{s}: {t}");
                }
                src = c.source();
            }
            s
        }
    };
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

impl Pg {
    fn connect(url: &str) -> Result<(Client, PathBuf)> {
        let shown = redact(url);
        let mut secrets = secrets(url);
        let mut cfg: postgres::Config = url.parse().map_err(|e: postgres::Error| {
            // The client's words may quote any piece of the URL: with a
            // password in it, they are left out.
            let why = if secrets.is_empty() {
                one_line(&e)
            } else {
                "a password holding `@`, `/`, `?`, `:` or `&` must be %-escaped".to_string()
            };
            bad_input(format!(
                "--db {shown:?} is not a PostgreSQL URL ({why}): expected postgresql://USER@HOST[:PORT]/DBNAME"
            ))
        })?;
        // The password: the URL's, else `$PGPASSWORD` or `~/.pgpass` (the
        // client reads neither). Kept out of every message.
        if cfg.get_password().is_none() {
            let host = cfg.get_hosts().first();
            let (host, unix) = match host {
                Some(postgres::config::Host::Tcp(h)) => (h.clone(), false),
                Some(postgres::config::Host::Unix(p)) => (p.to_string_lossy().into_owned(), true),
                None => ("localhost".to_string(), false),
            };
            let user = cfg.get_user().unwrap_or("").to_string();
            let target = super::pgpass::Target {
                host: &host,
                unix,
                port: cfg.get_ports().first().copied().unwrap_or(5432),
                dbname: cfg.get_dbname().unwrap_or(&user),
                user: &user,
            };
            if let Some(pw) = super::pgpass::password(&target) {
                cfg.password(pw);
            }
        }
        secrets.extend(cfg.get_password().map(|p| String::from_utf8_lossy(p).into_owned()).filter(|p| !p.is_empty()));
        let scrub = |m: String| scrub(&m, &secrets);
        limit_time(&mut cfg);
        if cfg.get_application_name().is_none() {
            cfg.application_name("kdelta");
        }
        let limit = *cfg.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
        // The client bounds only the TCP connect: a server that accepts and
        // never answers would hold its login forever. So the whole
        // connection (TCP, TLS, login) is made on a thread of its own and
        // given up after `limit` (the thread is left to the process's end).
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("kdelta-pg-connect".into())
            .spawn(move || {
                // TLS where the URL asks for it (`sslmode=require`), the server's
                // certificate verified against the system's CAs (OpenSSL's
                // SSL_CERT_FILE adds one); without it, as `sslmode=disable`.
                let client = if !matches!(cfg.get_ssl_mode(), postgres::config::SslMode::Require) {
                    cfg.connect(NoTls).map_err(|e| one_line(&e))
                } else {
                    match native_tls::TlsConnector::new() {
                        Ok(tls) => {
                            cfg.connect(postgres_native_tls::MakeTlsConnector::new(tls)).map_err(|e| one_line(&e))
                        }
                        Err(e) => Err(format!("setting up TLS: {e}")),
                    }
                };
                let _ = tx.send(client);
            })
            .context("starting the connection thread")?;
        let client = match rx.recv_timeout(limit) {
            Ok(c) => c,
            Err(_) => Err(format!(
                "no answer from the server within {} s, the connect timeout (connect_timeout=N in the URL)",
                limit.as_secs_f64()
            )),
        };
        let client = client.map_err(|e| {
            bad_input(scrub(format!("cannot open database {shown} ({e}); check the URL and that the server is up, or choose another store with --db")))
        })?;
        Ok((client, PathBuf::from(shown)))
    }

    /// Connect and make or migrate the schema.
    pub(super) fn open(url: &str) -> Result<Pg> {
        let (mut client, shown) = Self::connect(url)?;
        migrate(&mut client, &shown, super::init_schema())?;
        Ok(Pg { client: RefCell::new(client), shown, held: HashSet::new(), version: PG_VERSION })
    }

    /// Connect to a database that already holds kdelta's schema.
    pub(super) fn open_existing(url: &str) -> Result<Pg> {
        let (mut client, shown) = Self::connect(url)?;
        let e = |e| self::err(&shown, e);
        let Some(schema) = layout(&mut client).map_err(e)? else {
            return Err(bad_input(format!(
                "{} holds no kdelta results yet: run `kdelta run ... --db URL` first",
                shown.display()
            )));
        };
        client.batch_execute(&format!("SET search_path TO {schema}")).map_err(e)?;
        let version = match version(&mut client, schema).map_err(e)? {
            None => {
                return Err(bad_input(format!(
                    "{} holds no kdelta results yet: run `kdelta run ... --db URL` first",
                    shown.display()
                )))
            }
            Some(v) if v > PG_VERSION => return Err(newer(&shown, v)),
            Some(v) => v,
        };
        Ok(Pg { client: RefCell::new(client), shown, held: HashSet::new(), version })
    }

    pub(super) fn path(&self) -> &Path {
        &self.shown
    }

    pub(super) fn begin_run(&mut self, run: &RunRecord) -> Result<i64> {
        let id = self.insert_run(run, RunStatus::Running, None, true)?.expect("no origin, no conflict");
        self.held.insert(id);
        Ok(id)
    }

    /// Insert a run (with its lock taken before it is visible, when `lock`).
    fn insert_run(
        &mut self,
        run: &RunRecord,
        status: RunStatus,
        origin: Option<&str>,
        lock: bool,
    ) -> Result<Option<i64>> {
        let mut c = self.client.borrow_mut();
        let mut tx = c.transaction().map_err(|e| err(&self.shown, e))?;
        let id = insert_run(&mut tx, run, status, origin, lock).map_err(|e| err(&self.shown, e))?;
        tx.commit().map_err(|e| err(&self.shown, e))?;
        Ok(id)
    }

    pub(super) fn add_result(&mut self, run_id: i64, seq: usize, r: &ResultRecord) -> Result<()> {
        let cols = ResultCols::of(r)?;
        let mut c = self.client.borrow_mut();
        let mut tx = c.transaction().map_err(|e| err(&self.shown, e))?;
        insert_result(&mut tx, run_id, seq, &cols).map_err(|e| err(&self.shown, e))?;
        tx.commit().map_err(|e| err(&self.shown, e))
    }

    /// Take over an unfinished run unless another session holds its lock
    /// (see [`super::Store::claim_run`]); the lock is then this connection's.
    pub(super) fn claim_run(&mut self, run_id: i64) -> Result<bool> {
        if !self.held.contains(&run_id) {
            let free: bool = self
                .client
                .borrow_mut()
                .query_one("SELECT pg_try_advisory_lock($1)", &[&run_lock(run_id)])
                .map_err(|e| err(&self.shown, e))?
                .get(0);
            if !free {
                return Ok(false);
            }
            self.held.insert(run_id);
        }
        let me = std::process::id();
        let (pid, pid_start) = (i64::from(me), crate::sys::task::start_time(me as i32).map(|t| t as i64));
        self.client
            .borrow_mut()
            .execute(
                "UPDATE runs SET status = 'running', finished = NULL, pid = $2, pid_start = $3 WHERE id = $1",
                &[&run_id, &pid, &pid_start],
            )
            .map_err(|e| err(&self.shown, e))?;
        Ok(true)
    }

    pub(super) fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        environment: &crate::model::RunEnvironment,
    ) -> Result<()> {
        let mut c = self.client.borrow_mut();
        c.execute(
            "UPDATE runs SET status = $2, finished = $3, environment = $4 WHERE id = $1",
            &[&run_id, &status.as_str(), &crate::model::record::now_rfc3339(), &serde_json::to_string(environment)?],
        )
        .map_err(|e| err(&self.shown, e))?;
        // A run kept `running` (a study between its parts) keeps its lock.
        if status != RunStatus::Running && self.held.remove(&run_id) {
            c.execute("SELECT pg_advisory_unlock($1)", &[&run_lock(run_id)]).map_err(|e| err(&self.shown, e))?;
        }
        Ok(())
    }

    pub(super) fn runs(&self, limit: usize) -> Result<Vec<(RunRecord, usize)>> {
        let rows = self.query(
            &format!(
                "SELECT {}, (SELECT COUNT(*) FROM results WHERE run_id = runs.id) FROM runs ORDER BY id DESC LIMIT $1",
                self.run_cols()
            ),
            &[&(limit.min(i64::MAX as usize) as i64)],
        )?;
        rows.iter().map(|r| Ok((self.run(r)?, r.get::<_, i64>(13) as usize))).collect()
    }

    pub(super) fn find_run(&self, key: &str) -> Result<RunRecord> {
        let rows = match key.parse::<i64>() {
            Ok(id) => self.query(&format!("SELECT {} FROM runs WHERE id = $1", self.run_cols()), &[&id])?,
            Err(_) => self.query(
                &format!("SELECT {} FROM runs WHERE label = $1 ORDER BY id DESC LIMIT 1", self.run_cols()),
                &[&key],
            )?,
        };
        match rows.first() {
            Some(r) => self.run(r),
            None => {
                let n: i64 = self.query("SELECT COUNT(*) FROM runs", &[])?[0].get(0);
                Err(bad_input(format!(
                    "no run {key:?} in {}: give a run id or label from `kdelta runs` ({n} runs stored)",
                    self.shown.display()
                )))
            }
        }
    }

    pub(super) fn latest_complete(&self) -> Result<Option<RunRecord>> {
        let rows = self.query(
            &format!("SELECT {} FROM runs WHERE status = 'complete' ORDER BY id DESC LIMIT 1", self.run_cols()),
            &[],
        )?;
        rows.first().map(|r| self.run(r)).transpose()
    }

    /// The complete runs `q` selects, oldest first.
    pub(super) fn history_runs(&self, q: &super::HistoryQuery) -> Result<Vec<RunRecord>> {
        // The host snapshot and environment stay on disk: history names a
        // run's host by its indexed name.
        let cols = if self.version >= HOST_KEYS {
            self.run_cols()
                .replace(", host, environment,", ", json_build_object('hostname', hostname)::text, NULL::text,")
        } else {
            self.run_cols()
        };
        self.runs_selected(&cols, "status = 'complete'", q, "started, id")
    }

    /// Every run `q` selects, whatever its status, newest first.
    pub(super) fn runs_where(&self, q: &super::HistoryQuery) -> Result<Vec<RunRecord>> {
        self.runs_selected(&self.run_cols(), "TRUE", q, "id DESC")
    }

    /// How many results each of runs `ids` holds (from the index on run).
    pub(super) fn result_counts(&self, ids: &[i64]) -> Result<Vec<(i64, usize)>> {
        let rows =
            self.query("SELECT run_id, COUNT(*) FROM results WHERE run_id = ANY($1) GROUP BY run_id", &[&ids])?;
        Ok(rows.iter().map(|r| (r.get::<_, i64>(0), r.get::<_, i64>(1) as usize)).collect())
    }

    /// The runs `WHERE base` and each filter of `q` given, ordered by `order`.
    fn runs_selected(&self, cols: &str, base: &str, q: &super::HistoryQuery, order: &str) -> Result<Vec<RunRecord>> {
        let (host, kernel) = self.host_keys();
        let rows = self.query(
            &format!(
                "SELECT {cols} FROM runs WHERE {base} \
                 AND ($1::TEXT IS NULL OR label = $1) \
                 AND ($2::TEXT IS NULL OR {host} = $2) \
                 AND ($3::TEXT IS NULL OR {kernel} = $3) \
                 AND ($4::TEXT IS NULL OR started >= $4) \
                 ORDER BY {order}"
            ),
            &[&q.label, &q.hostname, &q.kernel, &q.since],
        )?;
        rows.iter().map(|r| self.run(r)).collect()
    }

    pub(super) fn results(&self, run_id: i64) -> Result<Vec<ResultRecord>> {
        // A version-3 database read as it is has no profiles.
        // An oversized profile is never fetched (`result_cols_read`).
        let cols = if self.version >= PROFILES {
            result_cols_read(&|c| format!("octet_length({c})"))
        } else {
            RESULT_COLS.replace(", profile", ", NULL")
        };
        let rows = self.query(&format!("SELECT {cols} FROM results WHERE run_id = $1 ORDER BY seq, id"), &[&run_id])?;
        rows.iter().map(|r| result_cols(r).record(run_id)).collect()
    }

    /// The results of runs `ids` whose benchmark or family is one of
    /// `names`, in one query, with the columns history reads
    /// ([`HISTORY_RESULT_COLS`]): each with its run's id, by run, then
    /// in the order stored.
    /// A row that does not parse comes as its error, for history to leave
    /// out with a warning.
    pub(super) fn history_results(&self, ids: &[i64], names: &[String]) -> Result<Vec<(i64, Result<ResultRecord>)>> {
        let rows = self.query(
            &format!(
                "SELECT run_id, {HISTORY_RESULT_COLS} FROM results WHERE run_id = ANY($1) \
                 AND (benchmark = ANY($2) OR family = ANY($2)) ORDER BY run_id, seq, id"
            ),
            &[&ids, &names],
        )?;
        rows.iter()
            .map(|r| {
                let run_id: i64 = r.get(0);
                Ok((run_id, result_cols_from(r, 1).record(run_id)))
            })
            .collect()
    }

    pub(super) fn has_run_key(&self, key: super::RunKey, value: &str) -> Result<bool> {
        let (host, kernel) = self.host_keys();
        let col = key.column(host, kernel);
        let rows = self.query(&format!("SELECT EXISTS (SELECT 1 FROM runs WHERE {col} = $1)"), &[&value])?;
        Ok(rows.first().is_some_and(|r| r.get::<_, bool>(0)))
    }

    /// Every label, host name and kernel release of a stored run.
    pub(super) fn run_keys(&self) -> Result<Vec<super::RunKeys>> {
        let (host, kernel) = self.host_keys();
        let rows = self.query(&format!("SELECT DISTINCT label, {host}, {kernel} FROM runs"), &[])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1), r.get(2))).collect())
    }

    /// The benchmark and family names stored in runs `ids`.
    pub(super) fn result_names(&self, ids: &[i64]) -> Result<Vec<(String, String)>> {
        let rows = self.query("SELECT DISTINCT benchmark, family FROM results WHERE run_id = ANY($1)", &[&ids])?;
        Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
    }

    /// The run's host name and kernel release as SQL: the indexed columns
    /// once migrated, else read from the host snapshot.
    fn host_keys(&self) -> (&'static str, &'static str) {
        if self.version >= HOST_KEYS {
            ("hostname", "kernel")
        } else {
            ("host::jsonb ->> 'hostname'", "host::jsonb ->> 'kernel_release'")
        }
    }

    /// Copy a run and its results in one transaction, unless a run from
    /// `origin` is already here.
    pub(super) fn import_run(
        &mut self,
        origin: &str,
        run: &RunRecord,
        results: &[ResultRecord],
    ) -> Result<Option<i64>> {
        let cols = results.iter().map(ResultCols::of).collect::<Result<Vec<_>>>()?;
        let mut c = self.client.borrow_mut();
        let shown = &self.shown;
        let mut tx = c.transaction().map_err(|e| err(shown, e))?;
        let Some(id) = insert_run(&mut tx, run, run.status, Some(origin), false).map_err(|e| err(shown, e))? else {
            return Ok(None);
        };
        for (seq, r) in cols.iter().enumerate() {
            insert_result(&mut tx, id, seq, r).map_err(|e| err(shown, e))?;
        }
        tx.commit().map_err(|e| err(shown, e))?;
        Ok(Some(id))
    }

    /// The columns [`run_cols`] reads (a database before version 2 has no `meta`).
    fn run_cols(&self) -> String {
        if self.version >= HOST_KEYS {
            RUN_COLS.to_string()
        } else {
            RUN_COLS.replace(", meta", ", NULL::text")
        }
    }

    fn query(&self, sql: &str, params: &[&(dyn postgres::types::ToSql + Sync)]) -> Result<Vec<Row>> {
        self.client.borrow_mut().query(sql, params).map_err(|e| err(&self.shown, e))
    }

    /// A run row as a record, its status made true: a `running` run whose
    /// lock nobody holds lost its writer, and is marked `incomplete` here.
    fn run(&self, row: &Row) -> Result<RunRecord> {
        let cols = run_cols(row);
        let mut status = cols.stored_status();
        if status == RunStatus::Running && !self.held.contains(&cols.id) {
            let key = run_lock(cols.id);
            let mut c = self.client.borrow_mut();
            let free: bool =
                c.query_one("SELECT pg_try_advisory_lock($1)", &[&key]).map_err(|e| err(&self.shown, e))?.get(0);
            if free {
                // A role that may only read sees it incomplete without marking it.
                let marked = c.execute(
                    "UPDATE runs SET status = 'incomplete', finished = $2 WHERE id = $1 AND status = 'running'",
                    &[&cols.id, &crate::model::record::now_rfc3339()],
                );
                match marked {
                    Err(e) if e.code() != Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) => {
                        return Err(err(&self.shown, e))
                    }
                    _ => {}
                }
                c.execute("SELECT pg_advisory_unlock($1)", &[&key]).map_err(|e| err(&self.shown, e))?;
                status = RunStatus::Incomplete;
            }
        }
        Ok(cols.record(status))
    }
}

/// A connection of its own to a shared store, for the fleet's queue: the
/// schema made or migrated as for writing, its `search_path` set to it.
pub(super) fn queue_client(url: &str) -> Result<(Client, PathBuf)> {
    let (mut client, shown) = Pg::connect(url)?;
    migrate(&mut client, &shown, super::init_schema())?;
    Ok((client, shown))
}

/// The same to read an existing queue: nothing made or migrated; `None`
/// when the store has no queue yet (no kdelta schema, or one before 5).
pub(super) fn queue_client_existing(url: &str) -> Result<Option<(Client, PathBuf)>> {
    let (mut client, shown) = Pg::connect(url)?;
    let e = |e| self::err(&shown, e);
    let Some(schema) = layout(&mut client).map_err(e)? else { return Ok(None) };
    client.batch_execute(&format!("SET search_path TO {schema}")).map_err(e)?;
    let has: bool = client.query_one("SELECT to_regclass('job_attempts') IS NOT NULL", &[]).map_err(e)?.get(0);
    Ok(has.then_some((client, shown)))
}

pub(super) fn err(shown: &Path, e: postgres::Error) -> anyhow::Error {
    // Missing rights are the user's to fix: one line, exit 2.
    if e.code() == Some(&postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
        return bad_input(format!(
            "database {}: {}: this role lacks the rights kdelta needs here; ask the database's owner to grant them, or choose another store with --db",
            shown.display(),
            one_line(&e)
        ));
    }
    anyhow::anyhow!("database {}: {}", shown.display(), one_line(&e))
}

fn newer(shown: &Path, v: i32) -> anyhow::Error {
    bad_input(format!(
        "{} was written by a newer kdelta (PostgreSQL schema {v}, this one reads up to {PG_VERSION}); nothing was changed: use a newer kdelta or choose another store with --db",
        shown.display()
    ))
}

#[cfg(test)]
#[path = "pg_tests.rs"]
mod tests;
