//! [`Store::history`] selects alike on both backends: [`check`] fills an
//! empty store and asserts what each filter keeps; the SQLite run is here,
//! the PostgreSQL one in `pg_tests.rs`.

use super::{HistoryQuery, Pick, Store};
use crate::model::record::{ResultRecord, RunRecord, RunStatus};

fn result(samples: &[f64]) -> ResultRecord {
    crate::testing::stored::ok_result("lat.syscall", samples)
}

/// Store a run; `finish` says whether it is closed complete.
fn stored(s: &mut Store, label: &str, host: &str, kernel: &str, started: &str, finish: bool) -> i64 {
    let mut run = RunRecord::begin(
        Some(label.into()),
        "kdelta run".into(),
        vec![],
        serde_json::json!({"hostname": host, "kernel_release": kernel}),
        Default::default(),
    );
    run.started = started.into();
    let id = s.begin_run(&run).unwrap();
    s.add_result(id, 0, &result(&[1.0, 2.0, 3.0])).unwrap();
    if finish {
        s.finish_run(id, RunStatus::Complete, &Default::default()).unwrap();
    }
    id
}

/// Fill an empty store and check every filter of [`HistoryQuery`].
pub(crate) fn check(s: &mut Store) {
    let a = stored(s, "nightly", "alpha", "6.1", "2024-05-01T10:00:00Z", true);
    let b = stored(s, "nightly", "beta", "6.1", "2024-05-02T10:00:00Z", true);
    let c = stored(s, "other", "alpha", "6.8", "2024-05-03T10:00:00Z", true);
    // Still running (this process writes it): never part of a history.
    let running = stored(s, "nightly", "alpha", "6.1", "2024-05-04T10:00:00Z", false);
    let ids = |q: HistoryQuery| {
        s.history(&q, &Pick::Matching(&|_, _| true)).unwrap().runs.iter().map(|(r, _)| r.id).collect::<Vec<_>>()
    };
    assert_eq!(ids(HistoryQuery::default()), [a, b, c]);
    assert_eq!(ids(HistoryQuery { label: Some("nightly".into()), ..Default::default() }), [a, b]);
    assert_eq!(ids(HistoryQuery { hostname: Some("alpha".into()), ..Default::default() }), [a, c]);
    assert_eq!(ids(HistoryQuery { kernel: Some("6.8".into()), ..Default::default() }), [c]);
    assert_eq!(ids(HistoryQuery { since: Some("2024-05-02T00:00:00Z".into()), ..Default::default() }), [b, c]);
    let all = HistoryQuery {
        label: Some("nightly".into()),
        hostname: Some("alpha".into()),
        kernel: Some("6.1".into()),
        since: Some("2024-05-01T00:00:00Z".into()),
    };
    assert_eq!(ids(all), [a]);
    assert_eq!(ids(HistoryQuery { hostname: Some("gamma".into()), ..Default::default() }), Vec::<i64>::new());
    let runs = s.history(&HistoryQuery::default(), &Pick::Matching(&|_, _| true)).unwrap().runs;
    assert!(s
        .history(&HistoryQuery::default(), &Pick::Matching(&|_, _| false))
        .unwrap()
        .runs
        .iter()
        .all(|(_, rs)| rs.is_empty()));
    assert_eq!(runs[0].1.len(), 1);
    assert_eq!(runs[0].1[0].samples, [1.0, 2.0, 3.0]);
    // What a run is named by comes back; its host snapshot need not.
    assert_eq!(runs[1].0.host["hostname"], "beta");
    assert_eq!(runs[1].0.label.as_deref(), Some("nightly"));

    // A run stored later that started earlier comes first, with its own
    // results, whichever way they are picked.
    let early = stored(s, "nightly", "alpha", "6.1", "2024-04-30T10:00:00Z", true);
    let mut lat = crate::testing::stored::ok_result("lat.pipe", &[7.0, 8.0, 9.0]);
    lat.family = "pipes".into();
    s.add_result(early, 1, &lat).unwrap();
    for pick in [
        Pick::Names(vec!["lat.pipe".into()]),
        Pick::Names(vec![lat.family.clone()]),
        Pick::Matching(&|b, _| b == "lat.pipe"),
    ] {
        let runs = s.history(&HistoryQuery::default(), &pick).unwrap().runs;
        assert_eq!(runs.iter().map(|(r, _)| r.id).collect::<Vec<_>>(), [early, a, b, c]);
        assert_eq!(runs[0].1.iter().map(|r| r.samples.clone()).collect::<Vec<_>>(), [vec![7.0, 8.0, 9.0]]);
        assert!(runs[1..].iter().all(|(_, rs)| rs.is_empty()));
    }
    let all = s.history(&HistoryQuery::default(), &Pick::Names(vec!["lat.syscall".into()])).unwrap();
    assert!(all.runs.iter().all(|(_, rs)| rs.len() == 1 && rs[0].benchmark == "lat.syscall"));
    assert_eq!(s.names_in(&all.ids).unwrap(), ["lat.pipe", "lat.syscall"]);

    // `kdelta runs --host`: any status, newest first, results counted for those asked.
    let alpha = s.runs_where(&HistoryQuery { hostname: Some("alpha".into()), ..Default::default() }).unwrap();
    assert_eq!(alpha.iter().map(|r| r.id).collect::<Vec<_>>(), [early, running, c, a]);
    let both = HistoryQuery { label: Some("other".into()), kernel: Some("6.8".into()), ..Default::default() };
    assert_eq!(s.runs_where(&both).unwrap().iter().map(|r| r.id).collect::<Vec<_>>(), [c]);
    let counts = s.result_counts(&[early, a, b]).unwrap();
    assert_eq!((counts[&early], counts[&a], counts.len()), (2, 1, 3));
}

#[test]
fn history_selects_runs_in_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    check(&mut Store::open(&dir.path().join("k.db")).unwrap());
}
