//! Named configurations derived from the machine's topology.
//!
//! A configuration is a CPU set plus optional modifiers, written
//! `BASE[+MOD...]`:
//!
//! | base | CPUs |
//! |---|---|
//! | `all` | every online logical CPU (the machine as it is; the default) |
//! | `up` | one logical CPU (the first CPU of the first core) |
//! | `noht`, `smp` | one logical CPU on every core: SMT off by affinity |
//! | `ht`, `smt` | every logical CPU; needs a core with two or more online siblings |
//! | `noht1` | one logical CPU of one core (of the first SMT core when there is one) |
//! | `ht1` | every sibling of that core; needs SMT |
//! | `smpN` | N cores, one logical CPU each, cores taken in order of their lowest CPU |
//! | `cpus=LIST` | an explicit list such as `0,2-3` |
//!
//! Modifiers: `sched=other|batch|idle|fifo|rr` (fifo and rr need CAP_SYS_NICE),
//! `tunables=NAME=V:NAME=V` (sets `GLIBC_TUNABLES` for the worker),
//! `env=NAME=VALUE`, and `preload=tuned|PATH` (sets `LD_PRELOAD`: kdelta's
//! `libkdelta_mem.so` or a library of your own; [`preload`]). A modifier alone (`sched=batch`) applies to `all`. Each
//! of `sched=` and `tunables=` at most once, each `env=` name at most once.
//! Control-group limits (`cpu.max=QUOTA/PERIOD`, `cpus=N` after a `+`,
//! `cpu.weight=`, `cpuset=`, `memory.max=`, `memory.high=`: [`cgroup`]) are
//! recorded in [`Config::cgroup`]; the harness makes the worker's cgroup.
//! Kernel settings (`preempt=`, `smt=`, `governor=`, `boost=`, `thp=`,
//! `sysctl=NAME=VALUE`, `sysfs=PATH=VALUE`: [`knobs`]) are recorded in
//! [`Config::knobs`] and switched by the harness in the parent, never here.
//!
//! A list of configurations (`--config up,noht,cpus=0,2-3`) is split at
//! commas, except that a piece starting with a digit continues the CPU list
//! of the `cpus=` before it ([`split_list`]): no configuration name starts
//! with a digit, so the split is never ambiguous.
//!
//! Every base is derived from the CPUs kdelta may use ([`Topology::usable`]:
//! online, within its affinity mask and cgroup cpuset), not all online CPUs.
//!
//! Resolution never changes the calling process: [`apply`] runs in the worker.

use crate::cpuset::CpuSet;
use crate::error::bad_input;
use crate::model::reach::Reach;
use crate::sys::{self, Policy};
use crate::topology::Topology;
use anyhow::Result;

pub(crate) mod cgroup;
pub(crate) mod knobs;

pub(crate) use crate::model::config::Config;

pub(crate) mod preload;

/// The machine cannot give this configuration (as opposed to a typo).
#[derive(Debug, thiserror::Error)]
#[error("configuration {name:?} is unavailable here: {reason}")]
pub(crate) struct Unavailable {
    pub(crate) name: String,
    pub(crate) reason: String,
}

/// Names a user can write, for error messages and `--help`.
pub(crate) const BASES: &str = "all, up, noht (smp), ht (smt), noht1, ht1, smpN, cpus=LIST";
pub(crate) const MODIFIERS: &str = "sched=other|batch|idle|fifo|rr, tunables=NAME=V:NAME=V, env=NAME=VALUE, preload=tuned|PATH, counters=on|off, cpu.max=QUOTA/PERIOD, cpus=N, cpu.weight=W, cpuset=LIST, memory.max=SIZE, memory.high=SIZE, preempt=none|voluntary|full|lazy, smt=off|on, governor=NAME, boost=on|off, thp=always|madvise|never, sysctl=NAME=VALUE, sysfs=PATH=VALUE";

/// Split a `--config` value into configuration names: at commas, except
/// that a piece starting with a digit continues a `cpus=` list not yet
/// followed by a modifier (`cpus=0,2-3+sched=batch,up` is two).
pub fn split_list(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for piece in s.split(',') {
        let continues = piece.trim_start().starts_with(|c: char| c.is_ascii_digit())
            && out.last().is_some_and(|prev| prev.trim_start().starts_with("cpus=") && !prev.contains('+'));
        match out.last_mut() {
            Some(prev) if continues => {
                prev.push(',');
                prev.push_str(piece);
            }
            _ => out.push(piece.to_string()),
        }
    }
    out
}

