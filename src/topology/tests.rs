//! The topology reader on fake sysfs trees built in temporary folders.

use super::fake::FakeSys;
use super::*;

fn set(s: &str) -> CpuSet {
    CpuSet::parse_list(s).unwrap()
}

fn core_sets(t: &Topology) -> Vec<String> {
    t.cores.iter().map(|c| c.cpus.to_string()).collect()
}

/// Invariants every reading must keep.
fn check_consistent(t: &Topology) {
    assert_eq!(t.cpus.len(), t.online.len());
    let mut all = CpuSet::new();
    for (i, c) in t.cores.iter().enumerate() {
        assert!(!c.cpus.is_empty());
        assert!(all.intersection(&c.cpus).is_empty(), "cores overlap");
        all = all.union(&c.cpus);
        for cpu in c.cpus.iter() {
            let cp = t.cpus.iter().find(|x| x.id == cpu).unwrap();
            assert_eq!(cp.core, i);
            assert_eq!(cp.siblings, c.cpus);
            assert_eq!(cp.package, c.package);
        }
    }
    assert_eq!(all, t.online);
    assert!(t.offline.intersection(&t.online).is_empty());
    assert!(t.cores.windows(2).all(|w| w[0].cpus.first() < w[1].cpus.first()));
    assert!(t.cpus.windows(2).all(|w| w[0].id < w[1].id));
    for c in &t.caches {
        assert!(c.shared.is_subset(&t.online));
    }
}

/// The topology of a fake `packages` x `cores` x `threads` machine
/// (`FakeSys::grid`), checked consistent.
fn grid(packages: u32, cores: u32, threads: u32, linux_numbering: bool) -> anyhow::Result<Topology> {
    let f = FakeSys::grid(packages, cores, threads, linux_numbering)?;
    let t = Topology::read(f.root())?;
    check_consistent(&t);
    Ok(t)
}

#[test]
fn one_cpu() -> anyhow::Result<()> {
    let t = grid(1, 1, 1, false)?;
    assert_eq!(t.online, set("0"));
    assert_eq!(core_sets(&t), ["0"]);
    assert_eq!(t.packages, [0]);
    assert!(!t.has_smt());
    assert_eq!(t.smt_control.as_deref(), Some("notsupported"));
    assert_eq!(t.smt_active, Some(false));
    assert_eq!(t.llc_bytes(), Some(16 << 20));
    assert_eq!(t.caches.len(), 4);
    Ok(())
}

#[test]
fn one_cpu_bare() -> anyhow::Result<()> {
    // Only `online` and an empty cpu0: no topology, caches, nodes or smt.
    let f = FakeSys::new("0")?;
    std::fs::create_dir_all(f.root().join("sys/devices/system/cpu/cpu0"))?;
    let (t, notes) = Topology::read_with_notes(f.root())?;
    check_consistent(&t);
    assert_eq!(core_sets(&t), ["0"]);
    assert_eq!(t.packages, [-1]);
    assert_eq!(t.cpus[0].core_id, None);
    assert_eq!(t.smt_control, None);
    assert_eq!(t.smt_active, None);
    assert!(t.caches.is_empty() && t.nodes.is_empty());
    assert_eq!(t.llc_bytes(), None);
    assert!(notes.iter().any(|n| n.contains("no topology directory for CPU 0")), "{notes:?}");
    Ok(())
}

#[test]
fn two_cores_no_smt() -> anyhow::Result<()> {
    let t = grid(1, 2, 1, false)?;
    assert_eq!(core_sets(&t), ["0", "1"]);
    assert_eq!(t.packages, [0]);
    assert!(!t.has_smt());
    assert_eq!(t.smt_cores().count(), 0);
    assert_eq!(t.first_cpu_per_core(), set("0-1"));
    assert_eq!(t.core_of(1).map(|c| c.core_id), Some(Some(1)));
    assert!(t.core_of(2).is_none());
    assert_eq!(t.nodes.len(), 1);
    assert_eq!(t.nodes[0].cpus, set("0-1"));
    assert_eq!(t.nodes[0].mem_bytes, Some(1 << 30));
    Ok(())
}

#[test]
fn two_cores_two_threads_siblings_adjacent() -> anyhow::Result<()> {
    let t = grid(1, 2, 2, false)?;
    assert_eq!(core_sets(&t), ["0-1", "2-3"]);
    assert!(t.has_smt());
    assert_eq!(t.first_cpu_per_core(), set("0,2"));
    assert_eq!(t.smt_cores().count(), 2);
    assert_eq!(t.core_of(3).unwrap().cpus, set("2-3"));
    assert_eq!(t.smt_control.as_deref(), Some("on"));
    assert_eq!(t.smt_active, Some(true));
    // L1d, L1i, L2 per core, one L3.
    assert_eq!(t.caches.iter().filter(|c| c.level == 1).count(), 4);
    assert_eq!(t.caches.iter().filter(|c| c.level == 3).map(|c| c.shared.clone()).collect::<Vec<_>>(), [set("0-3")]);
    Ok(())
}

