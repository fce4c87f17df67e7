//! JSON: one object, the stable shape documented in the README:
//! `{ "run": {...}, "runs": [...], "results": [...], "comparisons": [...], "warnings": [...], "why": [...] }`.
//! Bidirectional controls in any string are written as `\u` escapes.

use super::model::Report;
use super::Renderer;
use anyhow::{Context, Result};
use serde_json::json;

/// The report as one pretty-printed JSON object.
pub(crate) struct Json;

impl Renderer for Json {
    fn render(&self, reports: &[Report]) -> Result<String> {
        let out = render(super::single(reports, "JSON")?)?;
        Ok(crate::model::text::json_escape_bidi(&out).into_owned())
    }
}

fn render(rep: &Report) -> Result<String> {
    let run = rep.runs.first().map(|r| {
        with_meta(
            json!({
                "id": r.id, "label": r.label, "started": r.started, "finished": r.finished,
                "status": r.status, "kdelta_version": r.kdelta_version, "command": r.command,
                "host": r.host, "configs": r.configs, "environment": r.environment,
            }),
            r,
        )
    });
    let runs: Vec<_> = rep
        .runs
        .iter()
        .map(|r| {
            with_meta(
                json!({"id": r.id, "label": r.label, "started": r.started, "status": r.status, "configs": r.configs}),
                r,
            )
        })
        .collect();
    let v = json!({
        "run": run,
        "runs": runs,
        "results": rep.results,
        "comparisons": rep.tables,
        "warnings": rep.remarks,
        "notes": rep.notes,
        "summaries": rep.summaries,
        "why": rep.why,
    });
    let mut v = v;
    let named = commands(rep);
    if let (Some(o), false) = (v.as_object_mut(), named.is_empty()) {
        o.insert("commands".into(), json!(named));
    }
    Ok(serde_json::to_string_pretty(&v).context("writing the report as JSON")? + "\n")
}

/// What each name of a carried parameter stands for (`cmd.run`'s named
/// commands), once each: `[{"benchmark": "cmd.run", "param": "commands",
/// "name": "fast", "text": "gzip -1 -c f"}]`. Absent when there is none.
fn commands(rep: &Report) -> Vec<serde_json::Value> {
    let mut out: Vec<serde_json::Value> = Vec::new();
    for r in &rep.results {
        for (param, name, text) in r.params.carried() {
            let v = json!({"benchmark": r.benchmark, "param": param, "name": name, "text": text});
            if !out.contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// A run's object with its metadata (`"meta": {"commit": "abc123"}`), a
/// field present only when the run has any.
fn with_meta(mut v: serde_json::Value, r: &crate::model::RunRecord) -> serde_json::Value {
    if let (Some(o), false) = (v.as_object_mut(), r.meta.is_empty()) {
        o.insert("meta".into(), json!(r.meta));
    }
    v
}
