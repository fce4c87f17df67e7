//! Tests of `params.rs`.

#[test]
fn a_value_reaches_its_class_unless_it_is_the_default_or_harmless() {
    use crate::model::reach::Reach;
    let server = ParamSpec::new("server", ParamKind::Text, "local", "")
        .aliases(&[("auto", "local")])
        .reaches(Reach::Network, &[]);
    assert_eq!(server.reach_of("local"), None);
    assert_eq!(server.reach_of("auto"), None, "an alias of the default");
    assert_eq!(server.reach_of("10.0.0.1:9"), Some(Reach::Network));
    let output = ParamSpec::new("output", ParamKind::Text, "null", "").reaches(Reach::Files, &["pipe", "inherit"]);
    assert_eq!(output.reach_of("pipe"), None);
    assert_eq!(output.reach_of("/etc/passwd"), Some(Reach::Files));
    assert_eq!(ParamSpec::new("n", ParamKind::Text, "1", "").reach_of("2"), None, "declares no reach");
}

#[test]
fn scanned_ranges_expand_as_hyperfine_s_parameter_scan() {
    assert_eq!(scan_list("1..4").unwrap(), ["1", "2", "3", "4"]);
    assert_eq!(scan_list("0..100:25, x").unwrap(), ["0", "25", "50", "75", "100", "x"]);
    assert_eq!(scan_list("-2..2:3").unwrap(), ["-2", "1"]);
    assert!(scan_list("4..1").unwrap_err().contains("goes up"));
    assert!(scan_list("1..a").unwrap_err().contains("NUM..NUM"));
    assert!(scan_list("1..5:0").is_err());
    assert!(scan_list("0..100000").unwrap_err().contains("more than 1000"));
    assert!(scan_list("0..9223372036854775807:1").is_err());
    let wide = scan_list("-9223372036854775808..9223372036854775807:9223372036854775807").unwrap();
    assert_eq!(wide, ["-9223372036854775808", "-1", "9223372036854775806"]);
}

/// hyperfine's `--parameter-scan` with `-D 0.1`: decimals, written as given.
#[test]
fn scanned_ranges_take_decimal_steps() {
    assert_eq!(scan_list("0.1..0.3:0.1").unwrap(), ["0.1", "0.2", "0.3"]);
    assert_eq!(scan_list("0..1:0.25").unwrap(), ["0.00", "0.25", "0.50", "0.75", "1.00"]);
    assert_eq!(scan_list("0.5..2").unwrap(), ["0.5", "1.5"]);
    assert_eq!(scan_list("1.5..1.5:0.1").unwrap(), ["1.5"]);
    assert!(scan_list("0.3..0.1:0.1").unwrap_err().contains("goes up"));
    assert!(scan_list("0..1:0.0").unwrap_err().contains("goes up"));
    assert!(scan_list("0.1..x:0.1").unwrap_err().contains("NUM..NUM"));
    assert!(scan_list("0..1000:0.5").unwrap_err().contains("more than 1000"));
}

use super::*;

#[test]
fn sizes_and_durations() {
    assert_eq!(parse_size("16K").unwrap(), 16384);
    assert_eq!(parse_size("5M").unwrap(), 5 << 20);
    assert_eq!(parse_size("4096").unwrap(), 4096);
    assert!(parse_size("5Q").is_err());
    assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
    assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
    assert!(parse_duration("2 fortnights").is_err());
}

#[test]
fn expands_sweeps() {
    let specs = [
        ParamSpec::new("procs", ParamKind::Int { min: 2, max: 1024 }, "2,8", "").quick("2"),
        ParamSpec::new("size", ParamKind::Size, "0,16K", ""),
    ];
    let none = BTreeMap::new();
    assert_eq!(expand(&specs, &none, false, "x").unwrap().len(), 4);
    assert_eq!(expand(&specs, &none, true, "x").unwrap().len(), 2);
    let mut o = BTreeMap::new();
    o.insert("procs".to_string(), "1".to_string());
    let e = expand(&specs, &o, false, "lat.ctx").unwrap_err().to_string();
    assert!(e.contains("\"1\"") && e.contains("2..1024"), "{e}");
    let mut o = BTreeMap::new();
    o.insert("bogus".to_string(), "1".to_string());
    let e = expand(&specs, &o, false, "lat.ctx").unwrap_err().to_string();
    assert!(e.contains("bogus") && e.contains("procs, size"), "{e}");
}

#[test]
fn a_sweep_past_max_points_is_refused_before_it_is_built() {
    let o: BTreeMap<String, String> = ["a", "b", "c"].iter().map(|k| (k.to_string(), "1..1000".to_string())).collect();
    let e = expand_open(&[], &o, false, "cmd", true).unwrap_err().to_string();
    assert_eq!(
        e,
        "the sweep of cmd has 1000000000 points (a (1000 values) x b (1000 values) x c (1000 values)), \
         more than 10000: sweep fewer values"
    );
    let mut o: BTreeMap<String, String> = BTreeMap::new();
    o.insert("a".into(), "1..100".into());
    o.insert("b".into(), "1..100".into());
    assert_eq!(expand_open(&[], &o, false, "cmd", true).unwrap().len(), 10_000);
    o.insert("c".into(), "1,2".into());
    assert!(expand_open(&[], &o, false, "cmd", true).unwrap_err().to_string().contains("20000 points"));
}

