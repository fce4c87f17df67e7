//! tuning-2001: "Kernel tuning gives 40% gains" (2001): the memory and string
//! routines (naive byte loops, the C library's and kdelta's tuned ones, per
//! cache regime)
//! and builds at several -j levels, with the C library's own tuning knobs
//! (`+tunables=`, GLIBC_TUNABLES) as the axis a user can change: the
//! routines glibc picks for this CPU against those it picks with the newer
//! features masked (the "original routines").

use super::{single, Def, Parts, RoleUse, StudyName, Variant};
use crate::topology::Topology;

/// The C library's routines chosen without the newer x86 features.
pub(super) const UNTUNED: &str =
    "all+tunables=glibc.cpu.hwcaps=-AVX2,-AVX2_Usable,-AVX512F,-AVX512F_Usable,-ERMS,-FSRM,-AVX_Fast_Unaligned_Load";

pub(super) const DEF: Def = Def {
    name: StudyName::Tuning2001,
    id: "tuning-2001",
    what: "Kernel tuning gives 40% (2001): mem.memcpy/memset/clear_page/strlen naive, libc and tuned per cache regime, build.make at -j1, -j2, -j4 with glibc's routines for this CPU against those with the newer features masked",
    needs: "all, and all+tunables=glibc.cpu.hwcaps=-AVX2,... (GLIBC_TUNABLES)",
    published: super::published::TUNING_2001,
    roles,
    request,
};

fn roles(topo: &Topology, _variant: Variant, _host: &serde_json::Value, _root: &std::path::Path) -> Vec<RoleUse> {
    vec![single("default", "all", topo), single("untuned", UNTUNED, topo)]
}

/// Samples of each routine point under `--quick`: with the family's quick
/// count (2-3) the rank test cannot call even a 20x difference, so 5.
const MEM_QUICK_SAMPLES: usize = 5;

/// The routines; then the builds, a mean of 5 as the study had (2 under `--quick`).
fn request(quick: bool) -> Vec<Parts> {
    let routines = Parts::new(
        &["mem.memcpy", "mem.memset", "mem.clear_page", "mem.strlen"],
        &[("mem.*:impl", "naive,libc,tuned"), ("mem.*:cache", "warm"), ("mem.*:size", "16K,512K,8M,64M")],
    );
    vec![
        if quick { routines.samples(MEM_QUICK_SAMPLES) } else { routines },
        Parts::new(&["build.make"], &[("build.make:jobs", "1,2,4")]).samples(if quick { 2 } else { 5 }),
    ]
}
