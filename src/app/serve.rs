//! `kdelta serve`: a benchmark's server alone, for clients elsewhere, within
//! limits ([`ServerLimits`]), on loopback unless `--public`.

use super::*;
use crate::child::ServerLimits;
use crate::cli::ServeArgs;

/// The limits from the command line's flags (each checked there to be
/// above zero).
fn limits(a: &ServeArgs) -> ServerLimits {
    ServerLimits {
        conns: a.max_conns,
        runs: a.max_runs,
        idle: a.idle_timeout,
        write: a.write_timeout,
        ..ServerLimits::SERVE
    }
}

/// Refuse an address other machines can reach unless `public`; warn when
/// public.
fn check_listen(listen: &str, public: bool) -> Result<()> {
    let addrs = crate::sys::net::resolve_all("listen", listen)?;
    let open: Vec<String> = addrs.iter().filter(|a| !a.ip().is_loopback()).map(|a| a.to_string()).collect();
    if open.is_empty() {
        return Ok(());
    }
    if !public {
        return Err(bad_input(format!(
            "--listen {listen} is not a loopback address ({}): other machines could connect, and the benchmark protocols have no authentication; add --public to serve them anyway",
            open.join(", ")
        )));
    }
    eprintln!(
        "warning: --listen {listen} is reachable from other machines: the benchmark protocol has no authentication, anyone who can connect can use this server"
    );
    Ok(())
}

/// `kdelta serve SERVER`: one benchmark server until SIGINT or SIGTERM.
pub(super) fn cmd_serve(a: &ServeArgs) -> Result<u8> {
    let (name, listen) = (a.name.as_str(), a.listen.as_str());
    let all = bench::servers();
    let Some(server) = all.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        return Err(bad_input(format!("unknown server {name:?}: allowed: {}", names.join(", "))));
    };
    let mut overrides = overrides(&a.param)?;
    // A server takes one value per parameter: the first of a default sweep.
    let specs = (server.params)();
    for spec in specs.iter() {
        if !overrides.contains_key(spec.name) {
            let first = spec.default.split(',').next().unwrap_or(spec.default);
            overrides.insert(spec.name.to_string(), first.to_string());
        }
    }
    let mut points = bench::params::expand(&specs, &overrides, false, name).map_err(|e| bad_input(e.to_string()))?;
    if points.len() != 1 {
        return Err(bad_input("a server takes one value per parameter, not a list"));
    }
    check_listen(listen, a.public)?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    (server.serve)(listen, &points.remove(0), limits(a), stop)?;
    Ok(exit::OK)
}
