//! The host snapshot a run stored (topology, CPU model, kernel, preemption,
//! C library, mitigations) as HTML. It is read from the stored JSON, so a
//! run of an older version shows what it has and says what it lacks.

use super::escape::{html_write, Html};
use super::svg::bytes;
use serde_json::Value;

fn text(v: Option<&Value>) -> Option<String> {
    match v? {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(if *b { "yes" } else { "no" }.into()),
        other => Some(other.to_string()),
    }
}

fn row(out: &mut Html, name: &'static str, value: Option<String>) {
    let v = value.map(|v| Html::text(&v)).unwrap_or_else(|| Html::lit("<span class=\"na\">not recorded</span>"));
    html_write!(out, "<tr><th>{}</th><td>{}</td></tr>", Html::text(name), v);
}

type Object = serde_json::Map<String, Value>;

/// The snapshot as a definition table, then mitigations and notes.
pub(super) fn render(host: &Value) -> Html {
    let Some(h) = host.as_object().filter(|o| !o.is_empty()) else {
        return Html::lit("<p class=\"na\">host snapshot: not recorded for this run</p>");
    };
    let mut s = Html::lit("<table class=\"host\"><tbody>");
    machine_rows(&mut s, h);
    let t = h.get("topology").and_then(|t| t.as_object());
    cpu_rows(&mut s, t);
    layout_rows(&mut s, t);
    s.push_lit("</tbody></table>");
    mitigations(&mut s, h);
    notes(&mut s, h);
    s
}

/// Name, CPU model, memory, kernel, preemption, C library.
fn machine_rows(s: &mut Html, h: &Object) {
    let g = |k: &str| text(h.get(k));
    row(s, "host name", g("hostname"));
    row(s, "CPU model", g("cpu_model"));
    row(s, "architecture", g("arch"));
    row(s, "memory", h.get("mem_total_bytes").and_then(|v| v.as_f64()).map(|b| format!("{}iB", bytes(b))));
    row(s, "kernel", g("kernel_release").map(|r| format!("{r} ({})", g("kernel_version").unwrap_or_default())));
    row(
        s,
        "preemption",
        g("preempt_model").map(|m| format!("{m} (from {})", g("preempt_source").unwrap_or_else(|| "?".into()))),
    );
    row(s, "C library", g("glibc_version"));
    row(s, "x86 ht flag", g("ht_flag"));
}

/// Online and offline CPUs, SMT, packages.
fn cpu_rows(s: &mut Html, t: Option<&Object>) {
    let tg = |k: &str| t.and_then(|t| text(t.get(k)));
    row(s, "online CPUs", tg("online"));
    if let Some(off) = tg("offline").filter(|o| o != "\"\"" && !o.is_empty()) {
        row(s, "offline CPUs", Some(off));
    }
    row(
        s,
        "SMT",
        Some(format!(
            "control {}, active {}",
            tg("smt_control").unwrap_or_else(|| "unknown".into()),
            tg("smt_active").unwrap_or_else(|| "unknown".into())
        )),
    );
    row(
        s,
        "packages",
        t.and_then(|t| t.get("packages"))
            .and_then(|p| p.as_array())
            .map(|p| format!("{} (ids {})", p.len(), p.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", "))),
    );
}

/// Cores, caches, NUMA nodes, and the CPUs the run was restricted to.
fn layout_rows(s: &mut Html, t: Option<&Object>) {
    let list = |k: &str| t.and_then(|t| t.get(k)).and_then(|v| v.as_array()).cloned().unwrap_or_default();
    let joined = |items: Vec<String>| (!items.is_empty()).then(|| items.join("; "));
    let core = |c: &Value| {
        format!(
            "package {} core {}: cpus {}",
            text(c.get("package")).unwrap_or_default(),
            text(c.get("core_id")).unwrap_or_else(|| "?".into()),
            text(c.get("cpus")).unwrap_or_default()
        )
    };
    row(s, "cores", joined(list("cores").iter().map(core).collect()));
    let cache = |c: &Value| {
        let size = c
            .get("size_bytes")
            .and_then(|v| v.as_f64())
            .map(|b| format!("{}iB", bytes(b)))
            .unwrap_or_else(|| "size unknown".into());
        format!(
            "L{} {} {size}, shared by cpus {}",
            text(c.get("level")).unwrap_or_default(),
            text(c.get("kind")).unwrap_or_default(),
            text(c.get("shared")).unwrap_or_default()
        )
    };
    row(s, "caches", joined(list("caches").iter().map(cache).collect()));
    let node = |n: &Value| {
        format!("node {}: cpus {}", text(n.get("id")).unwrap_or_default(), text(n.get("cpus")).unwrap_or_default())
    };
    row(s, "NUMA nodes", joined(list("nodes").iter().map(node).collect()));
    if let Some(r) = t.and_then(|t| t.get("restriction")).filter(|r| !r.is_null()) {
        row(
            s,
            "usable CPUs",
            Some(format!(
                "{} (from {})",
                text(r.get("cpus")).unwrap_or_default(),
                text(r.get("source")).unwrap_or_default()
            )),
        );
    }
}

fn mitigations(s: &mut Html, h: &Object) {
    let mit = h.get("mitigations").and_then(|m| m.as_array()).cloned().unwrap_or_default();
    if mit.is_empty() {
        s.push_lit("<p class=\"na\">mitigations: not recorded</p>");
        return;
    }
    s.push_lit("<details open><summary>CPU vulnerabilities and mitigations</summary><table class=\"host\"><tbody>");
    for m in &mit {
        let (k, v) =
            (m.get(0).and_then(|v| v.as_str()).unwrap_or("?"), m.get(1).and_then(|v| v.as_str()).unwrap_or("?"));
        html_write!(s, "<tr><th>{}</th><td>{}</td></tr>", Html::text(k), Html::text(v));
    }
    s.push_lit("</tbody></table></details>");
}

fn notes(s: &mut Html, h: &Object) {
    let notes = h.get("notes").and_then(|n| n.as_array()).cloned().unwrap_or_default();
    if !notes.is_empty() {
        s.push_lit("<ul class=\"notes\">");
        for n in notes.iter().filter_map(|n| n.as_str()) {
            html_write!(s, "<li>{}</li>", Html::text(n));
        }
        s.push_lit("</ul>");
    }
}