/// Resolve one configuration name. `Err` is either bad input (unknown name,
/// malformed list, CPUs the machine lacks: exit 2) or [`Unavailable`].
pub fn resolve(spec: &str, topo: &Topology) -> Result<Config> {
    let topo: &Topology = &topo.usable();
    let spec = spec.trim();
    if spec.is_empty() {
        return Err(bad_input(format!("empty configuration name: allowed: {BASES}, with modifiers {MODIFIERS}")));
    }
    // Its name is shown in every table and stored: an escape sequence in
    // an env= value would reach every terminal that lists the run.
    crate::model::text::check_free_text("--config", spec, usize::MAX).map_err(|e| bad_input(e.to_string()))?;
    let mut parts = spec.split('+').map(str::trim);
    let first = parts.next().unwrap_or("");
    let mut mods: Vec<&str> = parts.collect();
    let base = if is_modifier(first) {
        mods.insert(0, first);
        "all"
    } else {
        first
    };
    check_conflicts(spec, &mods)?;
    let cpus = base_cpus(base, topo).map_err(|e| match e {
        // `-c 'rm -f out'` is hyperfine's --cleanup: no configuration has a space.
        BaseError::Unknown if base.contains(char::is_whitespace) => bad_input(format!(
            "unknown configuration {base:?}: -c is --config here (hyperfine's -c/--cleanup is spelled --cleanup)"
        )),
        BaseError::Unknown => {
            bad_input(format!("unknown configuration {base:?}: allowed: {BASES}, with modifiers {MODIFIERS}"))
        }
        BaseError::Bad(m) => bad_input(m),
        BaseError::Unavailable(r) => unavailable(spec, r),
    })?;
    let mut cfg = Config {
        name: String::new(),
        cpus,
        policy: None,
        env: Vec::new(),
        knobs: Vec::new(),
        counters: None,
        cgroup: Vec::new(),
    };
    let mut names = vec![canonical_base(base).to_string()];
    for m in mods {
        names.push(add_modifier(spec, m, topo, &mut cfg)?);
    }
    cfg.name = names.join("+");
    Ok(cfg)
}

/// What configuration `spec`'s modifiers reach beyond measuring, each with
/// the modifier that does ([`Reach`]): `env=` and `preload=PATH` run what
/// they name, kernel settings and cgroup limits are settings; `sched=`,
/// `tunables=` (the C library's own), `counters=` and `preload=tuned` reach
/// nothing. Read from the text, before anything of it is resolved.
pub(crate) fn reach(spec: &str) -> Vec<(Reach, String)> {
    let mut parts = spec.split('+').map(str::trim);
    let first = parts.next().unwrap_or("");
    let mods = std::iter::once(first).filter(|f| is_modifier(f)).chain(parts);
    mods.filter_map(|m| {
        let (k, v) = m.split_once('=')?;
        let r = match k {
            "env" => Reach::Commands,
            "preload" if v != "tuned" => Reach::Commands,
            _ if knobs::is_knob(k) || cgroup::is_limit(k) => Reach::Settings,
            _ => return None,
        };
        Some((r, format!("--config {spec}")))
    })
    .collect()
}

/// A configuration `spec` this machine or this user cannot give, and why.
fn unavailable(spec: &str, reason: String) -> anyhow::Error {
    anyhow::Error::new(Unavailable { name: spec.to_string(), reason })
}

/// One scheduling policy, one GLIBC_TUNABLES, one value per variable and
/// per kernel setting: checked before anything else is judged.
fn check_conflicts(spec: &str, mods: &[&str]) -> Result<()> {
    let mut seen: Vec<(String, &str)> = Vec::new();
    for m in mods {
        let Some((k, v)) = m.split_once('=') else { continue };
        // Keys: a variable's name, or `+sched` (no name holds a `+`).
        let key = match k {
            "env" => v.split_once('=').map_or(v, |(n, _)| n).to_string(),
            "tunables" => "GLIBC_TUNABLES".to_string(),
            "preload" => "LD_PRELOAD".to_string(),
            "sysctl" | "sysfs" => format!("+{k}={}", v.split_once('=').map_or(v, |(n, _)| n)),
            _ if cgroup::is_limit(k) => format!("+{}", cgroup::conflict_key(k)),
            _ => format!("+{k}"),
        };
        if let Some((_, prev)) = seen.iter().find(|(sk, _)| *sk == key) {
            return Err(bad_input(format!("conflicting modifiers {prev} and {m} in configuration {spec:?}: give each of sched=, tunables=, preload= and env=NAME once (preload= sets LD_PRELOAD), and each kernel setting once")));
        }
        seen.push((key, m));
    }
    Ok(())
}

