//! The topology reader on real sysfs captures (from hwloc's test suite),
//! checked against hwloc's own reading of each (`lstopo -v` in `NAME.console`).
//!
//! The captures live in `../shared/topologies` beside the crate (or beside
//! one of its ancestors, for a git worktree nested deeper; or in the folder
//! `KDELTA_TOPOLOGIES` names); the tests skip with a message when that folder
//! (or `tar` with bzip2) is absent.

use super::{Host, Topology};
use crate::cpuset::CpuSet;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn captures_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("KDELTA_TOPOLOGIES") {
        return PathBuf::from(d);
    }
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    crate_dir
        .ancestors()
        .skip(1)
        .map(|a| a.join("shared/topologies"))
        .find(|d| d.is_dir())
        .unwrap_or_else(|| crate_dir.join("../shared/topologies"))
}

/// Extract `NAME.tar.bz2` into a new temporary folder; returns the folder and
/// the capture root inside it (the one top-level directory). None (with a
/// message) when the capture or tar is unavailable.
fn extract(name: &str) -> Option<(tempfile::TempDir, PathBuf)> {
    let tarball = captures_dir().join(format!("{name}.tar.bz2"));
    if !tarball.is_file() {
        eprintln!("skipped: {} not found (captures only exist in the shared work folder)", tarball.display());
        return None;
    }
    // Thousands of small files: a tmpfs is many times faster than a loaded disk.
    let shm = Path::new("/dev/shm");
    let builder = || {
        let mut b = tempfile::Builder::new();
        b.prefix("kdelta-capture");
        b
    };
    let tmp = match shm.is_dir().then(|| builder().tempdir_in(shm)) {
        Some(Ok(t)) => t,
        _ => builder().tempdir().ok()?,
    };
    let out = Command::new("tar")
        .arg("xjf")
        .arg(&tarball)
        .arg("-C")
        .arg(tmp.path())
        .arg("--exclude=*/proc/device-tree")
        .output();
    match out {
        Ok(o) if o.status.success() => {}
        Ok(o) => {
            eprintln!("skipped: tar xjf {} failed: {}", tarball.display(), String::from_utf8_lossy(&o.stderr).trim());
            return None;
        }
        Err(e) => {
            eprintln!("skipped: cannot run tar: {e}");
            return None;
        }
    }
    // The top folder is not always NAME (some captures were renamed).
    let dirs: Vec<PathBuf> =
        std::fs::read_dir(tmp.path()).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    if dirs.len() != 1 {
        eprintln!("skipped: {} holds {} top folders, expected 1", tarball.display(), dirs.len());
        return None;
    }
    let root = dirs[0].clone();
    Some((tmp, root))
}

/// One object of an lstopo listing with the PUs (OS numbers) below it.
#[derive(Debug)]
struct Obj {
    kind: String,
    attrs: String,
    pus: CpuSet,
}

/// Parse the tree part of `lstopo -v` output: every `Type L#n (...)` line with
/// the OS numbers of the PUs nested below it (or of itself, for a PU).
fn parse_console(text: &str) -> Vec<Obj> {
    let mut objs: Vec<Obj> = Vec::new();
    let mut stack: Vec<(usize, usize)> = Vec::new(); // (indent, index in objs)
    for line in text.lines() {
        let indent = line.len() - line.trim_start().len();
        let body = line.trim_start();
        let Some((kind, rest)) = body.split_once(" L#") else {
            continue;
        };
        if kind.contains(' ') {
            continue;
        }
        let attrs = rest.split_once(' ').map(|(_, a)| a.to_string()).unwrap_or_default();
        while stack.last().is_some_and(|&(ind, _)| ind >= indent) {
            stack.pop();
        }
        let mut pus = CpuSet::new();
        if kind == "PU" {
            let p = attrs
                .split("P#")
                .nth(1)
                .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|s| s.parse().ok());
            let p: u32 = p.unwrap_or_else(|| panic!("PU without P#: {line}"));
            pus.insert(p);
            for &(_, i) in &stack {
                objs[i].pus.insert(p);
            }
        }
        objs.push(Obj { kind: kind.to_string(), attrs, pus });
        stack.push((indent, objs.len() - 1));
    }
    objs
}

