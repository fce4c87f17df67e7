//! Study plans on fake topologies (with and without SMT), the direction
//! logic on synthetic results, and what `--resume` keeps.

use super::run::{drop_done, is_done, plan_study, request, Ask};
use super::tables::{build, measured_direction, HEADER};
use super::*;
use crate::config::tests::topo;
use crate::model::record::ResultRecord;
use crate::model::sample::Quality;
use crate::model::{Better, Params};

fn ask(quick: bool) -> Ask {
    Ask {
        quick,
        variant: Variant::Faithful,
        label: None,
        resume: false,
        command: "kdelta study".into(),
        sysfs_root: std::path::PathBuf::from("/nonexistent-kdelta-root"),
        tiny: false,
        meta: Default::default(),
    }
}

/// Some line below the table `t` is one `line` accepts.
#[track_caller]
fn says_after(t: &crate::report::extra::ExtraTable, line: impl Fn(&str) -> bool) {
    assert!(t.after.iter().any(|l| line(l)), "{}: {:?}", t.title, t.after);
}

fn smt() -> Topology {
    topo(&[&[0, 2], &[1, 3]])
}

fn no_smt() -> Topology {
    topo(&[&[0], &[1]])
}

fn host() -> serde_json::Value {
    serde_json::json!({ "preempt_model": "voluntary" })
}

#[test]
fn ht_2003_uses_the_studys_pair_where_there_is_smt() {
    let (meta, req) = request(def(StudyName::Ht2003), &ask(true), &smt(), &host());
    assert!(req.iter().all(|r| r.configs == ["noht1", "ht1"]));
    assert!(meta.roles.iter().all(|r| r.substitute.is_none()));
    assert_eq!(meta.role("B").unwrap().cpus.as_deref(), Some("0,2"));
    let whole = Ask { variant: Variant::Whole, ..ask(true) };
    let (_, req) = request(def(StudyName::Ht2003), &whole, &smt(), &host());
    assert_eq!(req[0].configs, ["noht", "ht"]);
}

#[test]
fn ht_2003_substitutes_up_against_smp2_without_smt_and_says_so() {
    let (meta, req) = request(def(StudyName::Ht2003), &ask(true), &no_smt(), &host());
    assert!(req.iter().all(|r| r.configs == ["up", "smp2"]));
    for r in &meta.roles {
        let s = r.substitute.as_deref().unwrap();
        assert!(s.contains("up against smp2 is used instead") && s.contains("second CPU"), "{s}");
    }
    // Labelled on every table that measures anything.
    let tables = build(def(StudyName::Ht2003), &meta, &[]).unwrap();
    assert_eq!(tables.len(), 5);
    for t in &tables {
        assert!(t.before.iter().any(|l| l.starts_with("SUBSTITUTE: noht1 against ht1")), "{}: {:?}", t.title, t.before);
        assert_eq!(t.header, HEADER);
    }
    // On one CPU not even the substitute exists: both sides unavailable.
    let (meta, req) = request(def(StudyName::Ht2003), &ask(true), &topo(&[&[0]]), &host());
    assert!(req.iter().all(|r| r.configs.is_empty()));
    assert!(meta
        .roles
        .iter()
        .all(|r| r.config.is_none() && r.unavailable.as_deref().unwrap().contains("not available either")));
}

fn points(name: StudyName, t: &Topology, quick: bool) -> (usize, Vec<String>) {
    let (_, reqs) = request(def(name), &ask(quick), t, &host());
    let mut all: Vec<String> = Vec::new();
    let mut n = 0;
    for req in &reqs {
        let plan = plan_study(req, t).unwrap();
        let configs: Vec<String> = crate::harness::run::ready_configs(&plan).into_iter().map(|c| c.name).collect();
        n += plan.items.len() * configs.len();
        for c in configs {
            if !all.contains(&c) {
                all.push(c);
            }
        }
    }
    (n, all)
}