#[test]
fn a_duet_spreads_over_cores_before_siblings() -> anyhow::Result<()> {
    let t = grid(1, 2, 2, false)?;
    assert_eq!(t.spread(&set("0-3"), 2), [0, 2]);
    assert_eq!(t.spread(&set("0-3"), 3), [0, 2, 1]);
    // Siblings of one core when that is all there is; fewer when fewer.
    assert_eq!(t.spread(&set("2-3"), 2), [2, 3]);
    assert_eq!(t.spread(&set("1"), 2), [1]);
    Ok(())
}

#[test]
fn two_cores_two_threads_siblings_split() -> anyhow::Result<()> {
    let t = grid(1, 2, 2, true)?;
    assert_eq!(core_sets(&t), ["0,2", "1,3"]);
    assert_eq!(t.first_cpu_per_core(), set("0-1"));
    assert_eq!(t.cpus[2].core, 0);
    assert_eq!(t.cpus[2].siblings, set("0,2"));
    Ok(())
}

#[test]
fn two_packages_four_cores_two_threads() -> anyhow::Result<()> {
    // core_id runs 0-3 in both packages: keying on it would merge cores.
    let t = grid(2, 4, 2, true)?;
    assert_eq!(t.packages, [0, 1]);
    assert_eq!(t.cores.len(), 8);
    assert_eq!(core_sets(&t), ["0,8", "1,9", "2,10", "3,11", "4,12", "5,13", "6,14", "7,15"]);
    assert_eq!(t.cores[4].core_id, Some(0));
    assert_eq!(t.cores[4].package, 1);
    assert_eq!(t.package_cpus(1), set("4-7,12-15"));
    assert_eq!(t.first_cpu_per_core(), set("0-7"));
    assert_eq!(t.nodes.iter().map(|n| n.cpus.to_string()).collect::<Vec<_>>(), ["0-3,8-11", "4-7,12-15"]);
    assert_eq!(t.cpus[12].node, Some(1));
    let l3: Vec<_> = t.caches.iter().filter(|c| c.level == 3).collect();
    assert_eq!(l3.len(), 2);
    assert_eq!(t.llc_bytes(), Some(16 << 20));
    Ok(())
}

#[test]
fn offline_cpu_without_topology() -> anyhow::Result<()> {
    // 2 cores x 2 threads, CPU 3 offline: its topology directory is gone and
    // sibling lists still name it, as in the kernel.
    let f = FakeSys::grid(1, 2, 2, false)?;
    f.cpu_file("online", "0-2")?;
    f.cpu_file("offline", "3")?;
    f.cpu_file("cpu3/online", "0")?;
    std::fs::remove_dir_all(f.root().join("sys/devices/system/cpu/cpu3/topology"))?;
    std::fs::remove_dir_all(f.root().join("sys/devices/system/cpu/cpu3/cache"))?;
    let t = Topology::read(f.root())?;
    check_consistent(&t);
    assert_eq!(t.online, set("0-2"));
    assert_eq!(t.offline, set("3"));
    assert_eq!(core_sets(&t), ["0-1", "2"]);
    assert_eq!(t.smt_cores().count(), 1);
    assert_eq!(t.nodes[0].cpus, set("0-2"));
    assert_eq!(t.caches.iter().filter(|c| c.level == 3).map(|c| c.shared.clone()).collect::<Vec<_>>(), [set("0-2")]);
    Ok(())
}

#[test]
fn hybrid_pcores_with_smt_and_ecores_without() -> anyhow::Result<()> {
    // 2 P-cores x 2 threads (0-1, 2-3) and 4 E-cores (4-7) sharing one L2.
    let f = FakeSys::new("0-7")?;
    for (cpu, core_id, sib) in [(0, 0, "0-1"), (1, 0, "0-1"), (2, 4, "2-3"), (3, 4, "2-3")] {
        f.cpu(cpu, 0, core_id, sib, "0-7")?;
        f.cache(cpu, 0, 2, "Unified", "1280K", sib)?;
    }
    for cpu in 4..8 {
        f.cpu(cpu, 0, (cpu + 4) as i64, &cpu.to_string(), "0-7")?;
        f.cache(cpu, 0, 2, "Unified", "2048K", "4-7")?;
    }
    let t = Topology::read(f.root())?;
    check_consistent(&t);
    assert_eq!(core_sets(&t), ["0-1", "2-3", "4", "5", "6", "7"]);
    assert_eq!(t.smt_cores().count(), 2);
    assert_eq!(t.first_cpu_per_core(), set("0,2,4-7"));
    let l2: Vec<_> = t.caches.iter().map(|c| (c.shared.to_string(), c.size_bytes)).collect();
    assert_eq!(
        l2,
        [("0-1".into(), Some(1280 << 10)), ("2-3".into(), Some(1280 << 10)), ("4-7".into(), Some(2048 << 10))]
    );
    assert_eq!(t.llc_bytes(), Some(2048 << 10));
    Ok(())
}

