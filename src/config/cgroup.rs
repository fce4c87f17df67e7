//! Control-group limits as configuration modifiers: `+cpu.max=QUOTA/PERIOD`
//! (microseconds), `+cpus=N` (a quota of N CPUs, period 100 ms),
//! `+cpu.weight=W`, `+cpuset=LIST`, `+memory.max=SIZE`, `+memory.high=SIZE`
//! (bytes, or with a K, M or G suffix). The worker runs in a cgroup of its
//! own with the limits written (`harness::cgroups`), on cgroup v2 or v1:
//!
//! | modifier | v2 file | v1 file |
//! |---|---|---|
//! | `cpu.max=Q/P`, `cpus=N` | `cpu.max` (`Q P`) | `cpu.cfs_period_us`, `cpu.cfs_quota_us` |
//! | `cpu.weight=W` (1..=10000) | `cpu.weight` | `cpu.shares` = W * 1024 / 100 (100 is 1024, the default) |
//! | `cpuset=LIST` | `cpuset.cpus`, `cpuset.mems` (the parent's) | `cpuset.cpus`, `cpuset.mems` (the parent's) |
//! | `memory.max=SIZE` | `memory.max` | `memory.limit_in_bytes` |
//! | `memory.high=SIZE` | `memory.high` | `memory.soft_limit_in_bytes`: not the same: v1 has no throttling threshold, its soft limit reclaims only under machine-wide memory pressure |
//!
//! Parsing and ranges are checked here (bad input); whether this machine can
//! apply them (the controller mounted, root) in [`check`] (unavailable).

use crate::cpuset::CpuSet;
use crate::error::bad_input;
use crate::model::config::CgroupLimit;
use crate::sys::cgroup::{Controller, Layout};
use anyhow::Result;
use std::path::Path;

/// The modifier names this module parses.
pub(crate) fn is_limit(k: &str) -> bool {
    matches!(k, "cpu.max" | "cpus" | "cpu.weight" | "cpuset" | "memory.max" | "memory.high")
}

/// The key two modifiers conflict on (`cpus=` and `cpu.max=` both set the quota).
pub(crate) fn conflict_key(k: &str) -> &str {
    if k == "cpus" {
        "cpu.max"
    } else {
        k
    }
}

/// The period `cpus=N` uses, microseconds (the kernel's default).
pub(crate) const DEFAULT_PERIOD_US: u64 = 100_000;
/// The kernel's bounds on a CFS period and the smallest quota (1 ms).
const PERIOD_US: std::ops::RangeInclusive<u64> = 1_000..=1_000_000;
const MIN_QUOTA_US: u64 = 1_000;
/// Less memory than this and the worker cannot start.
const MIN_MEMORY: u64 = 16 << 20;

/// The controller a limit needs.
pub(crate) fn controller(l: &CgroupLimit) -> Controller {
    match l {
        CgroupLimit::CpuMax { .. } | CgroupLimit::CpuWeight { .. } => Controller::Cpu,
        CgroupLimit::Cpuset { .. } => Controller::Cpuset,
        CgroupLimit::MemoryMax { .. } | CgroupLimit::MemoryHigh { .. } => Controller::Memory,
    }
}

/// Parse modifier `k=v` against the usable CPUs `usable` and the
/// configuration's CPUs `cpus`; bad input names the value and what is allowed.
pub(crate) fn parse(k: &str, v: &str, usable: &CpuSet, cpus: &CpuSet) -> Result<CgroupLimit> {
    let num = |s: &str| s.trim().parse::<u64>().ok();
    Ok(match k {
        "cpu.max" => {
            let (q, p) = v.split_once('/').unwrap_or((v, ""));
            let p = if p.is_empty() { Some(DEFAULT_PERIOD_US) } else { num(p) };
            match (num(q), p) {
                (Some(q), Some(p)) if PERIOD_US.contains(&p) && q >= MIN_QUOTA_US => {
                    CgroupLimit::CpuMax { quota_us: q, period_us: p }
                }
                _ => {
                    return Err(bad_input(format!(
                        "cpu.max={v}: expected QUOTA/PERIOD in microseconds, the period 1000..=1000000 and the quota at least 1000 (cpu.max=50000/100000 is half a CPU)"
                    )))
                }
            }
        }
        "cpus" => {
            let n: f64 = v.trim().parse().unwrap_or(f64::NAN);
            let quota = (n * DEFAULT_PERIOD_US as f64).round();
            if !(n.is_finite() && quota >= MIN_QUOTA_US as f64 && n <= usable.len() as f64) {
                return Err(bad_input(format!(
                    "cpus={v}: expected a number of CPUs from 0.01 to {} (the usable CPUs), e.g. cpus=1.5",
                    usable.len()
                )));
            }
            CgroupLimit::CpuMax { quota_us: quota as u64, period_us: DEFAULT_PERIOD_US }
        }
        "cpu.weight" => match num(v) {
            Some(w) if (1..=10_000).contains(&w) => CgroupLimit::CpuWeight { weight: w },
            _ => return Err(bad_input(format!("cpu.weight={v}: expected 1..=10000 (100 is the default)"))),
        },
        "cpuset" => {
            let set = CpuSet::parse_list(v).map_err(|e| bad_input(format!("cpuset={v}: {e}")))?;
            if set.is_empty() {
                return Err(bad_input(format!("cpuset={v}: empty CPU list: kdelta may use CPUs {usable}")));
            }
            let missing = set.difference(usable);
            if !missing.is_empty() {
                return Err(bad_input(format!("cpuset={v}: CPU {missing} not usable: kdelta may use CPUs {usable}")));
            }
            if set.intersection(cpus).is_empty() {
                return Err(bad_input(format!(
                    "cpuset={v} shares no CPU with the configuration's CPUs {cpus}: the worker could run nowhere"
                )));
            }
            CgroupLimit::Cpuset { cpus: set }
        }
        "memory.max" | "memory.high" => {
            let bytes = size(v).filter(|&b| b >= MIN_MEMORY).ok_or_else(|| {
                bad_input(format!("{k}={v}: expected a size of at least 16M: bytes, or with a K, M or G suffix"))
            })?;
            if k == "memory.max" {
                CgroupLimit::MemoryMax { bytes }
            } else {
                CgroupLimit::MemoryHigh { bytes }
            }
        }
        _ => return Err(bad_input(format!("unknown cgroup limit {k:?}"))),
    })
}

