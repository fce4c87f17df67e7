//! Which CPUs slow which: the record `kdelta doctor` makes of vCPUs that
//! share a core's caches or front end without the topology saying so, and
//! that the disturbance rules read (`disturb.rs`, with the SMT siblings).
//!
//! The record is one small JSON file, `interference.json` in kdelta's state
//! directory: `$XDG_STATE_HOME/kdelta/`, else `~/.local/state/kdelta/`
//! (the XDG base directory specification), written by the user who ran the
//! doctor, readable by anyone (mode 0644), so no reader needs root. It names
//! the machine it was measured on (host name, CPU model, possible CPUs,
//! read below the sysfs root); on another machine it is ignored, as is one
//! measured while other tasks kept a loaded CPU busy ([`OTHER_WORK`]): its
//! "no CPU slows another" could not be told. Without a record, nothing but
//! the SMT siblings count as interfering.

use crate::cpuset::CpuSet;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The record's file name in the state directory.
pub(crate) const FILE: &str = "interference.json";

/// Slowdown (median ratio less one, over the loop kinds the doctor runs)
/// above which a busy CPU counts as interfering with another.
pub(crate) const LIMIT: f64 = 0.05;

/// The machine a record belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct MachineId {
    pub(crate) host: String,
    pub(crate) cpu_model: String,
    /// `/sys/devices/system/cpu/possible`.
    pub(crate) cpus: String,
}

impl MachineId {
    /// This machine, read below `root`.
    pub(crate) fn read(root: &Path) -> MachineId {
        let text = |p: &str| std::fs::read_to_string(root.join(p)).map(|s| s.trim().to_string()).unwrap_or_default();
        MachineId {
            host: text("proc/sys/kernel/hostname"),
            cpu_model: crate::topology::host::cpu_model_of(&text("proc/cpuinfo")).unwrap_or_default(),
            cpus: text("sys/devices/system/cpu/possible"),
        }
    }
}

/// One measured pair: how much a CPU-bound load on `busy` slowed loops on `cpu`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pair {
    pub(crate) cpu: u32,
    pub(crate) busy: u32,
    /// Per loop kind (`shell`, `memory`, `multiply`): the median of the
    /// interleaved loaded/quiet ratios, less one (0.24: 24 % slower).
    pub(crate) slowdown: BTreeMap<String, f64>,
    /// The pairs of samples each figure is the median of.
    pub(crate) pairs: u32,
    /// Whether any kind's slowdown exceeds [`LIMIT`].
    pub(crate) interferes: bool,
    /// Share of the busy CPU's time other tasks used while the pair was
    /// measured (`/proc/stat` less the load's own time): large, and the
    /// quiet side was not quiet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) other_work: Option<f64>,
}

/// The doctor's record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Record {
    pub(crate) machine: MachineId,
    /// When it was measured, seconds since the Unix epoch.
    pub(crate) measured_at: f64,
    /// The [`LIMIT`] it was judged with.
    pub(crate) limit: f64,
    pub(crate) pairs: Vec<Pair>,
    /// Which interleave gave tighter pairs of identical work here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pairing: Option<Pairing>,
}

/// How compared values best take turns on this machine, as `kdelta doctor`
/// measured it (`doctor/pairing.rs`): the spread of pair ratios of two
/// identical loops taken one after the other on one CPU, against taken at
/// the same moment on two CPUs that swap each pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Pairing {
    /// The two CPUs the duet pairs ran on (the first also ran the alternating ones).
    pub(crate) cpus: [u32; 2],
    /// Robust spread (1.4826 x MAD) of the log ratios, percent: one after the other.
    pub(crate) alternating_pct: f64,
    /// The same, at the same moment on the two CPUs.
    pub(crate) duet_pct: f64,
    /// Pairs behind each figure.
    pub(crate) pairs: u32,
    pub(crate) best: PairingMode,
}

/// The interleave a run takes by default on a machine with a [`Pairing`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PairingMode {
    /// One after the other on one CPU (`--interleave samples`).
    Alternate,
    /// At the same moment on two CPUs (`--interleave duet`).
    Duet,
}