/// `size=48KiB` in an lstopo attribute list, in bytes.
fn console_size(attrs: &str) -> Option<u64> {
    let s = attrs.split_whitespace().find_map(|w| w.trim_start_matches('(').strip_prefix("size="))?;
    let s = s.trim_end_matches(')');
    let digits = s.bytes().take_while(|b| b.is_ascii_digit()).count();
    let n: u64 = s[..digits].parse().ok()?;
    match &s[digits..] {
        "B" => Some(n),
        "KiB" | "KB" => Some(n << 10),
        "MiB" | "MB" => Some(n << 20),
        "GiB" | "GB" => Some(n << 30),
        _ => None,
    }
}

/// `L2dCache` -> (2, "Data"); `L3Cache` -> (3, "Unified").
fn console_cache(kind: &str) -> Option<(u32, &'static str)> {
    let rest = kind.strip_prefix('L')?.strip_suffix("Cache")?;
    let digits = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
    let level = rest[..digits].parse().ok()?;
    let t = match &rest[digits..] {
        "" | "u" => "Unified",
        "d" => "Data",
        "i" => "Instruction",
        _ => return None,
    };
    Some((level, t))
}

/// Compare kdelta's reading of capture `name` with lstopo's and with the
/// README's counts; panics listing every difference.
fn check(name: &str, packages: usize, cores: usize, cpus: usize) {
    check_capture(name, name, name, packages, cores, cpus)
}

/// The lstopo listing `NAME.console` in the captures folder, None (with a
/// message) when it is absent.
fn console_objs(name: &str) -> Option<Vec<Obj>> {
    let path = captures_dir().join(format!("{name}.console"));
    match std::fs::read_to_string(&path) {
        Ok(text) => Some(parse_console(&text)),
        Err(e) => {
            eprintln!("skipped: {}: {e}", path.display());
            None
        }
    }
}

