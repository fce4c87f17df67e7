//! Fake sysfs trees in a temporary directory, for tests of the topology
//! reader and of everything derived from a topology (configurations).
//!
//! ```no_run
//! use kdelta::topology::{fake::FakeSys, Topology};
//! let t = FakeSys::grid(2, 4, 2, true).unwrap(); // 2 packages x 4 cores x 2 threads, siblings (n, n+8)
//! let topo = Topology::read(t.root()).unwrap();
//! assert_eq!(topo.cores.len(), 8);
//! ```

use std::fs;
use std::io;
use std::path::Path;

/// A root folder holding `sys/devices/system/{cpu,node}`; removed on drop.
pub(crate) struct FakeSys {
    dir: tempfile::TempDir,
}

impl FakeSys {
    /// An empty root (not even a `cpu` directory).
    /// Made on `/dev/shm` when there is one (a tree has hundreds of small
    /// files; a tmpfs writes them many times faster than a busy disk).
    pub(crate) fn empty() -> io::Result<FakeSys> {
        let mut b = tempfile::Builder::new();
        b.prefix("kdelta-fakesys");
        let shm = Path::new("/dev/shm");
        let dir = match shm.is_dir().then(|| b.tempdir_in(shm)) {
            Some(Ok(d)) => d,
            _ => b.tempdir()?,
        };
        Ok(FakeSys { dir })
    }

    /// A root with `sys/devices/system/cpu/online` set to `online`.
    pub(crate) fn new(online: &str) -> io::Result<FakeSys> {
        let f = FakeSys::empty()?;
        f.write("sys/devices/system/cpu/online", online)?;
        Ok(f)
    }

    pub(crate) fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Write `content` (a newline is appended) to `rel` below the root,
    /// creating folders on the way.
    pub(crate) fn write(&self, rel: &str, content: &str) -> io::Result<&Self> {
        let p = self.root().join(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent)?;
        }
        fs::write(&p, format!("{content}\n"))?;
        Ok(self)
    }

    /// Write a file under `sys/devices/system/cpu/`.
    pub(crate) fn cpu_file(&self, rel: &str, content: &str) -> io::Result<&Self> {
        self.write(&format!("sys/devices/system/cpu/{rel}"), content)
    }

    /// CPU `id`'s topology files as a current kernel writes them.
    pub(crate) fn cpu(
        &self,
        id: u32,
        package: i64,
        core_id: i64,
        siblings: &str,
        package_cpus: &str,
    ) -> io::Result<&Self> {
        let t = format!("cpu{id}/topology");
        self.cpu_file(&format!("{t}/physical_package_id"), &package.to_string())?;
        self.cpu_file(&format!("{t}/core_id"), &core_id.to_string())?;
        self.cpu_file(&format!("{t}/die_id"), "0")?;
        self.cpu_file(&format!("{t}/core_cpus_list"), siblings)?;
        self.cpu_file(&format!("{t}/thread_siblings_list"), siblings)?;
        self.cpu_file(&format!("{t}/package_cpus_list"), package_cpus)?;
        self.cpu_file(&format!("{t}/core_siblings_list"), package_cpus)
    }

    /// One cache description of CPU `cpu` (`cpuN/cache/indexI`).
    pub(crate) fn cache(
        &self,
        cpu: u32,
        index: u32,
        level: u32,
        kind: &str,
        size: &str,
        shared: &str,
    ) -> io::Result<&Self> {
        let c = format!("cpu{cpu}/cache/index{index}");
        self.cpu_file(&format!("{c}/level"), &level.to_string())?;
        self.cpu_file(&format!("{c}/type"), kind)?;
        self.cpu_file(&format!("{c}/size"), size)?;
        self.cpu_file(&format!("{c}/shared_cpu_list"), shared)
    }

    /// NUMA node `id` with its CPU list and memory in kB.
    pub(crate) fn node(&self, id: u32, cpulist: &str, mem_kb: u64) -> io::Result<&Self> {
        let n = format!("sys/devices/system/node/node{id}");
        self.write(&format!("{n}/cpulist"), cpulist)?;
        self.write(
            &format!("{n}/meminfo"),
            &format!("Node {id} MemTotal:       {mem_kb} kB\nNode {id} MemFree:        1 kB"),
        )
    }

    /// SMT control files.
    pub(crate) fn smt(&self, control: &str, active: bool) -> io::Result<&Self> {
        self.cpu_file("smt/control", control)?;
        self.cpu_file("smt/active", if active { "1" } else { "0" })
    }

    /// A regular machine: `packages` x `cores` x `threads`, all online, one NUMA
    /// node per package (1 GiB each), 32K L1d/L1i and 1M L2 per core, a 16M L3
    /// per package. With `linux_numbering` the threads of a core are numbered
    /// as x86 Linux does (core k has CPUs k, k+C, k+2C.. with C the number of
    /// cores); otherwise consecutively (core k has CPUs kT..kT+T-1). `core_id`
    /// restarts at 0 in every package, as on real machines.
    pub(crate) fn grid(packages: u32, cores: u32, threads: u32, linux_numbering: bool) -> io::Result<FakeSys> {
        let ncores = packages * cores;
        let ncpus = ncores * threads;
        let f = FakeSys::new(&format!("0-{}", ncpus.saturating_sub(1)))?;
        f.cpu_file("present", &format!("0-{}", ncpus.saturating_sub(1)))?;
        f.cpu_file("offline", "")?;
        let cpus_of_core = |k: u32| -> Vec<u32> {
            (0..threads).map(|t| if linux_numbering { k + t * ncores } else { k * threads + t }).collect()
        };
        let list = |v: &[u32]| v.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
        for p in 0..packages {
            let pkg: Vec<u32> = (p * cores..(p + 1) * cores).flat_map(cpus_of_core).collect();
            let mut sorted = pkg.clone();
            sorted.sort();
            let pkg_list = list(&sorted);
            f.node(p, &pkg_list, 1 << 20)?;
            for k in p * cores..(p + 1) * cores {
                let sib = cpus_of_core(k);
                let sib_list = list(&sib);
                for &c in &sib {
                    f.cpu(c, p as i64, (k - p * cores) as i64, &sib_list, &pkg_list)?;
                    f.cache(c, 0, 1, "Data", "32K", &sib_list)?;
                    f.cache(c, 1, 1, "Instruction", "32K", &sib_list)?;
                    f.cache(c, 2, 2, "Unified", "1024K", &sib_list)?;
                    f.cache(c, 3, 3, "Unified", "16384K", &pkg_list)?;
                }
            }
        }
        if threads > 1 {
            f.smt("on", true)?;
        } else {
            f.smt("notsupported", false)?;
        }
        Ok(f)
    }
}
