//! threads-2004: NPTL against LinuxThreads (2004): thread creation in the
//! NPTL (`direct`) and LinuxThreads (`manager`) models, the thread ring over
//! thread counts, and the VolanoMark-style paced chat, on UP, SMP-N and SMT.
//! Kernel preemption is an axis only where the machine can switch it.

use super::{single, Def, Parts, RoleUse, StudyName, Variant};
use crate::config::knobs;
use crate::topology::Topology;
use std::path::Path;

pub(super) const DEF: Def = Def {
    name: StudyName::Threads2004,
    id: "threads-2004",
    what: "NPTL against LinuxThreads (2004): thread.create (direct = NPTL, manager = LinuxThreads), thread.ctx over 2 and 32 threads, paced chat (VolanoMark-style); UP, SMP and SMT",
    needs: "up, noht (SMP-N: one CPU per core) and ht (SMT: every logical CPU); kernel preemption switchable per point",
    published: super::published::THREADS_2004,
    roles,
    request,
};

fn roles(topo: &Topology, _variant: Variant, host: &serde_json::Value, root: &Path) -> Vec<RoleUse> {
    let mut r = vec![single("up", "up", topo), single("smp", "noht", topo), single("smt", "ht", topo)];
    match preempt_axis(host, root) {
        // The 2004 comparison was on SMP: one CPU per core, the model switched
        // by the harness between rounds (`+preempt=`).
        Ok(()) => {
            r.push(single("preempt-off", "noht+preempt=none", topo));
            r.push(single("preempt-on", "noht+preempt=full", topo));
        }
        Err(why) => {
            let why = why.to_string();
            r.push(RoleUse {
                unavailable: Some(why.clone()),
                ..RoleUse::none("preempt-off", "noht+preempt=none", String::new())
            });
            r.push(RoleUse {
                unavailable: Some(why),
                ..RoleUse::none("preempt-on", "noht+preempt=full", String::new())
            });
        }
    }
    r
}

/// Whether this machine can switch the preemption model between points
/// (`+preempt=none` and `+preempt=full`, judged under `root` as the harness
/// will judge them), or why not, naming the model the kernel runs.
pub(super) fn preempt_axis(host: &serde_json::Value, root: &Path) -> Result<(), NoPreemptAxis> {
    let model = host.get("preempt_model").and_then(|v| v.as_str()).unwrap_or("unknown").to_string();
    for v in ["none", "full"] {
        let s = knobs::parse("preempt", v).map_err(|e| NoPreemptAxis::Setting(e.to_string()))?;
        if let Err(why) = knobs::judge(&s, root) {
            return Err(NoPreemptAxis::Fixed { why, model });
        }
    }
    Ok(())
}

/// Why the study cannot switch the preemption model between rounds.
#[derive(Debug, thiserror::Error)]
pub(super) enum NoPreemptAxis {
    /// `preempt=` itself was refused (kdelta's own spelling: never expected).
    #[error("{0}")]
    Setting(String),
    #[error("+preempt= cannot switch the preemption model here ({why}), so the kernel's preemption ({model}) stays as it is for the whole run")]
    Fixed { why: knobs::KnobError, model: String },
}

fn request(quick: bool) -> Vec<Parts> {
    // Paced chat is bound by the round trips of each room's turns (about 22
    // ms a turn with Nagle's algorithm on, as the original): 100 messages of
    // 20 users take 45 s a sample, so --quick sends 25.
    let (rooms, messages) = if quick { ("4", "25") } else { ("20", "100") };
    vec![Parts::new(
        &["thread.create", "thread.ctx", "chat.rooms"],
        &[
            ("thread.create:model", "direct,manager"),
            ("thread.ctx:threads", "2,32"),
            ("thread.ctx:size", "0"),
            ("thread.ctx:model", "threads"),
            ("chat.rooms:pacing", "room"),
            ("chat.rooms:rooms", rooms),
            ("chat.rooms:messages", messages),
        ],
    )]
}
