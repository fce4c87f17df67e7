//! A run's machine fingerprint and kernel, read from its stored host
//! snapshot (JSON, any kdelta version: a field an older run lacks reads as
//! unknown and is never called a difference), and what differs between two.

use serde_json::Value;

/// What identifies the machine (everything but the kernel) and the kernel.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fingerprint {
    pub(crate) machine: Vec<(&'static str, Option<String>)>,
    pub(crate) kernel: Vec<(&'static str, Option<String>)>,
}

fn text(host: &Value, key: &str) -> Option<String> {
    match host.get(key)? {
        Value::Null => None,
        Value::String(s) if s.is_empty() || s.starts_with("unavailable") => None,
        Value::String(s) => Some(s.clone()),
        v => Some(v.to_string()),
    }
}

/// `1 package x 2 cores x 2 CPUs`: the topology's shape, not its ids.
fn shape(host: &Value) -> Option<String> {
    let t = host.get("topology")?;
    let n = |k: &str| t.get(k).and_then(Value::as_array).map(Vec::len);
    Some(format!("{} package(s) x {} core(s), {} CPUs", n("packages")?, n("cores")?, n("cpus")?))
}

fn mitigations(host: &Value) -> Option<String> {
    let list = host.get("mitigations")?.as_array()?;
    let pairs: Vec<String> = list
        .iter()
        .filter_map(|p| {
            let p = p.as_array()?;
            Some(format!("{}={}", p.first()?.as_str()?, p.get(1)?.as_str()?))
        })
        .collect();
    Some(pairs.join(";"))
}

impl Fingerprint {
    pub(crate) fn of(host: &Value) -> Fingerprint {
        Fingerprint {
            machine: vec![
                ("CPU model", text(host, "cpu_model")),
                ("topology", shape(host)),
                ("memory", host.get("mem_total_bytes").and_then(Value::as_u64).map(|b| format!("{} MiB", b >> 20))),
                ("microcode", text(host, "microcode")),
                ("mitigations", mitigations(host)),
                ("libc", text(host, "glibc_version")),
                ("architecture", text(host, "arch")),
            ],
            kernel: vec![
                ("kernel", text(host, "kernel_release")),
                ("kernel build", text(host, "kernel_version")),
                ("kernel command line", text(host, "cmdline")),
            ],
        }
    }
}

/// One line per field that differs (both sides known): `memory: 4096 MiB
/// vs 8192 MiB`; mitigations name only the ones that differ.
fn diff(a: &[(&'static str, Option<String>)], b: &[(&'static str, Option<String>)]) -> Vec<String> {
    let mut out = Vec::new();
    for ((name, x), (_, y)) in a.iter().zip(b) {
        let (Some(x), Some(y)) = (x, y) else { continue };
        if x == y {
            continue;
        }
        if *name == "mitigations" {
            let xs: Vec<&str> = x.split(';').collect();
            let ys: Vec<&str> = y.split(';').collect();
            let key = |s: &str| s.split('=').next().unwrap_or("").to_string();
            let mut names: Vec<String> = xs
                .iter()
                .filter(|s| !ys.contains(s))
                .chain(ys.iter().filter(|s| !xs.contains(s)))
                .map(|s| key(s))
                .collect();
            names.dedup();
            out.push(format!("mitigations ({})", names.join(", ")));
        } else {
            out.push(format!("{name}: {x} vs {y}"));
        }
    }
    out
}

/// What differs between two fingerprints: (the machine, the kernel).
pub(crate) fn differences(a: &Fingerprint, b: &Fingerprint) -> (Vec<String>, Vec<String>) {
    (diff(&a.machine, &b.machine), diff(&a.kernel, &b.kernel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn host(model: &str, mem: u64, kernel: &str, mds: &str) -> Value {
        json!({"cpu_model": model, "mem_total_bytes": mem, "kernel_release": kernel, "glibc_version": "2.36",
               "mitigations": [["mds", mds], ["l1tf", "Not affected"]],
               "topology": {"packages": [0], "cores": [{}, {}], "cpus": [{}, {}]}})
    }

    #[test]
    fn only_what_differs_is_named() {
        let a = Fingerprint::of(&host("EPYC", 8 << 30, "6.1", "Not affected"));
        let b = Fingerprint::of(&host("EPYC", 8 << 30, "6.18", "Not affected"));
        assert_eq!(differences(&a, &b), (vec![], vec!["kernel: 6.1 vs 6.18".to_string()]));
        let c = Fingerprint::of(&host("Xeon", 4 << 30, "6.1", "Vulnerable"));
        let (m, k) = differences(&a, &c);
        assert_eq!(m, ["CPU model: EPYC vs Xeon", "memory: 8192 MiB vs 4096 MiB", "mitigations (mds)"]);
        assert!(k.is_empty());
    }

    #[test]
    fn unknown_fields_are_not_differences() {
        let a = Fingerprint::of(&json!({}));
        let b = Fingerprint::of(&host("EPYC", 1, "6.1", "x"));
        assert_eq!(differences(&a, &b), (vec![], vec![]));
        assert_eq!(Fingerprint::of(&json!({"cpu_model": "unavailable: no"})).machine[0].1, None);
    }
}