/// Apply modifier `m` of configuration `spec` to `cfg`; its canonical
/// spelling for the configuration's name.
fn add_modifier(spec: &str, m: &str, topo: &Topology, cfg: &mut Config) -> Result<String> {
    let (k, v) = m.split_once('=').ok_or_else(|| {
        bad_input(format!("malformed modifier {m:?} in configuration {spec:?}: allowed: {MODIFIERS}"))
    })?;
    match k {
        "sched" => {
            let p = Policy::parse(v).ok_or_else(|| {
                bad_input(format!("unknown scheduling policy {v:?}: allowed: {}", Policy::NAMES.join(", ")))
            })?;
            if p.is_realtime() && !sys::can_use_realtime() {
                return Err(unavailable(
                    spec,
                    format!("sched={v} needs CAP_SYS_NICE (root, the capability, or an RLIMIT_RTPRIO above 0)"),
                ));
            }
            cfg.policy = Some(p);
            Ok(format!("sched={}", p.name()))
        }
        "tunables" => {
            check_tunables(v)?;
            cfg.env.push(("GLIBC_TUNABLES".into(), v.to_string()));
            Ok(format!("tunables={v}"))
        }
        "env" => {
            let (n, val) = v
                .split_once('=')
                .ok_or_else(|| bad_input(format!("malformed env modifier {v:?}: expected env=NAME=VALUE")))?;
            if n.is_empty() || n.contains('\0') || val.contains('\0') {
                return Err(bad_input(format!("malformed env modifier {v:?}: expected env=NAME=VALUE")));
            }
            cfg.env.push((n.to_string(), val.to_string()));
            Ok(format!("env={n}={val}"))
        }
        "preload" => match preload::resolve(v)? {
            preload::Resolved::Path(lib) => {
                cfg.env.push(("LD_PRELOAD".into(), lib));
                Ok(format!("preload={v}"))
            }
            preload::Resolved::Unavailable(why) => Err(unavailable(spec, format!("preload={v}: {why}"))),
        },
        "counters" => {
            cfg.counters = Some(match v {
                "on" => true,
                "off" => false,
                _ => {
                    return Err(bad_input(format!(
                        "unknown counters value {v:?} in configuration {spec:?}: allowed: on, off"
                    )))
                }
            });
            Ok(format!("counters={v}"))
        }
        _ if knobs::is_knob(k) => add_knob(spec, k, v, topo, cfg),
        _ if cgroup::is_limit(k) => {
            let l = cgroup::parse(k, v, &topo.online, &cfg.cpus)?;
            let name = l.name();
            cfg.cgroup.push(l);
            Ok(name)
        }
        _ => Err(bad_input(format!("unknown modifier {k:?} in configuration {spec:?}: allowed: {MODIFIERS}"))),
    }
}

/// `tunables=NAME=VALUE[:NAME=VALUE...]`, every name and value non-empty.
fn check_tunables(v: &str) -> Result<()> {
    let pair_ok = |t: &str| t.split_once('=').map(|(a, b)| !a.is_empty() && !b.is_empty()).unwrap_or(false);
    if v.is_empty() || !v.split(':').all(pair_ok) {
        return Err(bad_input(format!(
            "malformed tunables {v:?}: expected NAME=VALUE[:NAME=VALUE...], e.g. glibc.cpu.x86_non_temporal_threshold=0x1000000"
        )));
    }
    Ok(())
}

/// A kernel setting `k=v`, once per knob; `smt=off` is checked against the
/// configuration's CPUs ([`knobs::check_smt_off`]).
fn add_knob(spec: &str, k: &str, v: &str, topo: &Topology, cfg: &mut Config) -> Result<String> {
    let s = knobs::parse(k, v)?;
    if cfg.knobs.iter().any(|o| o.knob == s.knob) {
        return Err(bad_input(format!(
            "conflicting modifiers for {} in configuration {spec:?}: give each kernel setting once",
            s.knob.label()
        )));
    }
    if s.knob == crate::model::knob::Knob::Smt && s.value == "off" {
        knobs::check_smt_off(spec, &cfg.cpus, topo)?;
    }
    let name = s.name();
    cfg.knobs.push(s);
    Ok(name)
}

fn is_modifier(s: &str) -> bool {
    s.starts_with("sched=")
        || s.starts_with("tunables=")
        || s.starts_with("env=")
        || s.starts_with("preload=")
        || s.starts_with("counters=")
        || s.split_once('=').is_some_and(|(k, _)| knobs::is_knob(k) || (cgroup::is_limit(k) && k != "cpus"))
}

fn canonical_base(b: &str) -> &str {
    match b {
        "smp" => "noht",
        "smt" => "ht",
        other => other,
    }
}

