//! The doctor's checks, one function per setting, each reading below the
//! root and returning its [`Finding`]s.

use super::{Finding, Verdict};
use crate::config::knobs as ck;
use crate::cpuset::CpuSet;
use crate::model::knob::Knob;
use crate::sys::knobs as k;
use crate::sys::machine as m;
use crate::topology::Topology;
use std::path::Path;
use std::time::Duration;

/// An idle state whose exit latency is above this (µs) is recommended off
/// for latency work on the measured CPUs.
const DEEP_IDLE_US: u64 = 10;
/// Steal above this share of the machine's time is worth acting on (%).
const STEAL_PCT: f64 = 1.0;
/// A process using more than this share of one CPU is named as busy (%).
const BUSY_PCT: f64 = 2.0;

pub(super) fn all(root: &Path, measured: &CpuSet, window: Duration) -> Vec<Finding> {
    // The sampled checks first: one window for both.
    let stat0 = m::stat_total(root);
    let procs0 = m::process_ticks(root);
    std::thread::sleep(window);
    let stat1 = m::stat_total(root);
    let procs1 = m::process_ticks(root);
    let mut v = vec![vm(root)];
    v.extend(cpufreq(root));
    v.push(smt(root));
    v.push(aslr(root));
    v.extend(thp(root));
    v.push(swap(root));
    v.push(irqs(root, measured));
    v.push(isolation(root, measured));
    v.push(perf_rate(root));
    v.push(cpuidle(root, measured));
    v.push(steal(stat0, stat1, window));
    v.push(busiest(&procs0, &procs1, window));
    v
}

fn read(root: &Path, rel: &str) -> Option<String> {
    k::read_text(&root.join(rel)).ok()
}

fn vm(root: &Path) -> Finding {
    let mut signs = m::hypervisor_signs(root);
    if m::cpuidle_driver(root).0.as_deref() == Some("haltpoll") {
        signs.push("the haltpoll cpuidle driver (KVM guests only)".into());
    }
    let why = "a virtual CPU shares a physical one with the host and other guests: the host's scheduling, its frequency and its turbo move timings, out of this kernel's sight";
    if signs.is_empty() {
        Finding::new("virtual machine", "no sign of a hypervisor", Verdict::Ok)
            .why(why)
            .recommend("nothing: bare metal is the steadiest place to measure")
    } else {
        Finding::new("virtual machine", format!("yes: {}", signs.join("; ")), Verdict::Note).why(why).recommend(
            "compare interleaved configurations and runs as ratios (kdelta does), watch steal time, and on a host you control pin the vCPUs to dedicated physical CPUs",
        )
    }
}

fn cpufreq(root: &Path) -> Vec<Finding> {
    let policies = k::cpufreq_policies(root);
    if policies.iter().all(|p| !p.join("scaling_governor").exists()) {
        return vec![Finding::new(
            "cpufreq driver",
            format!("none: {} has no policy with a scaling_governor", root.join(k::CPUFREQ).display()),
            Verdict::Note,
        )
        .why("without a cpufreq driver no governor or boost can be set: the clock is the firmware's or, in a VM, the host's to choose, and it may change with load and temperature unseen")
        .recommend("on a VM nothing to do here (ask the host for a fixed frequency); on bare metal load the driver (intel_pstate, amd-pstate, acpi-cpufreq) so governor and boost can be pinned")];
    }
    let driver =
        read(root, &format!("{}/scaling_driver", policies[0].strip_prefix(root).unwrap_or(&policies[0]).display()))
            .unwrap_or_else(|| "unknown".into());
    let mut v = Vec::new();
    let gov = ck::read_back(&Knob::Governor, root).unwrap_or_else(|| "unreadable".into());
    let g = Finding::new("cpufreq governor", format!("{gov} (driver {driver}, {} policies)", policies.len()), Verdict::Ok)
        .why("a governor other than performance lowers the clock when CPUs idle, so short or bursty benchmarks run at a clock that depends on what ran before");
    v.push(if gov == "performance" {
        g.recommend("performance, as it is")
    } else {
        Finding { verdict: Verdict::Change, ..g }.recommend("performance").applies("governor", "performance")
    });
    match ck::read_back(&Knob::Boost, root) {
        Some(b) => {
            let f = Finding::new("cpufreq boost", b.clone(), Verdict::Ok)
                .why("turbo raises the clock as far as power and temperature allow: the clock then depends on how many cores are busy and how hot the package is, so results drift with load and time");
            v.push(if b == "off" {
                f.recommend("off, as it is")
            } else {
                Finding { verdict: Verdict::Change, ..f }.recommend("off").applies("boost", "off")
            });
        }
        None => v.push(
            Finding::new(
                "cpufreq boost",
                "no boost control (neither cpufreq/boost nor intel_pstate/no_turbo)",
                Verdict::Note,
            )
            .why("turbo, where the CPU has it, makes the clock depend on load and temperature")
            .recommend("nothing kdelta can set here; turn turbo off in the firmware if it has it"),
        ),
    }
    v
}