#[test]
fn plans_expand_to_the_expected_points() {
    // ht-2003: 14 latencies, 60 AIM9 tests, chat, dbench and tbench points, x 2.
    assert_eq!(
        points(StudyName::Ht2003, &no_smt(), true),
        (2 * (14 + 60 + 1 + 2 + 2), vec!["up".into(), "smp2".into()])
    );
    assert_eq!(
        points(StudyName::Ht2003, &smt(), false),
        (2 * (14 + 60 + 4 + 5 + 5), vec!["noht1".into(), "ht1".into()])
    );
    // threads-2004: create (2 models), ctx (2 thread counts), paced chat; up, smp and smt where there is SMT.
    assert_eq!(points(StudyName::Threads2004, &smt(), true), (3 * 5, vec!["up".into(), "noht".into(), "ht".into()]));
    assert_eq!(points(StudyName::Threads2004, &no_smt(), true), (2 * 5, vec!["up".into(), "noht".into()]));
    // sched-2002: the builds in A and B, kdelta place's three policies on the whole machine.
    assert_eq!(
        points(StudyName::Sched2002, &smt(), true),
        (2 * 2 + 3, vec!["ht1".into(), "noht".into(), "all".into()])
    );
    assert_eq!(
        points(StudyName::Sched2002, &no_smt(), true),
        (2 * 2 + 3, vec!["up".into(), "smp2".into(), "all".into()])
    );
    let (n, configs) = points(StudyName::Tuning2001, &no_smt(), true);
    assert_eq!(n, 2 * (4 * 4 * 3 + 3)); // 4 routines x 4 sizes x naive, libc, tuned; 3 builds
    assert_eq!(configs[0], "all");
    assert!(configs[1].starts_with("all+tunables=glibc.cpu.hwcaps="));
}

#[test]
fn threads_2004_says_why_there_is_no_preemption_axis() {
    let (meta, _) = request(def(StudyName::Threads2004), &ask(true), &no_smt(), &host());
    let p = meta.role("preempt-on").unwrap();
    assert!(
        p.config.is_none()
            && p.unavailable.as_deref().unwrap().contains("+preempt=")
            && p.unavailable.as_deref().unwrap().contains("(voluntary)")
    );
    let tables = build(def(StudyName::Threads2004), &meta, &[]).unwrap();
    let pre = tables.iter().find(|t| t.title.contains("preemption")).unwrap();
    says_after(pre, |l| l.starts_with("unavailable: preemption off -> on") && l.contains("+preempt="));
}

#[test]
fn threads_2004_switches_preemption_where_the_machine_can() {
    // A fake tree whose debugfs offers the preemption models, writable.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("sys/kernel/debug/sched/preempt");
    std::fs::create_dir_all(f.parent().unwrap()).unwrap();
    std::fs::write(&f, "none voluntary (full) lazy\n").unwrap();
    let a = Ask { sysfs_root: dir.path().to_path_buf(), ..ask(true) };
    let (meta, req) = request(def(StudyName::Threads2004), &a, &no_smt(), &host());
    for (role, want) in [("preempt-off", "preempt=none"), ("preempt-on", "preempt=full")] {
        let r = meta.role(role).unwrap();
        assert!(r.unavailable.is_none(), "{role}: {:?}", r.unavailable);
        let c = r.config.as_deref().unwrap();
        assert!(c.contains(want), "{role}: {c}");
        assert!(req[0].configs.iter().any(|x| x == c), "{c} is run: {:?}", req[0].configs);
    }
}

