//! `kdelta topo` and `kdelta list`: the machine and the benchmarks as kdelta sees them.

use super::*;

pub(super) fn cmd_topo(json: bool) -> Result<u8> {
    let host = host_snapshot()?;
    if json {
        out_json(&serde_json::to_string_pretty(&host)?);
        return Ok(exit::OK);
    }
    let mut s = crate::topology::show::render(&host);
    s.push_str(&configs_text(&host.topology));
    s.push_str(&crate::config::knobs::states_text(&sysfs_root()));
    out(&s);
    Ok(exit::OK)
}

/// `kdelta restore`: replay the journal of kernel settings a killed kdelta
/// left (`--discard`: remove it without replaying).
/// Both journals: kernel settings, and the cgroups kdelta made.
pub(super) fn cmd_restore(discard: bool) -> Result<u8> {
    let root = sysfs_root();
    // The cgroups first: a cpuset that isolated CPUs gives them back.
    for path in crate::harness::journal::paths(&root).iter().rev() {
        if discard {
            out(&format!("{}\n", crate::harness::journal::discard(path)?));
            continue;
        }
        let Some(done) = crate::harness::journal::replay(path, &root)? else {
            out(&format!("nothing to restore: no journal at {}\n", path.display()));
            continue;
        };
        for line in &done {
            out(&format!("{line}\n"));
        }
        out(&format!("restored; {} removed\n", path.display()));
    }
    Ok(exit::OK)
}

/// Every named configuration and what it resolves to here.
pub(super) fn configs_text(topo: &Topology) -> String {
    let mut s = String::from("\nconfigurations:\n");
    for name in ["all", "up", "noht", "ht", "noht1", "ht1"] {
        match crate::config::resolve(name, topo) {
            Ok(c) => s.push_str(&format!("  {:<6} cpus {}\n", name, c.cpus)),
            Err(e) => s.push_str(&format!(
                "  {:<6} unavailable: {}\n",
                name,
                e.downcast_ref::<crate::config::Unavailable>()
                    .map(|u| u.reason.clone())
                    .unwrap_or_else(|| e.to_string())
            )),
        }
    }
    s.push_str(&format!("  smpN   N = 1..{} (one CPU on each of N cores)\n", topo.cores.len()));
    s
}

pub(super) fn cmd_list(json: bool, selectors: &[String]) -> Result<u8> {
    let topo = read_topology().ok();
    let benches = if selectors.is_empty() { bench::registry() } else { plan::select(selectors, bench::registry())? };
    let mut rows = Vec::new();
    for b in &benches {
        let info = b.info();
        let supported = match &topo {
            Some(t) => b.supported(&Env { topology: t }),
            None => Err(crate::bench::Unsupported::NoTopology),
        };
        rows.push((info, supported.map_err(|e| e.to_string())));
    }
    if json {
        let v: Vec<serde_json::Value> = rows
            .iter()
            .map(|(i, s)| {
                serde_json::json!({
                    "name": i.name, "family": i.family, "summary": i.summary, "unit": i.unit,
                    "better": i.better.as_str(), "aliases": i.aliases,
                    "params": i.params.iter().map(|p| serde_json::json!({
                        "name": p.name, "kind": p.kind_name(), "default": p.default, "quick": p.quick.unwrap_or(p.default), "help": p.help,
                        "aliases": p.value_aliases().iter().map(|(a, c)| serde_json::json!({"alias": a, "for": c})).collect::<Vec<_>>(),
                    })).collect::<Vec<_>>(),
                    "samples": i.samples, "quick_samples": i.quick_samples,
                    "supported": s.is_ok(), "reason": s.as_ref().err(),
                })
            })
            .collect();
        out_json(&serde_json::to_string_pretty(&v)?);
        return Ok(exit::OK);
    }
    let mut s = String::new();
    let mut fam = "";
    for (i, sup) in &rows {
        if i.family != fam {
            fam = i.family;
            s.push_str(&format!("\n{fam}\n"));
        }
        let dir = if i.better == bench::Better::Lower { "lower is better" } else { "higher is better" };
        s.push_str(&format!("  {:<20} {:<8} {:<17} {}\n", i.name, i.unit, dir, i.summary));
        if !i.aliases.is_empty() {
            s.push_str(&format!("  {:<20}   formerly named {}\n", "", i.aliases.join(", ")));
        }
        for p in &i.params {
            let q = p.quick.map(|q| format!(", quick {q}")).unwrap_or_default();
            s.push_str(&format!(
                "  {:<20}   --param {}={} ({}{q}): {}\n",
                "",
                p.name,
                p.default,
                p.kind_name(),
                p.help
            ));
        }
        if let Err(why) = sup {
            s.push_str(&format!("  {:<20}   unsupported here: {why}\n", ""));
        }
    }
    out(s.trim_start());
    Ok(exit::OK)
}