fn smt(root: &Path) -> Finding {
    let ctl = read(root, k::SMT_CONTROL).unwrap_or_else(|| "no smt/control".into());
    let siblings = Topology::read(root).map(|t| t.has_smt()).unwrap_or(false);
    let why = "two hardware threads of one core share its execution units and caches: a benchmark's time depends on what runs on its sibling";
    if !siblings {
        Finding::new("SMT", format!("{ctl}; no core has two online threads"), Verdict::Ok)
            .why(why)
            .recommend("nothing: no siblings to share a core")
    } else {
        Finding::new("SMT", format!("{ctl}; cores have sibling threads online"), Verdict::Note).why(why).recommend(
            "leave it on and choose per configuration: `noht`, `up` and `noht1` keep siblings idle, `+smt=off` takes them offline for one configuration",
        )
    }
}

fn aslr(root: &Path) -> Finding {
    let v = read(root, "proc/sys/kernel/randomize_va_space").unwrap_or_else(|| "unreadable".into());
    let f = Finding::new("ASLR (kernel.randomize_va_space)", v.clone(), Verdict::Ok).why(
        "address-space randomisation places stacks, heaps and mappings anew in every process, so timings that depend on cache and TLB aliasing vary from worker to worker; kdelta measures in many workers and so averages over layouts",
    );
    if v == "2" {
        f.recommend(
            "2 (full randomisation), as it is: one fixed layout would be one arbitrary point, not the typical one",
        )
    } else {
        Finding { verdict: Verdict::Change, ..f }
            .recommend("2 (full randomisation): with fewer layouts a result describes one arbitrary layout")
            .applies("sysctl", "kernel.randomize_va_space=2")
    }
}

fn thp(root: &Path) -> Vec<Finding> {
    let mut v = Vec::new();
    for (setting, rel, key) in [
        ("transparent huge pages (enabled)", k::THP, "thp"),
        ("transparent huge pages (defrag)", "sys/kernel/mm/transparent_hugepage/defrag", "sysfs"),
    ] {
        let Some(t) = read(root, rel) else {
            v.push(
                Finding::new(setting, format!("{} does not exist", root.join(rel).display()), Verdict::Ok)
                    .why("a kernel without transparent huge pages maps anonymous memory in base pages only")
                    .recommend("nothing"),
            );
            continue;
        };
        let cur = k::parse_choices(&t).map(|(c, _)| c).unwrap_or(t.clone());
        let why = if key == "thp" {
            "with always, anonymous memory becomes 2 MiB pages whenever a fault or khugepaged finds room, so page faults, TLB misses and bandwidth depend on fragmentation and timing; madvise gives huge pages only to programs that ask"
        } else {
            "defrag decides whether a fault that wants a huge page stalls on compaction: with always, a page fault can take milliseconds depending on fragmentation"
        };
        let f = Finding::new(setting, t.clone(), Verdict::Ok).why(why);
        v.push(if cur == "madvise" {
            f.recommend("madvise, as it is")
        } else {
            let f = Finding { verdict: Verdict::Change, ..f }
                .recommend("madvise (compare `+thp=` configurations to study huge pages)");
            if key == "thp" {
                f.applies("thp", "madvise")
            } else {
                f.applies("sysfs", "/sys/kernel/mm/transparent_hugepage/defrag=madvise")
            }
        });
    }
    v
}