/// Duet must be tighter than alternation by this factor to be the default:
/// it needs two quiet CPUs where alternation needs one.
pub(crate) const DUET_MARGIN: f64 = 0.8;

impl Pairing {
    /// The better mode for these spreads.
    pub(crate) fn best_of(alternating_pct: f64, duet_pct: f64) -> PairingMode {
        if duet_pct < DUET_MARGIN * alternating_pct {
            PairingMode::Duet
        } else {
            PairingMode::Alternate
        }
    }

    /// One line: the figures and what a run does by default.
    pub(crate) fn describe(&self) -> String {
        format!(
            "pairs of identical loops spread {:.1} % one after the other on CPU {}, {:.1} % at the same moment on CPUs {},{} ({} pairs each)",
            self.alternating_pct, self.cpus[0], self.duet_pct, self.cpus[0], self.cpus[1], self.pairs
        )
    }
}

/// Share of a loaded CPU's time other tasks may use while a pair is
/// measured: beyond it the "quiet" side was not quiet, the slowdowns
/// understate, and the record is neither written nor trusted.
pub(crate) const OTHER_WORK: f64 = 0.10;

impl Record {
    /// The largest share of a loaded CPU's time other tasks used while the
    /// record was measured, with that CPU, when it exceeds [`OTHER_WORK`].
    pub(crate) fn unquiet(&self) -> Option<(f64, u32)> {
        self.pairs
            .iter()
            .filter_map(|p| p.other_work.map(|w| (w, p.busy)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
            .filter(|(w, _)| *w > OTHER_WORK)
    }

    /// The CPUs whose busy time slows `cpu`.
    pub(crate) fn interferers(&self, cpu: u32) -> Vec<u32> {
        self.pairs.iter().filter(|p| p.cpu == cpu && p.interferes).map(|p| p.busy).collect()
    }
}

/// kdelta's state directory: `$XDG_STATE_HOME/kdelta`, else
/// `$HOME/.local/state/kdelta`; `None` without either.
pub(crate) fn state_dir() -> Option<PathBuf> {
    let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    match env("XDG_STATE_HOME").filter(|p| p.is_absolute()) {
        Some(d) => Some(d.join("kdelta")),
        None => env("HOME").map(|h| h.join(".local/state/kdelta")),
    }
}

/// Where the record is kept.
pub(crate) fn path() -> Option<PathBuf> {
    state_dir().map(|d| d.join(FILE))
}

/// The record at `path`, when there is one and it is readable.
pub(crate) fn load(path: &Path) -> Option<Record> {
    serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()
}

/// The record at `path` when it was made on `machine`, on a quiet machine
/// (one measured while other tasks kept the loaded CPU busy said "no CPU
/// slows another" where it could not tell: written before that was refused).
pub(crate) fn load_for(path: &Path, machine: &MachineId) -> Option<Record> {
    load(path).filter(|r| &r.machine == machine && r.unquiet().is_none())
}

/// Write `r` to `path` (its directory made, the file replaced whole,
/// mode 0644).
pub(crate) fn save(path: &Path, r: &Record) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use std::os::unix::fs::PermissionsExt as _;
    let dir = path.parent().context("no directory")?;
    std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
    let tmp = dir.join(format!(".{FILE}.{}", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(r)? + "\n")
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o644))?;
    std::fs::rename(&tmp, path).with_context(|| format!("writing {}", path.display()))?;
    Ok(())
}