enum BaseError {
    Unknown,
    Bad(String),
    Unavailable(String),
}

fn first_smt_core(topo: &Topology) -> Option<&crate::topology::Core> {
    topo.cores.iter().find(|c| c.cpus.len() > 1)
}

fn one_per_core(topo: &Topology) -> CpuSet {
    CpuSet::from_iter(topo.cores.iter().filter_map(|c| c.cpus.first()))
}

fn no_smt_reason(topo: &Topology) -> String {
    let ctl = match &topo.smt_control {
        Some(c) => format!(" (smt/control: {c})"),
        None => String::new(),
    };
    format!(
        "no core has two online logical CPUs (SMT siblings): {} cores, {} logical CPUs{ctl}",
        topo.cores.len(),
        topo.online.len()
    )
}

fn base_cpus(base: &str, topo: &Topology) -> std::result::Result<CpuSet, BaseError> {
    if topo.cores.is_empty() {
        return Err(BaseError::Unavailable("the topology lists no online CPU".into()));
    }
    Ok(match base {
        "all" => topo.online.clone(),
        "up" => CpuSet::from_iter(topo.cores[0].cpus.first()),
        "noht" | "smp" => one_per_core(topo),
        "ht" | "smt" => {
            if !topo.has_smt() {
                return Err(BaseError::Unavailable(no_smt_reason(topo)));
            }
            topo.online.clone()
        }
        "noht1" => CpuSet::from_iter(first_smt_core(topo).unwrap_or(&topo.cores[0]).cpus.first()),
        "ht1" => match first_smt_core(topo) {
            Some(c) => c.cpus.clone(),
            None => return Err(BaseError::Unavailable(no_smt_reason(topo))),
        },
        _ => {
            if let Some(list) = base.strip_prefix("cpus=") {
                let set = CpuSet::parse_list(list).map_err(|e| BaseError::Bad(e.to_string()))?;
                if set.is_empty() {
                    return Err(BaseError::Bad(format!("empty CPU list in {base:?}: online CPUs are {}", topo.online)));
                }
                let missing = set.difference(&topo.online);
                if !missing.is_empty() {
                    return Err(BaseError::Bad(match &topo.restriction {
                        Some(r) => {
                            format!("CPU {missing} not usable: kdelta may use CPUs {} ({})", topo.online, r.source)
                        }
                        None => format!("CPU {missing} not online on this machine: online CPUs are {}", topo.online),
                    }));
                }
                set
            } else if let Some(n) = base.strip_prefix("smp").filter(|n| !n.is_empty()) {
                let n: usize = n.parse().map_err(|_| BaseError::Unknown)?;
                if n == 0 {
                    return Err(BaseError::Bad(format!(
                        "{base}: the core count must be at least 1 (this machine has {} cores)",
                        topo.cores.len()
                    )));
                }
                if n > topo.cores.len() {
                    return Err(BaseError::Unavailable(format!(
                        "{base} needs {n} cores, this machine has {}",
                        topo.cores.len()
                    )));
                }
                CpuSet::from_iter(topo.cores.iter().take(n).filter_map(|c| c.cpus.first()))
            } else {
                return Err(BaseError::Unknown);
            }
        }
    })
}

/// Apply a configuration to the calling process (the worker): policy first,
/// then affinity, then environment. Every thread and child started afterwards
/// inherits it.
///
/// The worker starts on the configuration's lowest CPU ([`start_cpu`]) before
/// its affinity widens to all of them: where the kernel would first put it
/// (away from the CPU kdelta itself just ran on, say) is no part of the
/// configuration, and a single task under `noht` then runs on the CPU `up`
/// runs on, so the two compare configurations rather than CPU 0 with CPU 1
/// (on a VM those differ by a few per cent). The scheduler may move it later,
/// as the configuration allows; each sample records where it ran.
pub(crate) fn apply(cfg: &Config) -> Result<()> {
    if let Some(p) = cfg.policy {
        sys::set_policy(p)?;
    }
    if let Some(first) = start_cpu(&cfg.cpus) {
        sys::set_affinity(&CpuSet::from_iter([first]))?;
    }
    sys::set_affinity(&cfg.cpus)?;
    for (k, v) in &cfg.env {
        // SAFETY (of set_var's contract): the worker is single-threaded here.
        std::env::set_var(k, v);
    }
    Ok(())
}

/// The CPU a worker of a configuration over `cpus` starts on: the lowest,
/// so configurations that share it start a single task on the same CPU;
/// none when the set is empty (nothing to choose).
pub(crate) fn start_cpu(cpus: &CpuSet) -> Option<u32> {
    cpus.first()
}

#[cfg(test)]
pub(crate) mod tests;
