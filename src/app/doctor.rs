//! `kdelta doctor`: the machine's settings that move measurements
//! (`crate::doctor`), `--apply` and `--reset`.

use super::*;

/// How long steal time and the busiest processes are sampled.
const WINDOW: std::time::Duration = std::time::Duration::from_secs(1);

pub(super) fn cmd_doctor(a: &crate::cli::DoctorArgs) -> Result<u8> {
    let crate::cli::DoctorArgs { json, apply, reset, ref cpus } = *a;
    let root = sysfs_root();
    if reset {
        for l in crate::doctor::reset(&root)? {
            out(&format!("{l}\n"));
        }
        return Ok(exit::OK);
    }
    let topo = read_topology()?;
    let usable = topo.usable().online.clone();
    let measured = match cpus.clone() {
        Some(c) if !c.difference(&usable).is_empty() => {
            return Err(crate::error::bad_input(format!(
                "--cpus {c}: CPUs {} are not ones kdelta may use here: allowed: {usable}",
                c.difference(&usable)
            )))
        }
        Some(c) => c,
        None => usable,
    };
    let mut report = crate::doctor::examine(&root, &measured, WINDOW);
    // Which CPUs slow which: every usable CPU, whatever `--cpus` says, since
    // the record serves every later run; only on the real machine (the
    // loops run on its CPUs, not on a fake root's).
    if root == std::path::Path::new("/") {
        let record = crate::measure::interfere::path();
        crate::doctor::add_interference(&mut report, &root, &topo.usable().online, record.as_deref());
    }
    let applied = if apply { Some(crate::doctor::apply(&root, &report)?) } else { None };
    if json {
        let mut v = serde_json::to_value(&report)?;
        if let Some(a) = &applied {
            v["applied"] = serde_json::json!(a);
        }
        out_json(&serde_json::to_string_pretty(&v)?);
    } else {
        let mut s = crate::doctor::render(&report);
        if let Some(a) = &applied {
            s.push_str("\n--apply:\n");
            for l in a {
                s.push_str(&format!("  {l}\n"));
            }
        }
        out(&s);
    }
    Ok(exit::OK)
}
