//! `kdelta serve`: a benchmark's server alone, for clients elsewhere.

use super::*;

pub(super) fn cmd_serve(name: &str, listen: &str, param: &[String]) -> Result<u8> {
    let all = bench::servers();
    let Some(server) = all.iter().find(|s| s.name == name) else {
        let names: Vec<&str> = all.iter().map(|s| s.name).collect();
        return Err(bad_input(format!("unknown server {name:?}: allowed: {}", names.join(", "))));
    };
    let mut overrides = parse_overrides(param)?;
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
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).context("installing signal handlers")?;
    }
    (server.serve)(listen, &points.remove(0), stop)?;
    Ok(exit::OK)
}