/// The CPUs whose busy time disturbs a sample on each CPU of `cpus`: its
/// SMT siblings (sysfs below `root`) and the interferers `record` names,
/// each list without `cpus` themselves (the measured tasks may run there).
pub(crate) fn interfering(root: &Path, cpus: &[u32], record: Option<&Record>) -> Vec<u32> {
    let mut out = CpuSet::new();
    for &c in cpus {
        for s in crate::sys::cpu::smt_siblings(root, c) {
            out.insert(s);
        }
        for s in record.map(|r| r.interferers(c)).unwrap_or_default() {
            out.insert(s);
        }
    }
    out.iter().filter(|c| !cpus.contains(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(pairs: &[(u32, u32, f64)]) -> Record {
        Record {
            pairing: None,
            machine: MachineId {
                host: "vm".into(),
                cpu_model: "Intel(R) Xeon(R) Processor".into(),
                cpus: "0-1".into(),
            },
            measured_at: 1.0,
            limit: LIMIT,
            pairs: pairs
                .iter()
                .map(|&(cpu, busy, s)| Pair {
                    cpu,
                    busy,
                    slowdown: [("shell".to_string(), s), ("multiply".to_string(), 0.0)].into(),
                    pairs: 12,
                    interferes: s > LIMIT,
                    other_work: None,
                })
                .collect(),
        }
    }

    fn fake_root(siblings: &[(u32, &str)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        crate::testing::fake::identity(d.path(), "vm", "Intel(R) Xeon(R) Processor", siblings);
        d
    }

    #[test]
    fn a_record_names_the_interfering_cpus_of_its_machine_only() {
        let root = fake_root(&[(0, "0\n"), (1, "1\n")]);
        let r = record(&[(0, 1, 0.24), (1, 0, 0.01)]);
        assert_eq!(r.interferers(0), vec![1]);
        assert!(r.interferers(1).is_empty());
        let file = root.path().join("state/kdelta").join(FILE);
        save(&file, &r).unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o644);
        let here = MachineId::read(root.path());
        assert_eq!(load_for(&file, &here), Some(r.clone()));
        let elsewhere = MachineId { host: "other".into(), ..here.clone() };
        assert_eq!(load_for(&file, &elsewhere), None, "another machine's record is ignored");
        assert_eq!(load(&root.path().join("none.json")), None);
        // Measured while other tasks used the loaded CPU: its "no
        // interference" could not be told, and it is not trusted.
        let mut unquiet = record(&[(0, 1, 0.01), (1, 0, 0.01)]);
        unquiet.pairs[1].other_work = Some(0.88);
        assert_eq!(unquiet.unquiet(), Some((0.88, 0)));
        save(&file, &unquiet).unwrap();
        assert_eq!(load_for(&file, &here), None, "a record measured on a busy machine is ignored");
        unquiet.pairs[1].other_work = Some(0.04);
        save(&file, &unquiet).unwrap();
        assert_eq!(load_for(&file, &here), Some(unquiet), "a little other work is a quiet machine");
    }

    #[test]
    fn interfering_cpus_are_siblings_and_recorded_ones_not_the_measured() {
        // No SMT, no record: nothing interferes (the judgement is as before).
        let root = fake_root(&[(0, "0\n"), (1, "1\n")]);
        assert!(interfering(root.path(), &[0], None).is_empty());
        // The doctor found CPU 1 slowing CPU 0.
        let r = record(&[(0, 1, 0.24), (1, 0, 0.30)]);
        assert_eq!(interfering(root.path(), &[0], Some(&r)), vec![1]);
        assert_eq!(interfering(root.path(), &[1], Some(&r)), vec![0]);
        // A sample that used both CPUs has none outside them.
        assert!(interfering(root.path(), &[0, 1], Some(&r)).is_empty());
        // SMT siblings count without a record.
        let smt = fake_root(&[(0, "0,2\n"), (1, "1,3\n"), (2, "0,2\n"), (3, "1,3\n")]);
        assert_eq!(interfering(smt.path(), &[0], None), vec![2]);
        assert_eq!(interfering(smt.path(), &[0, 1], None), vec![2, 3]);
        assert!(interfering(smt.path(), &[0, 2], None).is_empty());
    }

    #[test]
    fn the_state_directory_follows_xdg() {
        // Only reads the environment; asserts the shape, not the values.
        if let Some(p) = path() {
            assert!(p.ends_with(Path::new("kdelta").join(FILE)));
        }
    }
}