/// Compare kdelta's reading of capture `name` with lstopo's listing of every
/// online CPU (`console`, `lstopo -v --disallowed` where the capture's process
/// may not use them all) and its reading of the CPUs the process may use
/// (`usable_console`, plain `lstopo -v`: hwloc applies the capture's cpuset).
fn check_capture(name: &str, console: &str, usable_console: &str, packages: usize, cores: usize, cpus: usize) {
    let (Some(objs), Some(usable_objs)) = (console_objs(console), console_objs(usable_console)) else {
        return;
    };
    let Some((_tmp, root)) = extract(name) else {
        return;
    };
    let t = Topology::read(&root).unwrap_or_else(|e| panic!("{name}: {e:#}"));
    let mut bad = Vec::new();

    // The README's table.
    if t.packages.len() != packages {
        bad.push(format!("packages: read {} ({:?}), expected {packages}", t.packages.len(), t.packages));
    }
    if t.cores.len() != cores {
        bad.push(format!("cores: read {}, expected {cores}", t.cores.len()));
    }
    if t.cpus.len() != cpus || t.online.len() != cpus {
        bad.push(format!("logical CPUs: read {} (online {}), expected {cpus}", t.cpus.len(), t.online));
    }

    // lstopo's packages, cores and PUs.
    let of = |k: &str| objs.iter().filter(|o| o.kind == k).collect::<Vec<_>>();
    let pus = of("PU").iter().fold(CpuSet::new(), |a, o| a.union(&o.pus));
    if pus != t.online {
        bad.push(format!("online: read {}, lstopo has PUs {pus}", t.online));
    }
    let mut want_pkgs: Vec<CpuSet> = of("Package").iter().map(|o| o.pus.clone()).collect();
    want_pkgs.sort();
    let mut got_pkgs: Vec<CpuSet> = t.packages.iter().map(|&p| t.package_cpus(p)).collect();
    got_pkgs.sort();
    if want_pkgs.len() != packages {
        bad.push(format!("the console has {} packages, the README {packages}", want_pkgs.len()));
    }
    if got_pkgs != want_pkgs {
        bad.push(format!("package CPU sets: read {got_pkgs:?}, lstopo {want_pkgs:?}"));
    }
    let mut want_cores: Vec<CpuSet> = of("Core").iter().map(|o| o.pus.clone()).collect();
    want_cores.sort();
    let mut got_cores: Vec<CpuSet> = t.cores.iter().map(|c| c.cpus.clone()).collect();
    got_cores.sort();
    if got_cores != want_cores {
        let missing: Vec<_> = want_cores.iter().filter(|c| !got_cores.contains(c)).collect();
        let extra: Vec<_> = got_cores.iter().filter(|c| !want_cores.contains(c)).collect();
        bad.push(format!("core CPU sets differ: lstopo only {missing:?}, kdelta only {extra:?}"));
    }

    // The CPUs the capture's process may use (affinity, every cpuset layout),
    // and their cores, as hwloc restricts them.
    let usable = t.usable();
    let usable_pus = usable_objs.iter().filter(|o| o.kind == "PU").fold(CpuSet::new(), |a, o| a.union(&o.pus));
    if usable.online != usable_pus {
        bad.push(format!(
            "usable: read {} (restriction {:?}), lstopo allows PUs {usable_pus}",
            usable.online, t.restriction
        ));
    }
    let mut want_usable_cores: Vec<CpuSet> =
        usable_objs.iter().filter(|o| o.kind == "Core").map(|o| o.pus.clone()).collect();
    want_usable_cores.sort();
    let mut got_usable_cores: Vec<CpuSet> = usable.cores.iter().map(|c| c.cpus.clone()).collect();
    got_usable_cores.sort();
    if got_usable_cores != want_usable_cores {
        bad.push(format!("usable cores: read {got_usable_cores:?}, lstopo {want_usable_cores:?}"));
    }

    // Caches: level, type, size and sharing set of every instance.
    let mut want_caches: BTreeMap<(u32, String, Option<u64>, CpuSet), usize> = BTreeMap::new();
    for o in &objs {
        if let Some((level, kind)) = console_cache(&o.kind) {
            *want_caches.entry((level, kind.to_string(), console_size(&o.attrs), o.pus.clone())).or_default() += 1;
        }
    }
    let mut got_caches: BTreeMap<(u32, String, Option<u64>, CpuSet), usize> = BTreeMap::new();
    for c in &t.caches {
        *got_caches.entry((c.level, c.kind.clone(), c.size_bytes, c.shared.clone())).or_default() += 1;
    }
    if got_caches != want_caches {
        let missing: Vec<_> = want_caches.keys().filter(|k| !got_caches.contains_key(*k)).take(6).collect();
        let extra: Vec<_> = got_caches.keys().filter(|k| !want_caches.contains_key(*k)).take(6).collect();
        bad.push(format!("caches differ: lstopo only {missing:?}, kdelta only {extra:?}"));
    }

    // The whole snapshot reads and renders.
    let host = Host::read(&root).unwrap_or_else(|e| panic!("{name}: host: {e:#}"));
    assert!(!host.cpu_model.is_empty());
    let text = super::show::render(&host);
    let summary = format!("{} logical CPU", cpus);
    if !text.contains(&summary) {
        bad.push(format!("render lacks {summary:?}:\n{text}"));
    }
    assert!(bad.is_empty(), "{name}:\n  {}", bad.join("\n  "));
}

macro_rules! capture_tests {
    ($($test:ident: $name:literal => $pk:literal, $co:literal, $cpu:literal;)*) => {
        $(
            #[test]
            fn $test() {
                check($name, $pk, $co, $cpu);
            }
        )*
    };
}

