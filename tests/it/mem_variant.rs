//! `variant=`: every path of the tuned routines forced through the real
//! binary. A path this CPU runs is measured and says so in its extras; one it
//! lacks is recorded unavailable with the reason, not run; every result
//! names both sides' paths (`variant`, `libc_impl`).

use crate::common;
use crate::common::{assert_ok, Env};
use kdelta::testing::mem::{choose, cpu, Variant};

#[test]
fn every_variant_runs_or_is_unavailable_and_both_paths_are_recorded() {
    let e = Env::new();
    let names: Vec<&str> = std::iter::once("auto").chain(Variant::ALL.iter().map(|v| v.name())).collect();
    let out = e
        .cmd()
        .args(["run", "mem.memcpy", "--param", "impl=libc,tuned", "--param"])
        .arg(format!("variant={}", names.join(",")))
        .args(["--param", "size=2K", "--param", "cache=warm"])
        .args(["--runs", "1", "--sample-time", "1ms", "--format", "json"])
        .output()
        .unwrap();
    assert_ok(&out);
    let v = common::json(&out.stdout);
    let results = v["results"].as_array().unwrap();
    let mut seen = 0;
    for r in results {
        let p = &r["params"];
        let (imp, name) = (p["impl"].as_str().unwrap(), p["variant"].as_str().unwrap());
        let status = r["status"].as_str().unwrap();
        let want = Variant::from_name(name);
        if imp == "tuned" && want.is_some_and(|w| !w.is_available()) {
            assert_eq!(status, "unavailable", "{r}");
            assert!(r.to_string().contains("cannot run it"), "{r}");
            assert!(r["median"].is_null(), "{r}");
            seen += 1;
            continue;
        }
        assert_eq!(status, "ok", "{r}");
        let x = &r["extras"];
        let chosen = want.unwrap_or_else(|| choose(cpu()));
        assert_eq!(x["variant"].as_str(), Some(chosen.name()), "{r}");
        assert_eq!(x["variant_by"].as_str(), Some(if want.is_some() { "variant=" } else { "rule" }), "{r}");
        assert!(x["cpu"].as_str().is_some_and(|c| !c.is_empty()), "{r}");
        // The C library's routine: a name, or why it cannot be told.
        let li = x["libc_impl"].as_str().unwrap();
        assert!(!li.is_empty(), "{r}");
        seen += 1;
    }
    assert_eq!(seen, 2 * names.len());

    // A name outside the list is bad input.
    let out = e.cmd().args(["run", "mem.memcpy", "--param", "variant=avx1024"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("avx1024"));
}