crate::model::params::choice! {
    /// A test enum.
    enum Tasks { Threads = "threads" | "thread", Processes = "processes" | "process" | "procs" }
}

#[test]
fn choices_take_their_names_and_aliases_and_refuse_the_rest() {
    assert_eq!(parse_choice::<Tasks>("model", "threads").unwrap(), Tasks::Threads);
    assert_eq!(parse_choice::<Tasks>("model", "thread").unwrap(), Tasks::Threads);
    assert_eq!(parse_choice::<Tasks>("model", "procs").unwrap(), Tasks::Processes);
    assert_eq!(Tasks::Processes.name(), "processes");
    let e = parse_choice::<Tasks>("model", "fiber").unwrap_err().to_string();
    assert_eq!(e, "value \"fiber\" is not allowed for parameter model: expected threads|processes");
    // Booleans go through the same lookup.
    for (v, b) in [
        ("true", true),
        ("1", true),
        ("on", true),
        ("yes", true),
        ("false", false),
        ("0", false),
        ("off", false),
        ("no", false),
    ] {
        assert_eq!(parse_bool(v).unwrap(), b, "{v}");
    }
    let e = parse_bool("maybe").unwrap_err().to_string();
    assert!(!e.contains('\n') && e.contains("\"maybe\"") && e.contains("true|false"), "{e}");
}

#[test]
fn choice_kinds_come_from_the_enum_and_expand_stores_the_canonical_spelling() {
    let spec = ParamSpec::new("model", ParamKind::choice::<Tasks>(), "threads", "");
    assert_eq!(spec.kind_name(), "threads|processes");
    assert!(spec.validate("thread").is_ok());
    let e = spec.validate("fiber").unwrap_err().to_string();
    assert!(e.contains("\"fiber\"") && e.contains("threads|processes"), "{e}");
    let server = ParamSpec::new("server", ParamKind::Text, "local", "").aliases(&[("auto", "local")]);
    let strict = ParamSpec::new("strict", ParamKind::Bool, "false", "");
    let specs = [spec, server, strict];
    let o: BTreeMap<String, String> = [("model", "thread,process"), ("server", "auto"), ("strict", "1")]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let pts = expand(&specs, &o, false, "x").unwrap();
    let shown: Vec<String> = pts.iter().map(|p| p.display()).collect();
    assert_eq!(shown, ["model=threads server=local strict=true", "model=processes server=local strict=true"]);
    let mut stored = Params::default();
    stored.set("model", "process");
    stored.set("server", "auto");
    stored.set("gone", "thread");
    canonicalise(&specs, &mut stored);
    assert_eq!(stored.display(), "gone=thread model=processes server=local");
}

proptest::proptest! {
    #[test]
    fn any_spelling_is_canonical_or_refused(v in "(threads?|process(es)?|procs|[a-z0-9-]{0,8})") {
        let spec = ParamSpec::new("model", ParamKind::choice::<Tasks>(), "threads", "");
        match parse_choice::<Tasks>("model", &v) {
            Ok(t) => {
                proptest::prop_assert_eq!(spec.canonical(&v), t.name());
                proptest::prop_assert!(spec.validate(&v).is_ok());
            }
            Err(_) => {
                proptest::prop_assert_eq!(spec.canonical(&v), v.as_str());
                proptest::prop_assert!(spec.validate(&v).is_err());
            }
        }
    }
}

#[test]
fn carried_parameters_are_data_not_names() {
    let mut p = Params::default();
    p.set("cmd", "fast");
    p.set("commands", "fast=gzip -1 -c f\nbest=gzip -9 -c \"a, b\"");
    p.set("t", "2");
    assert_eq!(p.display(), "cmd=fast t=2");
    assert_eq!(p.carried(), [("commands", "fast", "gzip -1 -c f"), ("commands", "best", "gzip -9 -c \"a, b\"")]);
    assert_eq!(
        super::legend([&p, &p]).as_deref(),
        Some("commands: fast = `gzip -1 -c f`; best = `gzip -9 -c \"a, b\"`")
    );
    assert_eq!(super::legend([&Params::default()]), None);
    // A line stored by an older kdelta, read back without the blob.
    let old = "cmd.run cleanup=none cmd=fast commands=fast=gzip -1 -c f\\nbest=gzip -9 figure=wall t=2 [up]";
    assert_eq!(super::without_carried(old), "cmd.run cleanup=none cmd=fast figure=wall t=2 [up]");
    assert_eq!(super::without_carried("cmd.run cmd=a commands=a=true [up]"), "cmd.run cmd=a [up]");
    assert_eq!(super::without_carried("lat.syscall size=1 [up]"), "lat.syscall size=1 [up]");
}
