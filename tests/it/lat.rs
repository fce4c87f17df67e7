//! The LMbench latencies on the real binary, with tiny sample counts: what
//! their results say about the work they did (the program exec started,
//! the parts of a net figure, the measuring process's footprint).

use crate::common::{output_json, Env};

fn run_json(e: &Env, args: &[&str]) -> serde_json::Value {
    let mut a = vec![
        "run",
        "--quick",
        "--runs",
        "2",
        "--sample-time",
        "2ms",
        "--warmup",
        "0s",
        "--config",
        "up",
        "--format",
        "json",
    ];
    a.extend_from_slice(args);
    output_json(e.cmd().args(&a))
}

fn result<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["benchmark"] == name)
        .unwrap_or_else(|| panic!("no {name} in {v}"))
}

#[test]
fn exec_names_a_dynamically_linked_program_by_default() {
    let e = Env::new();
    let v = run_json(&e, &["lat.proc.exec"]);
    let r = result(&v, "lat.proc.exec");
    if r["status"] == "unavailable" {
        // Built without a C compiler: the reason says so, nothing else ran.
        assert!(r["reason"].as_str().unwrap().contains("hello"), "{r}");
        return;
    }
    assert_eq!(r["status"], "ok", "{r}");
    assert_eq!(r["params"]["prog"], "hello");
    let x = &r["extras"];
    assert_eq!(x["prog_linkage"], "dynamic", "{x}");
    assert!(x["prog_interp"].as_str().unwrap().starts_with('/'), "{x}");
    assert!(x["prog_path"].as_str().unwrap().ends_with("/hello"), "{x}");
    assert!(x["prog_bytes"].as_u64().unwrap() > 1000, "{x}");
    assert!(x["measuring_rss_bytes"].as_u64().unwrap() > 0 && x["measuring_maps"].as_u64().unwrap() > 0, "{x}");
    assert!(e.tmp_leftovers().is_empty(), "{:?}", e.tmp_leftovers());
}

#[test]
fn exec_and_shell_start_the_static_program_when_asked() {
    let e = Env::new();
    let v = run_json(&e, &["lat.proc.exec", "lat.proc.shell", "--param", "prog=static"]);
    for name in ["lat.proc.exec", "lat.proc.shell"] {
        let r = result(&v, name);
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["extras"]["prog_linkage"], "static", "{r}");
        assert!(r["extras"].get("prog_interp").is_none(), "{r}");
    }
}

/// By default fork is made by `forker`, the small C program; with
/// `parent=worker` by the worker. Each result names its forking process and
/// records that process's footprint.
#[test]
fn fork_records_the_forking_process_and_its_footprint() {
    let e = Env::new();
    let v = run_json(&e, &["lat.proc.fork", "--param", "parent=small,worker"]);
    let rs: Vec<&serde_json::Value> =
        v["results"].as_array().unwrap().iter().filter(|r| r["benchmark"] == "lat.proc.fork").collect();
    assert_eq!(rs.len(), 2, "{v}");
    let mut maps = Vec::new();
    for r in rs {
        assert_eq!(r["status"], "ok", "{r}");
        let x = &r["extras"];
        assert_eq!(x["fork_parent"], r["params"]["parent"], "{x}");
        let (rss, m) = (x["measuring_rss_bytes"].as_u64().unwrap(), x["measuring_maps"].as_u64().unwrap());
        assert!(rss > 0 && x["measuring_virt_bytes"].as_u64().unwrap() >= rss && m > 0, "{x}");
        maps.push((r["params"]["parent"].as_str().unwrap().to_string(), m));
    }
    maps.sort();
    // The C program maps fewer objects than the Rust worker (no libm, no libgcc_s).
    assert!(maps[0].0 == "small" && maps[0].1 < maps[1].1, "{maps:?}");
}

#[test]
fn sig_catch_stores_catch_send_and_their_difference() {
    let e = Env::new();
    let v = run_json(&e, &["lat.sig.catch"]);
    let r = result(&v, "lat.sig.catch");
    assert_eq!(r["status"], "ok", "{r}");
    let x = &r["extras"];
    let samples = r["samples"].as_array().unwrap();
    let catch = x["catch_us_samples"].as_array().unwrap();
    let send = x["send_us_samples"].as_array().unwrap();
    assert_eq!((catch.len(), send.len()), (samples.len(), samples.len()), "{x}");
    for i in 0..samples.len() {
        let (c, s, d) = (catch[i].as_f64().unwrap(), send[i].as_f64().unwrap(), samples[i].as_f64().unwrap());
        assert!(c > 0.0 && s > 0.0, "{c} {s}");
        assert!((d - (c - s)).abs() < 1e-9, "sample {i}: {d} is not {c} - {s}");
    }
    assert!(x["catch_us"].as_f64().unwrap() > 0.0 && x["send_us"].as_f64().unwrap() > 0.0, "{x}");
}