fn swap(root: &Path) -> Finding {
    let s = m::swap(root);
    let swappiness = read(root, "proc/sys/vm/swappiness").unwrap_or_else(|| "?".into());
    let why = "a page swapped out faults back from disk: a benchmark touching it takes milliseconds instead of nanoseconds, at random";
    match (s.total_kib, s.free_kib) {
        (Some(t), Some(fr)) if t > 0 => {
            let used = t.saturating_sub(fr);
            let value = format!(
                "{} KiB on {} ({used} KiB in use), vm.swappiness {swappiness}",
                t,
                if s.devices.is_empty() { "?".to_string() } else { s.devices.join(", ") }
            );
            let f = Finding::new("swap", value, if used > 0 { Verdict::Change } else { Verdict::Note }).why(why);
            f.recommend("no swap in use while measuring: enough free memory, or swap off")
                .by_hand("swapoff -a before measuring, swapon -a after (not a kernel file kdelta journals)")
        }
        _ => Finding::new("swap", format!("none (vm.swappiness {swappiness})"), Verdict::Ok)
            .why(why)
            .recommend("nothing: no swap"),
    }
}

fn irqs(root: &Path, measured: &CpuSet) -> Finding {
    let rows = m::interrupts(root);
    let why = "an interrupt handled on a measured CPU stops the benchmark for its handler's time (and its softirq work): a device's interrupts land as random delays";
    if rows.is_empty() {
        return Finding::new("IRQs on the measured CPUs", "/proc/interrupts unreadable", Verdict::Note)
            .why(why)
            .recommend("steer device interrupts to CPUs kdelta does not measure on");
    }
    let mut served: Vec<(u64, String)> = Vec::new();
    for r in rows.iter().filter(|r| r.name.bytes().all(|b| b.is_ascii_digit())) {
        let on: u64 = r.counts.iter().filter(|(c, _)| measured.contains(*c)).map(|(_, n)| n).sum();
        let aff = m::irq_affinity(root, &r.name);
        let may = aff.as_ref().is_some_and(|a| !a.intersection(measured).is_empty());
        if on > 0 || may {
            let aff = aff.map(|a| a.to_string()).unwrap_or_else(|| "?".into());
            served.push((on, format!("irq {} {} ({on} on measured CPUs, affinity {aff})", r.name, r.what)));
        }
    }
    served.sort_by_key(|s| std::cmp::Reverse(s.0));
    let active = served.iter().filter(|(n, _)| *n > 0).count();
    let shown: Vec<&str> = served.iter().take(6).map(|(_, s)| s.as_str()).collect();
    let more = if served.len() > 6 { format!("; {} more", served.len() - 6) } else { String::new() };
    let value = if served.is_empty() {
        "no device IRQ is served by the measured CPUs".to_string()
    } else {
        format!(
            "{} device IRQs may be served by CPUs {measured}, {active} were: {}{more}",
            served.len(),
            shown.join("; ")
        )
    };
    let f = Finding::new("IRQs on the measured CPUs", value, if active > 0 { Verdict::Change } else { Verdict::Ok })
        .why(why);
    if active == 0 {
        return f.recommend("nothing: no device interrupt lands on the measured CPUs");
    }
    f.recommend("measure on CPUs that serve no device interrupts: steer them to another CPU (stop irqbalance first) and give kdelta the rest (`--config cpus=LIST`)")
        .by_hand("echo OTHER-CPUS > /proc/irq/N/smp_affinity_list for each IRQ above (kdelta writes only below /sys and /proc/sys, and not /proc/irq)")
}

