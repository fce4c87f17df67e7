//! Simulator tests: hand-computed cases, the 2002 bars, and properties.

use super::cli::{config, simulate_all, SimulateArgs};
use super::summary::PolicyResult;
use clap::Parser;

#[derive(clap::Parser)]
struct T {
    #[command(flatten)]
    a: SimulateArgs,
}

fn args(s: &str) -> SimulateArgs {
    let v = std::iter::once("x").chain(s.split_whitespace());
    T::try_parse_from(v).unwrap().a
}

fn sim(s: &str) -> Vec<PolicyResult> {
    let (cfg, p) = config(&args(s)).unwrap();
    simulate_all(&cfg, &p, false).unwrap()
}

#[test]
#[ignore]
fn show() {
    let a = args(&std::env::var("SIMARGS").unwrap());
    let (cfg, p) = config(&a).unwrap();
    let r = simulate_all(&cfg, &p, false).unwrap();
    println!("{}", super::cli::render_text(&cfg, &r));
}
