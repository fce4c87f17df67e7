//! The schema kdelta keeps in PostgreSQL: where it lives (its own schema, or
//! `public` for older stores), its version, and the migration every writer runs.

use super::*;

/// The PostgreSQL schema kdelta's tables live in, a namespace of their own.
pub(super) const SCHEMA: &str = "kdelta";

/// Where this database keeps kdelta's tables: its own schema, or `public`
/// where a kdelta before the schema of its own made them (used there, as
/// they are, so older kdeltas on other hosts keep writing the same
/// tables); `None` when it has none.
pub(super) fn layout(c: &mut impl GenericClient) -> Result<Option<&'static str>, postgres::Error> {
    let row = c.query_one(
        "SELECT to_regclass('kdelta.kdelta_schema') IS NOT NULL, to_regclass('public.kdelta_schema') IS NOT NULL",
        &[],
    )?;
    Ok(if row.get(0) {
        Some(SCHEMA)
    } else if row.get(1) {
        Some("public")
    } else {
        None
    })
}

/// The schema version kept in `schema`.
pub(super) fn version(c: &mut impl GenericClient, schema: &str) -> Result<Option<i32>, postgres::Error> {
    Ok(c.query_opt(&format!("SELECT version FROM {schema}.kdelta_schema"), &[])?.map(|r| r.get(0)))
}

/// Make or migrate the schema, once however many hosts start together. A
/// database without kdelta's tables that holds others is another
/// application's: refused untouched unless `init_schema`, and then kdelta's
/// tables go in their own schema beside the others.
pub(super) fn migrate(client: &mut Client, shown: &Path, init_schema: bool) -> Result<()> {
    let e = |e| err(shown, e);
    let mut tx = client.transaction().map_err(e)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK]).map_err(e)?;
    let current = match layout(&mut tx).map_err(e)? {
        Some(schema) => {
            tx.batch_execute(&format!("SET search_path TO {schema}")).map_err(e)?;
            match version(&mut tx, schema).map_err(e)? {
                Some(v) if v > PG_VERSION => return Err(newer(shown, v)),
                v => v.unwrap_or(0),
            }
        }
        None => {
            let others: Vec<String> = tx
                .query(
                    "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                     WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
                     ORDER BY 1",
                    &[],
                )
                .map_err(e)?
                .iter()
                .map(|r| r.get(0))
                .collect();
            let in_ours = others.iter().any(|t| t.starts_with("kdelta."));
            if !others.is_empty() && (!init_schema || in_ours) {
                let mut list = others.iter().take(3).cloned().collect::<Vec<_>>().join(", ");
                if others.len() > 3 {
                    list.push_str(&format!(" and {} more", others.len() - 3));
                }
                let way = if in_ours {
                    "its schema kdelta is another application's too"
                } else {
                    "or give --init-schema to keep kdelta's tables in a schema of their own (kdelta) beside them"
                };
                return Err(bad_input(format!(
                    "{} is not a kdelta database: it holds other tables ({list}) and no kdelta schema; nothing was changed: choose another database with --db, {way}",
                    shown.display()
                )));
            }
            tx.batch_execute(&format!(
                "CREATE SCHEMA IF NOT EXISTS {SCHEMA}; SET search_path TO {SCHEMA}; CREATE TABLE kdelta_schema (version INTEGER NOT NULL); INSERT INTO kdelta_schema VALUES (0);"
            ))
            .map_err(e)?;
            0
        }
    };
    for (v, sql) in STEPS {
        if *v > current {
            tx.batch_execute(sql).map_err(e)?;
        }
    }
    if current > 0 && current < HOST_KEYS {
        fill_host_keys(&mut tx).map_err(e)?;
    }
    if current < PG_VERSION {
        tx.execute("UPDATE kdelta_schema SET version = $1", &[&PG_VERSION]).map_err(e)?;
    }
    tx.commit().map_err(e)?;
    // A role that may read but not write is told now, not at its first result.
    let row = client
        .query_one(
            "SELECT has_table_privilege('runs', 'INSERT') AND has_table_privilege('runs', 'UPDATE') AND has_table_privilege('results', 'INSERT')
                    AND has_sequence_privilege('runs_id_seq', 'USAGE') AND has_sequence_privilege('results_id_seq', 'USAGE'),
                    current_user::text, current_schema()::text",
            &[],
        )
        .map_err(e)?;
    if !row.get::<_, bool>(0) {
        let (user, schema): (String, String) = (row.get(1), row.get(2));
        return Err(bad_input(format!(
            "role {user} may read {} but not store runs in it: ask its owner to grant INSERT, UPDATE ON {schema}.runs, INSERT ON {schema}.results and USAGE ON their id sequences, or use a reading command (runs, show, compare, export, report)",
            shown.display()
        )));
    }
    Ok(())
}