fn isolation(root: &Path, measured: &CpuSet) -> Finding {
    let cmd = m::cmdline(root).unwrap_or_default();
    let param = |n: &str| m::cmdline_param(&cmd, n);
    let list = |rel: &str| read(root, rel).and_then(|t| CpuSet::parse_list(t.trim()).ok()).unwrap_or_default();
    let isolated = list("sys/devices/system/cpu/isolated");
    let nohz = list("sys/devices/system/cpu/nohz_full");
    let shown = |c: &CpuSet| if c.is_empty() { "none".to_string() } else { c.to_string() };
    let mut value = format!("isolated CPUs {}, nohz_full CPUs {}", shown(&isolated), shown(&nohz));
    for n in ["isolcpus", "nohz_full", "rcu_nocbs"] {
        if let Some(v) = param(n) {
            value.push_str(&format!("; boot parameter {n}={v}"));
        }
    }
    let why = "an isolated CPU (isolcpus) gets no other task from the scheduler, and nohz_full stops its timer tick while one task runs: the quietest CPU Linux can give a benchmark";
    if !measured.is_empty() && measured.difference(&isolated).is_empty() && measured.difference(&nohz).is_empty() {
        return Finding::new("isolcpus / nohz_full", value, Verdict::Ok)
            .why(why)
            .recommend("nothing: the measured CPUs are isolated");
    }
    Finding::new("isolcpus / nohz_full", value, Verdict::Note)
        .why(why)
        .recommend("on a machine kept for measuring, isolate the measured CPUs at boot and leave one CPU for everything else")
        .by_hand("boot with isolcpus=managed_irq,domain,LIST nohz_full=LIST rcu_nocbs=LIST (a boot parameter: nothing kdelta can switch)")
}

fn perf_rate(root: &Path) -> Finding {
    let v = read(root, "proc/sys/kernel/perf_event_max_sample_rate").unwrap_or_else(|| "unreadable".into());
    let f = Finding::new("kernel.perf_event_max_sample_rate", v.clone(), Verdict::Ok).why(
        "it caps the sampling interrupts a profiler (perf record, a monitoring agent) takes on the measured CPUs; the kernel lowers it by itself when those interrupts run long, so a value below the default 100000 says it happened",
    );
    // pyperf sets it to 1; kdelta does not: `run --profile` samples stacks
    // at `measure::profile::HZ` through perf record, which a lower cap
    // would refuse or thin out, and counting (`--counters`) takes no
    // sampling interrupt at all.
    match v.parse::<u64>() {
        Ok(n) if n < u64::from(crate::measure::profile::HZ) => Finding { verdict: Verdict::Change, ..f }
            .recommend(format!(
                "at least {} so that `kdelta run --profile` can sample (sysctl -w kernel.perf_event_max_sample_rate=100000)",
                crate::measure::profile::HZ
            )),
        _ => f.recommend("leave it: nothing samples while kdelta measures unless you ask for --profile"),
    }
}

fn cpuidle(root: &Path, measured: &CpuSet) -> Finding {
    let (drv, gov) = m::cpuidle_driver(root);
    let states = m::idle_states(root, measured);
    let why_base = "a CPU woken from an idle state pays its exit latency first, so wake-up benchmarks (pipe and context-switch latencies) measure the idle state as much as the kernel";
    let Some(drv) = drv.filter(|d| d != "none") else {
        return Finding::new(
            "cpuidle",
            "no cpuidle driver: idle CPUs run the architecture's default halt",
            Verdict::Note,
        )
        .why(why_base)
        .recommend("nothing kdelta can set");
    };
    let mut names: Vec<String> = Vec::new();
    for s in &states {
        let n = format!(
            "{} ({}{})",
            s.name,
            s.latency_us.map(|l| format!("{l} µs")).unwrap_or_else(|| "? µs".into()),
            if s.disabled { ", disabled" } else { "" }
        );
        if !names.contains(&n) {
            names.push(n);
        }
    }
    let mut value =
        format!("driver {drv}, governor {}; states {}", gov.unwrap_or_else(|| "?".into()), names.join(", "));
    let mut why = why_base.to_string();
    if drv == "haltpoll" {
        let params = m::haltpoll_params(root);
        let poll = params.iter().find(|(n, _)| n == "guest_halt_poll_ns").map(|(_, v)| v.clone());
        if !params.is_empty() {
            let p: Vec<String> = params.iter().map(|(n, v)| format!("{n}={v}")).collect();
            value.push_str(&format!("; haltpoll {}", p.join(" ")));
        }
        why.push_str(&format!(
            "; haltpoll, the idle driver of KVM guests, polls up to guest_halt_poll_ns ({} here) before it halts, so a wake-up's latency depends on how long the vCPU idled, and each halt is an exit to the host",
            poll.unwrap_or_else(|| "?".into())
        ));
    }
    let deep: Vec<&m::IdleState> =
        states.iter().filter(|s| !s.disabled && s.latency_us.is_some_and(|l| l > DEEP_IDLE_US)).collect();
    if deep.is_empty() {
        let rec = if drv == "haltpoll" {
            "no deep state to turn off; keep guest_halt_poll_ns the same between runs you compare, as latencies follow it".to_string()
        } else {
            format!("nothing: no state of the measured CPUs exits slower than {DEEP_IDLE_US} µs")
        };
        return Finding::new("cpuidle", value, Verdict::Note).why(why).recommend(rec);
    }
    let mut f = Finding::new("cpuidle", value, Verdict::Change)
        .why(why)
        .recommend(format!("states exiting slower than {DEEP_IDLE_US} µs off on the measured CPUs for latency work"));
    for s in deep {
        f = f.applies("sysfs", &format!("/sys/devices/system/cpu/cpu{}/cpuidle/{}/disable=1", s.cpu, s.state));
    }
    f
}