#[test]
fn old_kernel_hex_masks_and_no_online_file() -> anyhow::Result<()> {
    // 2.6-era: no `online`, only masks, cache sharing as a mask.
    let f = FakeSys::empty()?;
    for cpu in 0..4u32 {
        let t = format!("cpu{cpu}/topology");
        f.cpu_file(&format!("{t}/physical_package_id"), "0")?;
        f.cpu_file(&format!("{t}/core_id"), &(cpu % 2).to_string())?;
        f.cpu_file(
            &format!("{t}/thread_siblings"),
            if cpu % 2 == 0 { "00000000,00000005" } else { "00000000,0000000a" },
        )?;
        f.cpu_file(&format!("{t}/core_siblings"), "00000000,0000000f")?;
        f.cpu_file(&format!("cpu{cpu}/cache/index0/level"), "2")?;
        f.cpu_file(&format!("cpu{cpu}/cache/index0/type"), "Unified")?;
        f.cpu_file(&format!("cpu{cpu}/cache/index0/size"), "1024K")?;
        f.cpu_file(&format!("cpu{cpu}/cache/index0/shared_cpu_map"), "00000000,0000000f")?;
    }
    let (t, notes) = Topology::read_with_notes(f.root())?;
    check_consistent(&t);
    assert_eq!(t.online, set("0-3"));
    assert_eq!(core_sets(&t), ["0,2", "1,3"]);
    assert_eq!(t.caches.len(), 1);
    assert_eq!(t.caches[0].shared, set("0-3"));
    assert_eq!(t.llc_bytes(), Some(1 << 20));
    assert!(notes.iter().any(|n| n.contains("no /sys/devices/system/cpu/online")), "{notes:?}");
    Ok(())
}

#[test]
fn online_cpus_without_topology_keep_the_others_package_ids() -> anyhow::Result<()> {
    // Two packages of two CPUs, and CPUs 4-5 online without any topology files.
    let f = FakeSys::new("0-5")?;
    f.cpu(0, 0, 0, "0", "0-1")?;
    f.cpu(1, 0, 1, "1", "0-1")?;
    f.cpu(2, 1, 0, "2", "2-3")?;
    f.cpu(3, 1, 1, "3", "2-3")?;
    std::fs::create_dir_all(f.root().join("sys/devices/system/cpu/cpu4"))?;
    std::fs::create_dir_all(f.root().join("sys/devices/system/cpu/cpu5"))?;
    let t = Topology::read(f.root())?;
    check_consistent(&t);
    assert_eq!(t.packages, [-1, 0, 1]);
    assert_eq!(t.package_cpus(-1), set("4-5"));
    assert_eq!(core_sets(&t), ["0", "1", "2", "3", "4", "5"]);
    Ok(())
}

#[test]
fn cpu_marked_offline_by_its_own_file_when_no_online_list() -> anyhow::Result<()> {
    let f = FakeSys::grid(1, 3, 1, false)?;
    std::fs::remove_file(f.root().join("sys/devices/system/cpu/online"))?;
    std::fs::remove_file(f.root().join("sys/devices/system/cpu/offline"))?;
    f.cpu_file("cpu1/online", "0")?;
    f.cpu_file("cpu2/online", "1")?;
    let t = Topology::read(f.root())?;
    check_consistent(&t);
    assert_eq!(t.online, set("0,2"));
    assert_eq!(t.offline, set("1"));
    Ok(())
}

#[test]
fn package_ids_of_minus_one_are_told_apart_by_sibling_sets() -> anyhow::Result<()> {
    // POWER partitions: physical_package_id is -1 everywhere.
    let f = FakeSys::new("0-7")?;
    for cpu in 0..8u32 {
        let sib = if cpu < 4 { "0-3" } else { "4-7" };
        f.cpu(cpu, -1, (cpu / 4 * 4) as i64, sib, sib)?;
    }
    let (t, notes) = Topology::read_with_notes(f.root())?;
    check_consistent(&t);
    assert_eq!(t.packages, [0, 1]);
    assert_eq!(core_sets(&t), ["0-3", "4-7"]);
    assert!(notes.iter().any(|n| n.contains("physical_package_id")));
    Ok(())
}

#[test]
fn single_package_of_minus_one_stays_minus_one() -> anyhow::Result<()> {
    let f = FakeSys::new("0-1")?;
    f.cpu(0, -1, 0, "0", "0-1")?;
    f.cpu(1, -1, 1, "1", "0-1")?;
    let t = Topology::read(f.root())?;
    assert_eq!(t.packages, [-1]);
    Ok(())
}

