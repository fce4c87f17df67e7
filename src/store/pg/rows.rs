//! Rows to and from PostgreSQL: a run and its results inserted, the columns
//! read back into their records, and the host keys copied out of older runs.

use super::*;

pub(super) fn insert_run(
    tx: &mut impl GenericClient,
    run: &RunRecord,
    status: RunStatus,
    origin: Option<&str>,
    lock: bool,
) -> Result<Option<i64>, postgres::Error> {
    let configs = serde_json::to_string(&run.configs).unwrap_or_else(|_| "[]".into());
    let host = run.host.to_string();
    let environment = serde_json::to_string(&run.environment).ok();
    let (pid, pid_start) = if origin.is_some() {
        (run.pid.map(i64::from), None)
    } else {
        let me = std::process::id();
        (Some(i64::from(me)), crate::sys::task::start_time(me as i32).map(|t| t as i64))
    };
    let (hostname, kernel) = host_keys(&run.host);
    let meta = run.meta.to_json();
    let row = tx.query_opt(
        "INSERT INTO runs (label, started, finished, status, kdelta_version, command, pid, pid_start, configs, host, environment, origin,
                           meta, hostname, kernel, job_id)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (origin) DO NOTHING RETURNING id",
        &[&run.label, &run.started, &run.finished, &status.as_str(), &run.kdelta_version, &run.command, &pid, &pid_start, &configs, &host, &environment, &origin,
          &meta, &hostname, &kernel, &run.job],
    )?;
    let Some(row) = row else { return Ok(None) };
    let id: i64 = row.get(0);
    if lock {
        tx.execute("SELECT pg_advisory_lock($1)", &[&run_lock(id)])?;
    }
    Ok(Some(id))
}

/// Copy the host name and kernel release out of every older run's `host`
/// JSON into their own columns, in one statement (the runs' ids and values
/// sent as arrays), inside the migration's transaction.
pub(super) fn fill_host_keys(tx: &mut impl GenericClient) -> Result<(), postgres::Error> {
    let rows = tx.query("SELECT id, host FROM runs WHERE hostname IS NULL AND kernel IS NULL", &[])?;
    let (mut ids, mut names, mut kernels) = (Vec::new(), Vec::new(), Vec::new());
    for r in &rows {
        let (hostname, kernel) = host_keys_of_text(r.get::<_, Option<&str>>(1));
        if hostname.is_some() || kernel.is_some() {
            ids.push(r.get::<_, i64>(0));
            names.push(hostname);
            kernels.push(kernel);
        }
    }
    if !ids.is_empty() {
        tx.execute(
            "UPDATE runs SET hostname = k.hostname, kernel = k.kernel
             FROM unnest($1::bigint[], $2::text[], $3::text[]) AS k(id, hostname, kernel) WHERE runs.id = k.id",
            &[&ids, &names, &kernels],
        )?;
    }
    Ok(())
}

pub(super) fn insert_result(
    tx: &mut impl GenericClient,
    run_id: i64,
    seq: usize,
    r: &ResultCols,
) -> Result<(), postgres::Error> {
    tx.execute(
        &format!("INSERT INTO results (run_id, seq, {RESULT_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23)"),
        &[
            &run_id,
            &(seq as i64),
            &r.benchmark,
            &r.family,
            &r.params,
            &r.config,
            &r.cpus,
            &r.unit,
            &r.better,
            &r.status,
            &r.reason,
            &r.samples,
            &r.summary,
            &r.extras,
            &r.notes,
            &r.warnings,
            &r.iterations,
            &r.simulated,
            &r.samples_meta,
            &r.quality,
            &r.placement,
            &r.below_resolution,
            &r.profile,
        ],
    )?;
    Ok(())
}

pub(super) fn run_cols(row: &Row) -> RunCols {
    RunCols {
        id: row.get(0),
        label: row.get(1),
        started: row.get(2),
        finished: row.get(3),
        status: row.get(4),
        kdelta_version: row.get(5),
        command: row.get(6),
        pid: row.get(7),
        configs: row.get(8),
        host: row.get(9),
        environment: row.get(10),
        pid_start: row.get(11),
        meta: row.get(12),
    }
}

pub(super) fn result_cols(row: &Row) -> ResultCols {
    result_cols_from(row, 0)
}

/// [`RESULT_COLS`] from column `at` on.
pub(super) fn result_cols_from(row: &Row, at: usize) -> ResultCols {
    let json = |i: usize| row.get::<_, Option<String>>(at + i).unwrap_or_else(|| "null".into());
    ResultCols {
        benchmark: row.get(at),
        family: row.get(at + 1),
        params: json(2),
        config: row.get(at + 3),
        cpus: row.get(at + 4),
        unit: row.get(at + 5),
        better: row.get(at + 6),
        status: row.get(at + 7),
        reason: row.get(at + 8),
        samples: json(9),
        summary: json(10),
        extras: json(11),
        notes: json(12),
        warnings: json(13),
        iterations: row.get(at + 14),
        simulated: row.get(at + 15),
        samples_meta: json(16),
        quality: row.get(at + 17),
        placement: json(18),
        below_resolution: row.get(at + 19),
        profile: row.get(at + 20),
    }
}
