//! JSON: one object, the stable shape documented in the README:
//! `{ "run": {...}, "runs": [...], "results": [...], "comparisons": [...], "warnings": [...] }`.

use super::model::Report;
use serde_json::json;

pub fn render(rep: &Report) -> String {
    let run = rep.runs.first().map(|r| {
        json!({
            "id": r.id, "label": r.label, "started": r.started, "finished": r.finished,
            "status": r.status, "kdelta_version": r.kdelta_version, "command": r.command,
            "host": r.host, "configs": r.configs, "environment": r.environment,
        })
    });
    let runs: Vec<_> = rep
        .runs
        .iter()
        .map(|r| json!({"id": r.id, "label": r.label, "started": r.started, "status": r.status, "configs": r.configs}))
        .collect();
    let v = json!({
        "run": run,
        "runs": runs,
        "results": rep.results,
        "comparisons": rep.tables,
        "warnings": rep.remarks,
        "notes": rep.notes,
        "summaries": rep.summaries,
    });
    serde_json::to_string_pretty(&v).unwrap_or_else(|_| "{}".into()) + "\n"
}