fn result(bench: &str, p: &[(&str, &str)], config: &str, better: Better, samples: Vec<f64>) -> ResultRecord {
    ResultRecord {
        params: Params(p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
        config: config.into(),
        cpus: String::new(),
        better,
        ..crate::testing::stored::ok_result(bench, &samples)
    }
}

fn spread(m: f64) -> Vec<f64> {
    [1.0, 1.01, 0.99, 1.005, 0.995, 1.002, 0.998, 1.001].iter().map(|x| x * m).collect()
}

#[test]
fn directions_on_synthetic_results() {
    let (meta, _) = request(def(StudyName::Ht2003), &ask(true), &no_smt(), &host());
    let rs = vec![
        // Published 0% (same): here 20% faster on B: differs.
        result("lat.syscall", &[], "up", Better::Lower, spread(1.0)),
        result("lat.syscall", &[], "smp2", Better::Lower, spread(0.8)),
        // Published -4% (worse): here 10% slower on B: agrees.
        result("lat.proc.fork", &[("parent", "small")], "up", Better::Lower, spread(100.0)),
        result("lat.proc.fork", &[("parent", "small")], "smp2", Better::Lower, spread(110.0)),
        // Published 0%: here the same: agrees.
        result("lat.read", &[], "up", Better::Lower, spread(2.0)),
        result("lat.read", &[], "smp2", Better::Lower, spread(2.0)),
        // An older, interrupted copy first: the newest result is the one used.
        result("lat.write", &[], "up", Better::Lower, spread(9.0)),
        result("lat.write", &[], "up", Better::Lower, spread(1.0)),
        result("lat.write", &[], "smp2", Better::Lower, spread(1.0)),
    ];
    let t = &build(def(StudyName::Ht2003), &meta, &rs).unwrap()[0];
    let row = |name: &str| t.rows.iter().find(|r| r[0] == name).unwrap().clone();
    assert_eq!(row("simple syscall")[7], "no");
    assert_eq!(row("simple syscall")[6], "+25.0%*");
    assert_eq!(row("process fork+exit")[7], "yes");
    assert_eq!(row("simple read")[7], "yes");
    assert_eq!(row("simple write")[4], "1.000 us");
    assert_eq!(row("simple stat")[4], "unavailable");
    assert_eq!(t.after[0], "direction agrees in 3 of 4 rows; differs in: simple syscall (published same, here better)");
    says_after(t, |l| l.starts_with("unavailable: simple stat: not measured in this run"));
    let geo = t.rows.last().unwrap();
    assert_eq!(geo[0], "geometric mean");
    assert!(geo[6].ends_with("(4 rows)"), "{geo:?}");
}

#[test]
fn a_noisy_side_leaves_the_direction_unclear() {
    let (a, b, none) = (spread(1.0), spread(0.8), crate::stats::Side::default());
    let mut c = crate::stats::compare_sides(&a, &none, &b, &none, &[], Better::Lower, &Default::default()).unwrap();
    assert_eq!(measured_direction(&c, 1.0), Ok(published::Direction::Better));
    c.significant = false;
    c.withheld = Some(crate::stats::Withheld::Noisy);
    assert!(measured_direction(&c, 1.0).is_err());
    c.withheld = Some(crate::stats::Withheld::NotInRounds);
    assert_eq!(measured_direction(&c, 1.0), Ok(published::Direction::Same));
    // Not significant: a small change is no clear change, a large one unknown.
    c.withheld = None;
    assert!(measured_direction(&c, 1.0).is_err(), "25% on too few samples");
    c.change_pct = 0.5;
    assert_eq!(measured_direction(&c, 1.0), Ok(published::Direction::Same));
}

#[test]
fn rows_outside_the_quick_plan_say_so() {
    let parts = (def(StudyName::Ht2003).request)(true);
    let p = |k: &str, v: &str| [(k.to_string(), v.to_string())].into_iter().collect();
    assert!(tables::in_plan(&parts, "dbench.throughput", &p("clients", "20")));
    assert!(!tables::in_plan(&parts, "dbench.throughput", &p("clients", "30")));
    assert!(tables::in_plan(&parts, "lat.syscall", &Default::default()));
    let (meta, _) = request(def(StudyName::Ht2003), &ask(true), &no_smt(), &host());
    let t = build(def(StudyName::Ht2003), &meta, &[]).unwrap();
    let dbench = t.iter().find(|t| t.title.starts_with("Table 5")).unwrap();
    assert!(
        dbench.after.contains(&"unavailable: 30 clients: not in the --quick plan".to_string()),
        "{:?}",
        dbench.after
    );
}

#[test]
fn resume_keeps_only_the_missing_points() {
    let t = no_smt();
    let (_, req) = request(def(StudyName::Threads2004), &ask(true), &t, &host());
    let mut plan = plan_study(&req[0], &t).unwrap();
    let q = |wanted: usize| Some(Quality { wanted, clean: wanted, ..Default::default() });
    let mut done = result("thread.create", &[("model", "direct")], "up", Better::Lower, spread(10.0));
    done.quality = q(8);
    let mut done2 = done.clone();
    done2.config = "noht".into();
    // Interrupted: fewer samples than wanted, so it runs again.
    let mut partial = result("thread.create", &[("model", "manager")], "up", Better::Lower, spread(10.0));
    partial.quality = q(20);
    let mut partial2 = partial.clone();
    partial2.config = "noht".into();
    assert!(is_done(&done) && !is_done(&partial));
    let (left, dropped) = drop_done(&mut plan, &[done, done2, partial, partial2]);
    assert_eq!((left, dropped), (8, 2));
    assert!(!plan
        .items
        .iter()
        .any(|i| i.info.name == "thread.create" && i.params.0.get("model").map(String::as_str) == Some("direct")));
}

#[test]
fn parts_run_in_their_roles_and_with_their_samples() {
    // sched-2002's placement runs on the whole machine only, the builds in A and B only.
    let (_, reqs) = request(def(StudyName::Sched2002), &ask(true), &no_smt(), &host());
    assert_eq!(reqs.len(), 2);
    assert_eq!(
        (reqs[0].selectors.as_slice(), reqs[0].configs.as_slice()),
        (["build.make".to_string()].as_slice(), ["up".to_string(), "smp2".to_string()].as_slice())
    );
    assert_eq!(reqs[1].configs, ["all"]);
    // tuning-2001's builds: a mean of 5, as the study had (2 under --quick).
    let (_, reqs) = request(def(StudyName::Tuning2001), &ask(false), &no_smt(), &host());
    assert_eq!(reqs[1].runs, crate::harness::plan::Runs::Fixed(5));
    let (_, reqs) = request(def(StudyName::Ht2003), &ask(true), &no_smt(), &host());
    let aim9 = reqs.iter().find(|r| r.selectors == ["aim9"]).unwrap();
    assert_eq!(aim9.runs, crate::harness::plan::Runs::Fixed(ht2003::AIM9_QUICK_SAMPLES));
    // The tiny plan of the tests: three benchmarks, three samples.
    let (meta, reqs) = request(def(StudyName::Ht2003), &Ask { tiny: true, ..ask(true) }, &no_smt(), &host());
    assert!(meta.tiny);
    assert_eq!(reqs.len(), 1);
    assert_eq!(reqs[0].selectors, ["lat.syscall", "lat.read", "lat.write"]);
    let t = build(def(StudyName::Ht2003), &meta, &[]).unwrap();
    says_after(&t[0], |l| l == "unavailable: simple stat: not in the tiny plan of the tests");
}

#[test]
fn build_rows_show_user_system_and_wall_time_as_means() {
    let (meta, _) = request(def(StudyName::Tuning2001), &ask(false), &no_smt(), &host());
    let untuned = meta.role("untuned").unwrap().config.clone().unwrap();
    let make = |config: &str, wall: f64, user: f64, sys: f64| {
        let mut r = result("build.make", &[("jobs", "1")], config, Better::Lower, spread(wall));
        r.unit = "s".into();
        r.extras.insert("user_s_samples".into(), serde_json::json!(spread(user)));
        r.extras.insert("sys_s_samples".into(), serde_json::json!(spread(sys)));
        r
    };
    // Tuned routines: user time 20% lower, system time the same.
    let rs = vec![make(&untuned, 10.0, 8.0, 1.0), make("all", 9.0, 6.4, 1.0)];
    let t = build(def(StudyName::Tuning2001), &meta, &rs).unwrap();
    let b = t.iter().find(|t| t.title.starts_with("Builds")).unwrap();
    let row =
        |name: &str| b.rows.iter().find(|r| r[0] == name).unwrap_or_else(|| panic!("{name}: {:?}", b.rows)).clone();
    let mean = |m: f64| crate::model::fmt::fmt_num(spread(m).iter().sum::<f64>() / 8.0);
    assert_eq!(row("make -j1 user time, original -> tuned routines")[4], format!("{} s", mean(8.0)));
    assert_eq!(row("make -j1 user time, original -> tuned routines")[5], format!("{} s", mean(6.4)));
    assert_eq!(row("make -j1 wall, original -> tuned routines")[4], format!("{} s", mean(10.0)));
    assert_eq!(
        row("make -j1 system time, original -> tuned routines")[7],
        "no",
        "published: less system time; here the same"
    );
    assert!(row("make -j1 user time, original -> tuned routines")[6].starts_with("+25.0%"));
    // A run without the per-sample figures says so rather than showing wall time.
    let mut old = rs.clone();
    for r in &mut old {
        r.extras = Default::default();
    }
    let t = build(def(StudyName::Tuning2001), &meta, &old).unwrap();
    let b = t.iter().find(|t| t.title.starts_with("Builds")).unwrap();
    says_after(b, |l| l.contains("make -j1 user time") && l.contains("stored no user_s per sample"));
}

#[test]
fn placement_rows_read_the_whole_machine_and_say_what_no_smt_means() {
    let (meta, _) = request(def(StudyName::Sched2002), &ask(true), &no_smt(), &host());
    assert_eq!(meta.role("machine").unwrap().config.as_deref(), Some("all"));
    let place = |policy: &str, secs: f64| {
        let mut r = result("place.loops", &[("policy", policy), ("loops", "2")], "all", Better::Lower, spread(secs));
        r.unit = "s".into();
        r.notes.push(crate::bench::place::NO_SMT_NOTE.into());
        r
    };
    let rs = vec![place("naive", 1.5), place("smt-aware", 1.0), place("kernel", 1.0)];
    let t = build(def(StudyName::Sched2002), &meta, &rs).unwrap();
    let real = t.iter().find(|t| t.title.starts_with("The same experiment")).unwrap();
    let row = |name: &str| {
        real.rows.iter().find(|r| r[0].starts_with(name)).unwrap_or_else(|| panic!("{name}: {:?}", real.rows)).clone()
    };
    assert_eq!(row("two loops, naive -> smt-aware placement")[7], "yes");
    assert_eq!(row("two loops, naive -> kernel placement")[7], "yes");
    assert!(row("two loops, naive -> smt-aware placement")[0].ends_with("(note)"));
    let notes: Vec<&String> = real.after.iter().filter(|l| l.starts_with("note")).collect();
    assert_eq!(notes.len(), 1, "one note, naming its rows: {notes:?}");
    assert!(notes[0].starts_with("note (two loops, naive -> smt-aware placement; two loops, naive -> kernel placement; two loops, smt-aware -> kernel placement): no SMT here"), "{notes:?}");
    assert!(real.before.iter().any(|l| l.contains("machine = all")), "{:?}", real.before);
}

#[test]
fn a_change_not_significant_on_noisy_sides_says_noisy_not_too_few_samples() {
    let (meta, _) = request(def(StudyName::Ht2003), &ask(true), &no_smt(), &host());
    let noisy = |config: &str, m: f64| {
        let mut r = result("lat.syscall", &[], config, Better::Lower, vec![m, m * 1.3, m * 0.8, m * 1.1]);
        r.quality = Some(Quality { wanted: 4, clean: 0, noisy: true, ..Default::default() });
        r
    };
    let t = &build(def(StudyName::Ht2003), &meta, &[noisy("up", 1.0), noisy("smp2", 1.2)]).unwrap()[0];
    let row = t.rows.iter().find(|r| r[0] == "simple syscall").unwrap();
    assert_eq!(row[7], "unclear: a side is noisy");
}
