//! ht-2003: "Hyper-Threading speeds Linux" (IBM developerWorks, 2003):
//! LMbench latencies (Table 1), AIM9 (Table 2), chat (Table 4), dbench
//! (Table 5) and tbench (Table 6), SMT off against on.

use super::{pair, Def, Parts, RoleUse, StudyName, Variant};
use crate::topology::Topology;

pub(super) const DEF: Def = Def {
    name: StudyName::Ht2003,
    id: "ht-2003",
    what: "Hyper-Threading speeds Linux (2003): 14 LMbench latencies, AIM9 (59 tests + new_raph), chat at 20-50 rooms, dbench and tbench at 20-120 clients, SMT off against on",
    needs: "noht1 against ht1 (one core, one or both siblings; --variant whole: noht against ht)",
    published: super::published::HT_2003,
    roles,
    request,
};

/// The LMbench latencies of Table 1, in the table's order.
pub(super) const LAT: [&str; 14] = [
    "lat.syscall",
    "lat.read",
    "lat.write",
    "lat.stat",
    "lat.fstat",
    "lat.open",
    "lat.select.file",
    "lat.select.tcp",
    "lat.sig.install",
    "lat.sig.catch",
    "lat.pipe",
    "lat.proc.fork",
    "lat.proc.exec",
    "lat.proc.shell",
];

fn roles(topo: &Topology, variant: Variant, _host: &serde_json::Value, _root: &std::path::Path) -> Vec<RoleUse> {
    let wanted = match variant {
        Variant::Faithful => ["noht1", "ht1"],
        Variant::Whole => ["noht", "ht"],
    };
    pair(
        ["A", "B"],
        wanted,
        ["up", "smp2"],
        "which answers what a second CPU does rather than what a second thread on the same core does",
        topo,
    )
}

/// Samples of each AIM9 point under `--quick`, and their period: the rank
/// test of two sides needs 4 samples a side before any difference can be
/// significant (at 2 or 3 it never is: p >= 0.08 even when every sample of
/// one side beats every sample of the other), so `--quick` takes 4 rather
/// than AIM9's own 2, of AIM9's quick period (at 100 ms one call of several
/// tests outlasted the period on a loaded 2-CPU VM, up to 280 ms).
pub(super) const AIM9_QUICK_SAMPLES: usize = 4;
pub(super) const AIM9_QUICK_PERIOD: &str = "200ms";
/// The latencies' samples under `--quick` (theirs: 3), for the same reason;
/// a sample is 10 ms, so 5 cost little.
pub(super) const LAT_QUICK_SAMPLES: usize = 5;

fn request(quick: bool) -> Vec<Parts> {
    let (rooms, clients) = if quick { ("20", "20,60") } else { ("20,30,40,50", "20,30,60,90,120") };
    let aim9 = if quick {
        Parts::new(&["aim9"], &[("aim9.*:period", AIM9_QUICK_PERIOD)]).samples(AIM9_QUICK_SAMPLES)
    } else {
        Parts::new(&["aim9"], &[])
    };
    vec![
        if quick {
            Parts::new(&LAT, &[("lat.select.*:fds", "10")]).samples(LAT_QUICK_SAMPLES)
        } else {
            Parts::new(&LAT, &[("lat.select.*:fds", "10")])
        },
        aim9,
        Parts::new(
            &["chat.rooms", "dbench.throughput", "tbench.throughput"],
            &[
                ("chat.rooms:rooms", rooms),
                ("chat.rooms:users", "20"),
                ("chat.rooms:messages", "100"),
                ("dbench.throughput:clients", clients),
                ("tbench.throughput:clients", clients),
            ],
        ),
    ]
}
