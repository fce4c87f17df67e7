//! threads-2004: NPTL against LinuxThreads (2004): thread creation in the
//! NPTL (`direct`) and LinuxThreads (`manager`) models, the thread ring over
//! thread counts, and the VolanoMark-style paced chat, on UP, SMP-N and SMT.
//! Kernel preemption is an axis only where the machine can switch it.

use super::{single, Def, Parts, RoleUse, StudyName, Variant};
use crate::topology::Topology;

pub const DEF: Def = Def {
    name: StudyName::Threads2004,
    id: "threads-2004",
    what: "NPTL against LinuxThreads (2004): thread.create (direct = NPTL, manager = LinuxThreads), thread.ctx over 2 and 32 threads, paced chat (VolanoMark-style); UP, SMP and SMT",
    needs: "up, noht (SMP-N: one CPU per core) and ht (SMT: every logical CPU); kernel preemption switchable per point",
    published: super::published::THREADS_2004,
    roles,
    request,
};

fn roles(topo: &Topology, _variant: Variant, host: &serde_json::Value) -> Vec<RoleUse> {
    let mut r = vec![single("up", "up", topo), single("smp", "noht", topo), single("smt", "ht", topo)];
    let why = preempt_axis(host);
    r.push(RoleUse { unavailable: Some(why.clone()), ..RoleUse::none("preempt-off", "preempt=none", String::new()) });
    r.push(RoleUse { unavailable: Some(why), ..RoleUse::none("preempt-on", "preempt=full", String::new()) });
    r
}

/// Why the preemption axis cannot run here. The hook for a `+preempt=`
/// configuration modifier: once one exists, resolve `up+preempt=none` and
/// `up+preempt=full` here (as `single` does) and the rows fill in.
pub fn preempt_axis(host: &serde_json::Value) -> String {
    let model = host.get("preempt_model").and_then(|v| v.as_str()).unwrap_or("unknown");
    format!("kdelta has no +preempt= configuration modifier yet, so the preemption model cannot be switched between points (this kernel runs preempt={model} for the whole run)")
}

fn request(quick: bool) -> Parts {
    let rooms = if quick { "4" } else { "20" };
    Parts::new(
        &["thread.create", "thread.ctx", "chat.rooms"],
        &[
            ("thread.create:model", "direct,manager"),
            ("thread.ctx:threads", "2,32"),
            ("thread.ctx:size", "0"),
            ("thread.ctx:model", "threads"),
            ("chat.rooms:pacing", "room"),
            ("chat.rooms:rooms", rooms),
        ],
    )
}