#[test]
fn nul_padding_and_sizes_in_megabytes() -> anyhow::Result<()> {
    let f = FakeSys::new("0-1")?;
    f.cpu(0, 0, 0, "0", "0-1")?;
    f.cpu(1, 0, 1, "1", "0-1")?;
    f.cpu_file("cpu0/topology/core_cpus_list", "0\n\0")?;
    f.cache(0, 0, 3, "Unified", "32M", "0-1\0")?;
    let t = Topology::read(f.root())?;
    assert_eq!(core_sets(&t), ["0", "1"]);
    assert_eq!(t.caches[0].size_bytes, Some(32 << 20));
    assert_eq!(t.caches[0].shared, set("0-1"));
    Ok(())
}

#[test]
fn missing_cpu_dir_is_an_error_naming_the_path() {
    let f = FakeSys::empty().unwrap();
    let e = Topology::read(f.root()).unwrap_err().to_string();
    assert!(e.contains("sys/devices/system/cpu"), "{e}");
    let e = Topology::read(Path::new("/nonexistent/kdelta-root")).unwrap_err().to_string();
    assert!(e.contains("/nonexistent/kdelta-root/sys/devices/system/cpu"), "{e}");
}

#[test]
fn malformed_online_is_an_error_naming_the_path() {
    let f = FakeSys::new("0-x").unwrap();
    let e = format!("{:#}", Topology::read(f.root()).unwrap_err());
    assert!(e.contains("sys/devices/system/cpu/online") && e.contains("0-x"), "{e}");
}

#[test]
fn unreadable_online_is_an_error() {
    // A directory where the file should be: reading it fails on every user, root included.
    let f = FakeSys::empty().unwrap();
    std::fs::create_dir_all(f.root().join("sys/devices/system/cpu/online")).unwrap();
    let e = format!("{:#}", Topology::read(f.root()).unwrap_err());
    assert!(e.contains("sys/devices/system/cpu/online"), "{e}");
}

#[test]
fn inconsistent_sibling_lists_still_partition() -> anyhow::Result<()> {
    // CPU 0 claims 1 as sibling, CPU 1 claims 1-2; the reading stays a partition.
    let f = FakeSys::new("0-2")?;
    f.cpu(0, 0, 0, "0-1", "0-2")?;
    f.cpu(1, 0, 0, "1-2", "0-2")?;
    f.cpu(2, 0, 1, "2", "0-2")?;
    let t = Topology::read(f.root())?;
    check_consistent(&t);
    assert_eq!(core_sets(&t), ["0-1", "2"]);
    Ok(())
}

#[test]
fn serde_roundtrip() -> anyhow::Result<()> {
    let t = grid(2, 2, 2, false)?;
    let back: Topology = serde_json::from_str(&serde_json::to_string(&t)?)?;
    assert_eq!(back, t);
    Ok(())
}

mod fuzz {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Whatever the files hold, reading never panics, and when it
        /// succeeds the result keeps the invariants.
        #[test]
        fn garbage_files_never_panic(
            online in prop_oneof![Just("0-3".to_string()), "[0-9,\\-]{0,8}"],
            sib in proptest::collection::vec("[0-9a-f,\\-\\x00\\n]{0,10}", 4),
            pkg in proptest::collection::vec("-?[0-9]{0,3}|x", 4),
            core in proptest::collection::vec("-?[0-9]{0,3}|", 4),
            size in "[0-9]{0,6}[KMGQ]?",
            shared in "[0-9,\\-]{0,6}",
        ) {
            let f = FakeSys::new(&online).unwrap();
            for cpu in 0..4u32 {
                let i = cpu as usize;
                f.cpu_file(&format!("cpu{cpu}/topology/core_cpus_list"), &sib[i]).unwrap();
                f.cpu_file(&format!("cpu{cpu}/topology/thread_siblings"), &sib[(i + 1) % 4]).unwrap();
                f.cpu_file(&format!("cpu{cpu}/topology/core_siblings_list"), &sib[(i + 2) % 4]).unwrap();
                f.cpu_file(&format!("cpu{cpu}/topology/physical_package_id"), &pkg[i]).unwrap();
                f.cpu_file(&format!("cpu{cpu}/topology/core_id"), &core[i]).unwrap();
                f.cache(cpu, 0, 2, "Unified", &size, &shared).unwrap();
            }
            if let Ok(t) = Topology::read(f.root()) {
                check_consistent(&t);
                let _ = t.llc_bytes();
                let _ = t.first_cpu_per_core();
                if let Ok(h) = crate::topology::Host::read(f.root()) {
                    let _ = crate::topology::show::render(&h);
                }
            }
        }
    }
}
