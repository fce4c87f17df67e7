//! The queue's rules against a real server (`$KDELTA_TEST_PG`, as the
//! store's own tests; without it each test prints "SKIPPED: ..." and
//! passes unless `KDELTA_REQUIRE_PG` is set): claiming, leases that run
//! out, a second failure, one run per job.

use super::*;
use crate::store::pg_testdb::TestDb;

/// The queue on a fresh database of the test server.
/// The queue in `db` with `hosts` registered, each labelled `rack=HOST`.
fn queue(db: &TestDb, hosts: &[&str]) -> Queue {
    let mut q = Queue::open(Path::new(&db.url)).unwrap();
    for h in hosts {
        let labels = [("rack".to_string(), h.to_string())].into_iter().collect();
        q.register(h, &labels, "0-1", &serde_json::json!({"hostname": h})).unwrap();
    }
    q
}

const LONG: Duration = Duration::from_secs(600);

#[test]
fn each_job_is_claimed_once_however_many_agents_claim_at_once() {
    let Some(db) = TestDb::new("each_job_is_claimed_once_however_many_agents_claim_at_once") else { return };
    let mut q = queue(&db, &["h"]);
    let mut ids = Vec::new();
    for _ in 0..20 {
        ids.extend(
            q.submit(&Hosts::All, "run", &["lat.syscall".into()], None, "test").unwrap().into_iter().map(|(id, _)| id),
        );
    }
    // Four connections claiming for the same host at once (as agents that
    // shared a name would): SKIP LOCKED hands each job to exactly one.
    let claimers: Vec<_> = (0..4)
        .map(|i| {
            let url = db.url.clone();
            std::thread::spawn(move || {
                let mut q = Queue::open(Path::new(&url)).unwrap();
                let mut got = Vec::new();
                while let Some(j) = q.claim("h", &format!("a{i}"), LONG).unwrap() {
                    got.push(j.id);
                }
                got
            })
        })
        .collect();
    let mut got: Vec<i64> = claimers.into_iter().flat_map(|t| t.join().unwrap()).collect();
    got.sort();
    assert_eq!(got, ids);
}

#[test]
fn a_lost_lease_requeues_and_a_second_failure_ends_the_job_with_both_reasons() {
    let Some(db) = TestDb::new("a_lost_lease_requeues_and_a_second_failure_ends_the_job_with_both_reasons") else {
        return;
    };
    let mut q = queue(&db, &["h"]);
    let id = q.submit(&Hosts::Label("rack".into(), "h".into()), "run", &[], Some("l"), "test").unwrap()[0].0;
    let first = q.claim("h", "a1", Duration::from_secs(1)).unwrap().unwrap();
    assert_eq!((first.id, first.attempt), (id, 1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(q.renew(id, "a1", Duration::from_secs(1)).unwrap(), Lease::Kept);
    let idle = q.hosts().unwrap()[0].idle_s;
    assert!(idle < 0.25, "a renewal is a sign of life: the host was seen {idle} s ago");
    assert!(q.claim("h", "a2", LONG).unwrap().is_none(), "a held job is nobody else's");
    // Its lease runs out (server time): the next look at the queue ends the attempt.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(q.expire().unwrap(), vec![(id, QUEUED.to_string())]);
    assert_eq!(q.renew(id, "a1", LONG).unwrap(), Lease::Lost, "the first agent learns it at its next renewal");
    let second = q.claim("h", "a2", LONG).unwrap().unwrap();
    assert_eq!(second.attempt, 2);
    // The first agent's late report changes nothing.
    assert!(!q.finish(&first, "a1", &End::Done { run: 1, note: None }).unwrap());
    assert!(q.finish(&second, "a2", &End::Failed("the store went away".into())).unwrap());
    let j = &q.jobs(Some("l"), 10).unwrap()[0];
    assert_eq!(j.state, FAILED);
    let why = j.reason.as_deref().unwrap();
    assert!(
        why.contains("attempt 1 on h lost: lease ran out")
            && why.contains("attempt 2 on h failed: the store went away"),
        "{why}"
    );
    assert_eq!(j.attempts.len(), 2);
    assert!(j.attempts[0].ended.is_some());
}

#[test]
fn refused_and_returned_jobs() {
    let Some(db) = TestDb::new("refused_and_returned_jobs") else { return };
    let mut q = queue(&db, &["h", "g"]);
    let jobs = q.submit(&Hosts::All, "run", &[], None, "test").unwrap();
    assert_eq!(jobs.len(), 2);
    let j = q.claim("h", "a", LONG).unwrap().unwrap();
    assert!(q.finish(&j, "a", &End::Returned("stopped".into())).unwrap());
    let j = q.claim("h", "a", LONG).unwrap().unwrap();
    assert_eq!(j.attempt, 2, "put back, taken again");
    assert!(q.finish(&j, "a", &End::Refused("no SMT".into())).unwrap());
    assert!(q.claim("h", "a", LONG).unwrap().is_none(), "a refused job is not tried again");
    let rows = q.jobs(None, 10).unwrap();
    let h = rows.iter().find(|r| r.host == "h").unwrap();
    assert_eq!((h.state.as_str(), h.reason.as_deref()), (REFUSED, Some("no SMT")));
    // The other host's job is untouched by it.
    let g = rows.iter().find(|r| r.host == "g").unwrap();
    assert_eq!(g.state, QUEUED);
    assert!(q.cancel(g.id).unwrap().contains("cancelled"));
    assert!(q.claim("g", "b", LONG).unwrap().is_none());
}

#[test]
fn an_earlier_attempts_run_is_kept_when_complete_and_replaced_when_abandoned() {
    let Some(db) = TestDb::new("an_earlier_attempts_run_is_kept_when_complete_and_replaced_when_abandoned") else {
        return;
    };
    let mut q = queue(&db, &["h"]);
    let id = q.submit(&Hosts::All, "run", &[], None, "test").unwrap()[0].0;
    assert_eq!(q.prepare_run(id).unwrap(), Prior::Nothing);
    let mut run = crate::model::record::RunRecord::begin(
        None,
        "kdelta run".into(),
        vec![],
        serde_json::json!({}),
        Default::default(),
    );
    run.job = Some(id);
    // A writer that is still connected holds its run.
    let mut store = crate::store::Store::open(Path::new(&db.url)).unwrap();
    let rid = store.begin_run(&run).unwrap();
    assert_eq!(q.prepare_run(id).unwrap(), Prior::Busy(rid));
    // A second run for the job cannot be stored.
    let mut other = crate::store::Store::open(Path::new(&db.url)).unwrap();
    assert!(other.begin_run(&run).is_err());
    // Its writer gone, the unfinished run is replaced.
    drop(store);
    let t0 = std::time::Instant::now();
    let prior = loop {
        // The server frees the lock once it has seen the connection end.
        match q.prepare_run(id).unwrap() {
            Prior::Busy(_) if t0.elapsed() < Duration::from_secs(60) => std::thread::sleep(Duration::from_millis(50)),
            p => break p,
        }
    };
    assert_eq!(prior, Prior::Replaced { run: rid, results: 0 });
    let rid = other.begin_run(&run).unwrap();
    other.finish_run(rid, crate::model::record::RunStatus::Complete, &Default::default()).unwrap();
    assert_eq!(q.prepare_run(id).unwrap(), Prior::Stored(rid));
}
