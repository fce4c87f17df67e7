//! `kdelta place`: real placement of CPU-bound loops, or the SMT rate.

use super::*;
use crate::cli::PlaceArgs;
use crate::place::live::live_topology;
use crate::place::render::{render_place, render_rate};
use crate::place::session::{check, measure_smt_rate, place};

/// `kdelta place`: the loops placed on the live topology (or the SMT rate
/// measured), stopped early by Ctrl-C (exit 130, partial results printed).
pub(super) fn cmd_place(a: &PlaceArgs) -> Result<u8> {
    let args = &a.request();
    check(args)?;
    let stop = Arc::new(AtomicBool::new(false));
    let id = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&stop))
        .map_err(|e| anyhow::anyhow!("installing the SIGINT handler: {e}"))?;
    let (topo, note) = live_topology();
    let done = if a.measure_smt_rate {
        measure_smt_rate(args, &topo, note.as_deref(), &stop)
            .map(|r| (render_rate(a.format, &r), r.reason.as_deref() == Some("interrupted")))
    } else {
        place(args, &topo, note, &stop).map(|r| (render_place(a.format, &r), r.interrupted))
    };
    signal_hook::low_level::unregister(id);
    let (text, interrupted) = done?;
    out(&text);
    Ok(if interrupted { exit::INTERRUPTED } else { exit::OK })
}