// The README's table: packages, cores, logical CPUs.
capture_tests! {
    arm_128_clusters: "128arm-2pa2n8cluster4co" => 2, 128, 128;
    amd64_16_8nodes: "16amd64-8n2c" => 8, 16, 16;
    em64t_16_hex_masks_only: "16em64t-4s2c2t" => 4, 8, 16;
    em64t_20_hybrid: "20em64t-hybrid-1p6c2t+2ca4co1t" => 1, 14, 20;
    ppc_256_four_threads: "256ppc-8n8s4t" => 64, 64, 256;
    arm_2_no_caches: "2arm-2c" => 1, 2, 2;
    intel64_32_siblings_split: "32intel64-2p8co2t+8ve" => 2, 16, 32;
    amd64_48_sparse_nodes: "48amd64-4pa2n6c-sparse" => 4, 48, 48;
    amd64_64_repeating_core_ids: "64amd64-4s2n4ca2co" => 4, 64, 64;
    em64t_8_asymmetric_caches: "8em64t-2s4c-asymcaches" => 2, 8, 8;
    ia64_8: "8ia64-2s2c2t" => 2, 4, 8;
    offline_cpu0: "offline-cpu0-node0" => 2, 17, 17;
}

/// hwloc's capture of a 16-CPU Opteron with the legacy cpuset filesystem:
/// mounted at `/dev/cpuset`, the process in the child cpuset `/dummy` whose
/// `cpus` file (the old name) allows 0-6,12-15, 11 of its 16 CPUs, CPU 4 of
/// them offline. lstopo `--disallowed` lists the 15 online CPUs, plain
/// lstopo the 10 the process may use. Not in the shared folder: it is taken
/// from `KDELTA_TOPOLOGIES` when that folder holds it
/// (`tests/hwloc/linux/16amd64-8n2c-cpusets*` of hwloc), else skipped.
#[test]
fn amd64_16_legacy_cpuset_filesystem() {
    check_capture("16amd64-8n2c-cpusets", "16amd64-8n2c-cpusets-disallowed", "16amd64-8n2c-cpusets", 8, 15, 15);
    if let Some((_tmp, root)) = extract("16amd64-8n2c-cpusets") {
        let t = Topology::read(&root).unwrap();
        let r = t.restriction.expect("the cpuset restricts the usable CPUs");
        assert_eq!(r.cpus.to_string(), "0-3,5-6,12-15");
        assert_eq!(r.source, "legacy cpuset filesystem 0-6,12-15 (dev/cpuset/dummy/cpus)");
    }
}

#[test]
fn console_parser() {
    let text = "Machine (P#0)\n  Package L#0 (P#0)\n    L2Cache L#0 (size=1024KiB)\n      Core L#0 (P#0)\n        PU L#0 (P#0)\n        PU L#1 (P#4)\n  Package L#1 (P#1)\n    Core L#1 (P#0)\n      PU L#2 (P#1)\ndepth 0: 1 Machine\n";
    let objs = parse_console(text);
    let kinds: Vec<_> = objs.iter().map(|o| (o.kind.as_str(), o.pus.to_string())).collect();
    assert_eq!(
        kinds,
        [
            ("Package", "0,4".into()),
            ("L2Cache", "0,4".into()),
            ("Core", "0,4".into()),
            ("PU", "0".into()),
            ("PU", "4".into()),
            ("Package", "1".into()),
            ("Core", "1".into()),
            ("PU", "1".into())
        ]
    );
    assert_eq!(console_size(&objs[1].attrs), Some(1 << 20));
    assert_eq!(console_cache("L1dCache"), Some((1, "Data")));
    assert_eq!(console_cache("L3Cache"), Some((3, "Unified")));
}

/// `cargo test --lib topology::captures::print_renders -- --ignored --nocapture`
/// prints `kdelta topo` for this machine and every capture, to eyeball.
#[test]
#[ignore]
fn print_renders() {
    let host = Host::read(Path::new("/")).expect("live host");
    println!("==== this machine\n{}", super::show::render(&host));
    let mut names: Vec<String> = std::fs::read_dir(captures_dir())
        .map(|d| {
            d.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".tar.bz2").map(str::to_string)).collect()
        })
        .unwrap_or_default();
    names.sort();
    for name in names {
        if let Some((_tmp, root)) = extract(&name) {
            let host = Host::read(&root).expect("capture reads");
            println!("==== {name}\n{}", super::show::render(&host));
        }
    }
}
