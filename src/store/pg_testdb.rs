//! A throwaway PostgreSQL database for tests (the store's and the fleet
//! queue's): `$KDELTA_TEST_PG` names a database the tests may connect to and
//! create databases from (`.ci/run` starts a throwaway cluster and sets it);
//! without it `TestDb::new` prints "SKIPPED: ..." and gives `None`, unless
//! `KDELTA_REQUIRE_PG` is set.

use postgres::NoTls;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh database on the test server, dropped when this is dropped (the
/// unit tests' and, through `kdelta::testing::TestDb`, the integration tests').
pub struct TestDb {
    pub url: String,
    admin: String,
    name: String,
}

/// `url` with its database name replaced by `name`.
fn with_dbname(url: &str, name: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let q = rest.find('?').unwrap_or(rest.len());
    let (path, query) = rest.split_at(q);
    let authority = path.split('/').next().unwrap_or("");
    format!("{scheme}://{authority}/{name}{query}")
}

impl TestDb {
    pub fn new(test: &str) -> Option<TestDb> {
        let Some(admin) = std::env::var("KDELTA_TEST_PG").ok().filter(|s| !s.is_empty()) else {
            assert!(
                std::env::var_os("KDELTA_REQUIRE_PG").is_none(),
                "{test}: KDELTA_REQUIRE_PG is set but KDELTA_TEST_PG is not"
            );
            eprintln!("SKIPPED: {test}: no PostgreSQL server (set KDELTA_TEST_PG=postgresql://... as .ci/run does)");
            return None;
        };
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!("kdelta_t_{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let mut c = postgres::Client::connect(&admin, NoTls).expect("connecting to KDELTA_TEST_PG");
        c.batch_execute(&format!("DROP DATABASE IF EXISTS {name}")).unwrap();
        c.batch_execute(&format!("CREATE DATABASE {name}")).unwrap();
        Some(TestDb { url: with_dbname(&admin, &name), admin, name })
    }

    /// A client of the database, its kdelta schema first on the search path.
    pub fn sql(&self) -> postgres::Client {
        let mut c = postgres::Client::connect(&self.url, NoTls).unwrap();
        c.batch_execute("SET search_path TO kdelta").unwrap();
        c
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        if let Ok(mut c) = postgres::Client::connect(&self.admin, NoTls) {
            let _ = c.batch_execute(&format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name));
        }
    }
}
