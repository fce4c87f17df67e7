//! The client/server benchmarks really across hosts: two network namespaces
//! joined by a veth pair, `kdelta serve chat`, `tbench` and `lat.tcp` in one,
//! the clients (`--param server=ADDR:PORT`) in the other, then again with
//! 1 ms of netem delay on the link, which must lower chat's and tbench's
//! figures and raise lat.tcp's. Needs root and iproute2 (`ip netns`, `tc`):
//! without them it prints "SKIPPED: ..." and passes (`KDELTA_TEST_NO_ROOT=1`
//! forces the skip, to check a machine without root). The namespaces, the
//! link and the servers are removed by a guard's `Drop`, also when an
//! assertion fails.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const KDELTA: &str = env!("CARGO_BIN_EXE_kdelta");

/// Two namespaces, the link between them and the servers started in them;
/// everything goes when this is dropped.
struct Lab {
    server_ns: String,
    client_ns: String,
    server_dev: String,
    servers: Vec<Child>,
}

fn ip(args: &[&str]) -> Result<(), String> {
    let out = Command::new("ip").args(args).output().map_err(|e| format!("ip: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("ip {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

impl Lab {
    /// Make the namespaces and the link, or say why not.
    fn new() -> Result<Lab, String> {
        if std::env::var_os("KDELTA_TEST_NO_ROOT").is_some() || !nix::unistd::geteuid().is_root() {
            return Err("not root (network namespaces need CAP_SYS_ADMIN)".into());
        }
        Command::new("ip").arg("-V").output().map_err(|e| format!("no iproute2 `ip` ({e}); install iproute2"))?;
        let tag = std::process::id() % 100_000;
        let lab = Lab {
            server_ns: format!("kdelta-s{tag}"),
            client_ns: format!("kdelta-c{tag}"),
            server_dev: format!("kds{tag}"),
            servers: Vec::new(),
        };
        let client_dev = format!("kdc{tag}");
        // From here the guard removes whatever was made.
        ip(&["netns", "add", &lab.server_ns])?;
        ip(&["netns", "add", &lab.client_ns])?;
        ip(&[
            "link",
            "add",
            &lab.server_dev,
            "netns",
            &lab.server_ns,
            "type",
            "veth",
            "peer",
            "name",
            &client_dev,
            "netns",
            &lab.client_ns,
        ])?;
        ip(&["-n", &lab.server_ns, "addr", "add", "10.213.0.1/24", "dev", &lab.server_dev])?;
        ip(&["-n", &lab.client_ns, "addr", "add", "10.213.0.2/24", "dev", &client_dev])?;
        for (ns, dev) in [(&lab.server_ns, &lab.server_dev), (&lab.client_ns, &client_dev)] {
            ip(&["-n", ns, "link", "set", dev, "up"])?;
            ip(&["-n", ns, "link", "set", "lo", "up"])?;
        }
        Ok(lab)
    }

    /// `kdelta serve NAME` in the server namespace, once it listens.
    fn serve(&mut self, name: &str, port: u16) -> String {
        let addr = format!("10.213.0.1:{port}");
        let mut c = Command::new("ip")
            .args(["netns", "exec", &self.server_ns, KDELTA, "serve", name, "--listen", &addr, "--public"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()
            .expect("starting kdelta serve");
        let err = c.stderr.take().unwrap();
        self.servers.push(c);
        let mut lines = BufReader::new(err).lines();
        loop {
            match lines.next() {
                Some(Ok(l)) if l.contains("listening on") => break,
                Some(Ok(_)) => {}
                _ => panic!("kdelta serve {name} ended before listening"),
            }
        }
        // Keep draining its stderr so it never blocks on a full pipe.
        std::thread::spawn(move || lines.for_each(drop));
        addr
    }

    /// The median of one benchmark run from the client namespace.
    fn run(&self, bench: &str, params: &[&str], db: &std::path::Path) -> f64 {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.client_ns, KDELTA, "--db"])
            .arg(db)
            .args(["run", bench, "--quick", "--format", "json"]);
        for p in params {
            cmd.args(["--param", p]);
        }
        let out = cmd.output().expect("running the client");
        assert!(out.status.success(), "{bench} {params:?}: {}", String::from_utf8_lossy(&out.stderr));
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
        let r = &v["results"][0];
        assert_eq!(r["status"], "ok", "{r}");
        r["median"].as_f64().unwrap_or_else(|| panic!("no median: {r}"))
    }

    /// Add `ms` of delay on the server's end of the link; Err when this
    /// kernel has no netem (CONFIG_NET_SCH_NETEM) or `tc` is missing.
    fn delay(&self, ms: u32) -> Result<(), String> {
        let ms = format!("{ms}ms");
        ip(&[
            "netns",
            "exec",
            &self.server_ns,
            "tc",
            "qdisc",
            "add",
            "dev",
            &self.server_dev,
            "root",
            "netem",
            "delay",
            &ms,
        ])
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.servers {
            let _ =
                nix::sys::signal::kill(nix::unistd::Pid::from_raw(c.id() as i32), nix::sys::signal::Signal::SIGTERM);
        }
        for c in &mut self.servers {
            let _ = c.wait();
        }
        // Deleting a namespace deletes its end of the veth pair, and so both.
        let _ = ip(&["netns", "del", &self.server_ns]);
        let _ = ip(&["netns", "del", &self.client_ns]);
    }
}

#[test]
fn chat_tbench_and_lat_tcp_across_namespaces_and_delay() {
    let mut lab = match Lab::new() {
        Ok(l) => l,
        Err(why) => {
            eprintln!("SKIPPED: chat/tbench/lat.tcp across network namespaces: {why}");
            return;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("k.db");
    let chat = lab.serve("chat", 7001);
    let tbench = lab.serve("tbench", 7002);
    let tcp = lab.serve("lat.tcp", 7003);
    let chat_p = format!("server={chat}");
    let tbench_p = format!("server={tbench}");
    let tcp_p = format!("server={tcp}");
    let tb = ["time=1s", "warmup=200ms"];
    let measure = |lab: &Lab| {
        (
            lab.run("chat.rooms", &[&chat_p, "rooms=1", "users=10", "messages=50"], &db),
            lab.run("tbench.throughput", &[&tbench_p, tb[0], tb[1]], &db),
            lab.run("lat.tcp", &[&tcp_p], &db),
        )
    };
    let (c0, t0, l0) = measure(&lab);
    eprintln!("across the veth pair: chat.rooms {c0:.0} msg/s, tbench {t0:.2} MB/s, lat.tcp {l0:.1} us");
    assert!(c0 > 0.0 && t0 > 0.0 && l0 > 0.0);
    if let Err(why) = lab.delay(1) {
        eprintln!("SKIPPED: the 1 ms netem delay case: {why} (this kernel lacks sch_netem: CONFIG_NET_SCH_NETEM)");
        return;
    }
    let (c1, t1, l1) = measure(&lab);
    eprintln!("with 1 ms netem delay: chat.rooms {c1:.0} msg/s, tbench {t1:.2} MB/s, lat.tcp {l1:.1} us");
    assert!(c1 < c0, "chat.rooms did not drop with 1 ms delay: {c0} -> {c1}");
    assert!(t1 < t0, "tbench did not drop with 1 ms delay: {t0} -> {t1}");
    assert!(l1 > l0 + 500.0, "lat.tcp did not rise by the delay: {l0} -> {l1} us");
}
