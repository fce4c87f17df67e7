//! A run read back from its row, the benchmarks a list of runs holds, and the
//! host keys copied out of older runs' host JSON in the migration.

use super::*;

/// The benchmarks stored in a list of runs (a JSON array of ids).
pub(super) const RESULT_NAMES_SQL: &str =
    "SELECT DISTINCT benchmark, family FROM results WHERE run_id IN (SELECT value FROM json_each(?1))";

pub(super) fn run_from_row(row: &rusqlite::Row) -> rusqlite::Result<RunRecord> {
    let cols = RunCols {
        id: row.get(0)?,
        label: row.get(1)?,
        started: row.get(2)?,
        finished: row.get(3)?,
        status: row.get(4)?,
        kdelta_version: row.get(5)?,
        command: row.get(6)?,
        pid: row.get(7)?,
        configs: row.get(8)?,
        host: row.get(9)?,
        environment: row.get(10)?,
        pid_start: row.get(11)?,
        meta: row.get(12)?,
    };
    let status = crate::store::effective_status(
        cols.stored_status(),
        cols.pid.map(|p| p as u32),
        cols.pid_start.map(|t| t as u64),
    );
    Ok(cols.record(status))
}

/// Copy the host name and kernel release out of every older run's `host`
/// JSON into their own columns (schema 4), in the migration's transaction.
pub(super) fn fill_host_keys(tx: &rusqlite::Transaction) -> rusqlite::Result<()> {
    let mut read = tx.prepare("SELECT id, host FROM runs WHERE hostname IS NULL AND kernel IS NULL")?;
    let rows: Vec<(i64, Option<String>)> =
        read.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect::<rusqlite::Result<_>>()?;
    let mut write = tx.prepare("UPDATE runs SET hostname = ?2, kernel = ?3 WHERE id = ?1")?;
    for (id, host) in rows {
        let (hostname, kernel) = host_keys_of_text(host.as_deref());
        if hostname.is_some() || kernel.is_some() {
            write.execute(params![id, hostname, kernel])?;
        }
    }
    Ok(())
}