fn steal(a: Option<(u64, u64)>, b: Option<(u64, u64)>, window: Duration) -> Finding {
    let why = "steal is time the host ran something else while this VM's vCPU wanted to run: the benchmark's clock runs on while it does nothing";
    let secs = window.as_secs_f64();
    match (a, b) {
        (Some((t0, s0)), Some((t1, s1))) if t1 > t0 => {
            let pct = (s1.saturating_sub(s0)) as f64 * 100.0 / (t1 - t0) as f64;
            let f =
                Finding::new("steal time", format!("{pct:.1} % of CPU time over {secs:.1} s"), Verdict::Ok).why(why);
            if pct > STEAL_PCT {
                Finding { verdict: Verdict::Change, ..f }
                    .recommend(format!("under {STEAL_PCT} %: measure when the host is quieter, or on a host with dedicated CPUs; kdelta marks samples with steal as disturbed and retakes them"))
                    .by_hand("nothing in this VM changes it")
            } else {
                f.recommend(format!(
                    "under {STEAL_PCT} %, as it is (kdelta still marks samples with steal as disturbed)"
                ))
            }
        }
        _ => Finding::new("steal time", format!("unknown: /proc/stat did not advance over {secs:.1} s"), Verdict::Note)
            .why(why)
            .recommend(format!("under {STEAL_PCT} %")),
    }
}

fn busiest(a: &[(i32, String, u64)], b: &[(i32, String, u64)], window: Duration) -> Finding {
    let hz = crate::sys::clock::clk_tck();
    let secs = window.as_secs_f64().max(1e-3);
    let me = std::process::id() as i32;
    let mut busy: Vec<(f64, String)> = b
        .iter()
        .filter(|(pid, _, _)| *pid != me)
        .filter_map(|(pid, name, t1)| {
            let (_, _, t0) = a.iter().find(|(p, n, _)| p == pid && n == name)?;
            let pct = t1.saturating_sub(*t0) as f64 / hz / secs * 100.0;
            (pct > 0.0).then(|| (pct, format!("{name} (pid {pid}) {pct:.0} %")))
        })
        .collect();
    busy.sort_by(|x, y| y.0.total_cmp(&x.0));
    let why = "another busy process competes for the measured CPUs and their caches: its load shows up as preempted, disturbed samples and wider intervals";
    let top: Vec<String> = busy.iter().take(5).map(|(_, s)| s.clone()).collect();
    let over: Vec<&(f64, String)> = busy.iter().filter(|(p, _)| *p >= BUSY_PCT).collect();
    let value = if top.is_empty() {
        format!("none used CPU over {:.1} s", window.as_secs_f64())
    } else {
        format!("{} (of one CPU, over {:.1} s)", top.join(", "), window.as_secs_f64())
    };
    let f = Finding::new("busiest other processes", value, if over.is_empty() { Verdict::Ok } else { Verdict::Change })
        .why(why);
    if over.is_empty() {
        f.recommend(format!("nothing: no other process used {BUSY_PCT:.0} % of a CPU"))
    } else {
        f.recommend("stop what need not run while measuring, or measure on CPUs it does not use")
            .by_hand("stop or pause them (kdelta does not touch other processes)")
    }
}

#[cfg(test)]
pub(super) fn steal_for_tests(a: Option<(u64, u64)>, b: Option<(u64, u64)>, window: Duration) -> Finding {
    steal(a, b, window)
}