/// `123`, `64K`, `512M`, `2G` (binary multiples).
fn size(v: &str) -> Option<u64> {
    let v = v.trim();
    let (n, mul) = match v.chars().last()? {
        'k' | 'K' => (&v[..v.len() - 1], 1u64 << 10),
        'm' | 'M' => (&v[..v.len() - 1], 1 << 20),
        'g' | 'G' => (&v[..v.len() - 1], 1 << 30),
        _ => (v, 1),
    };
    n.parse::<u64>().ok()?.checked_mul(mul)
}

/// Can this machine apply `limits` below `root`? `Err`: why not, for
/// [`super::Unavailable`]: a controller not mounted, one cgroup v2 cannot
/// hand down to kdelta's workers (`Hierarchy::hands_down`), or not root.
pub(crate) fn check(limits: &[CgroupLimit], root: &Path) -> std::result::Result<(), String> {
    if limits.is_empty() {
        return Ok(());
    }
    let layout = Layout::read(root);
    for l in limits {
        let c = controller(l);
        let Some(h) = layout.get(c) else {
            return Err(format!(
                "{} needs the cgroup {} controller, which is not mounted below {} ({})",
                l.name(),
                c.name(),
                crate::sys::cgroup::cgroup_dir(root).display(),
                layout.describe()
            ));
        };
        h.hands_down(c).map_err(|why| format!("{}: {why}", l.name()))?;
    }
    if root == Path::new("/") && !crate::sys::knobs::is_root() {
        return Err(format!("{}: making cgroups needs root", limits[0].name()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(k: &str, v: &str) -> Result<CgroupLimit> {
        parse(k, v, &CpuSet::parse_list("0-1").unwrap(), &CpuSet::parse_list("0-1").unwrap())
    }

    #[test]
    fn limits_parse_and_name_themselves() {
        assert_eq!(p("cpu.max", "50000/100000").unwrap().name(), "cpu.max=50000/100000");
        assert_eq!(p("cpus", "1.5").unwrap().name(), "cpu.max=150000/100000");
        assert_eq!(p("cpu.weight", "200").unwrap().name(), "cpu.weight=200");
        assert_eq!(p("cpuset", "1").unwrap().name(), "cpuset=1");
        assert_eq!(p("memory.max", "512M").unwrap().name(), "memory.max=536870912");
        assert_eq!(p("memory.high", "1G").unwrap().name(), "memory.high=1073741824");
    }

    #[test]
    fn values_out_of_range_are_bad_input() {
        for (k, v) in [
            ("cpu.max", "50000/100"),
            ("cpu.max", "10/100000"),
            ("cpu.max", "x/100000"),
            ("cpus", "3"),
            ("cpus", "0"),
            ("cpus", "-1"),
            ("cpus", "nan"),
            ("cpu.weight", "0"),
            ("cpu.weight", "10001"),
            ("cpuset", "2"),
            ("cpuset", ""),
            ("memory.max", "1K"),
            ("memory.high", "lots"),
            ("memory.max", "99999999999999999999G"),
        ] {
            let e = p(k, v).unwrap_err();
            assert!(crate::error::is_bad_input(&e), "{k}={v}: {e}");
            assert!(e.to_string().contains(v), "{k}={v}: {e}");
        }
        let e = parse("cpuset", "1", &CpuSet::parse_list("0-1").unwrap(), &CpuSet::parse_list("0").unwrap());
        assert!(e.unwrap_err().to_string().contains("shares no CPU"));
    }
}
