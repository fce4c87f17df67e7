//! Replays on a temporary directory and whole benchmark runs, small and fast.

use super::*;
use crate::measure::sampler::SamplerSettings;
use std::collections::BTreeMap;

fn sampler(dir: &Path) -> Sampler {
    Sampler::new(SamplerSettings::direct(1, dir))
}

fn params(bench: &dyn Benchmark, set: &[(&str, &str)]) -> Params {
    let mut o = BTreeMap::new();
    for (k, v) in set {
        o.insert(k.to_string(), v.to_string());
    }
    let pts = crate::model::params::expand(&bench.info().params, &o, true, bench.info().name).unwrap();
    assert_eq!(pts.len(), 1);
    pts.into_iter().next().unwrap()
}

const TINY: &str = r#"# a tiny session
Deltree "\clients\client1" NT_STATUS_OK
Mkdir "\clients" NT_STATUS_OK
NTCreateX "\clients\client1" 0x1 0x2 1 NT_STATUS_OK
Close 1 NT_STATUS_OK
NTCreateX "\clients\client1\docs" 0x1 0x2 2 NT_STATUS_OK
Close 2 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\docs\A.TXT" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\clients\client1\docs\a.txt" 0x40 0x1 3 NT_STATUS_OBJECT_NAME_NOT_FOUND
NTCreateX "\clients\client1\docs\a.txt" 0x40 0x2 3 NT_STATUS_OK
WriteX 3 0 10000 10000 NT_STATUS_OK
WriteX 3 10000 2000 2000 NT_STATUS_OK
QUERY_FILE_INFORMATION 3 258 NT_STATUS_OK
SET_FILE_INFORMATION 3 1004 NT_STATUS_OK
LockX 3 2147483538 1 NT_STATUS_OK
UnlockX 3 2147483538 1 NT_STATUS_OK
Flush 3 NT_STATUS_OK
ReadX 3 0 4096 4096 NT_STATUS_OK
ReadX 3 10000 4096 2000 NT_STATUS_OK
Close 3 NT_STATUS_OK
QUERY_PATH_INFORMATION "\clients\client1\docs\A.TXT" 1004 NT_STATUS_OK
FIND_FIRST "\clients\client1\docs\*" 260 1366 3 NT_STATUS_OK
FIND_FIRST "\clients\client1\docs\<.JNK" 260 1366 0 NT_STATUS_NO_SUCH_FILE
QUERY_FS_INFORMATION 1 NT_STATUS_OK
Rename "\clients\client1\docs\a.txt" "\clients\client1\docs\b.txt" NT_STATUS_OK
NTCreateX "\clients\client1\docs\c.txt" 0x40 0x5 4 NT_STATUS_OK
WriteX 4 0 300 300 NT_STATUS_OK
Close 4 NT_STATUS_OK
Unlink "\clients\client1\docs\c.txt" 0x6 NT_STATUS_OK
Unlink "\clients\client1\docs\c.txt" 0x6 NT_STATUS_OBJECT_NAME_NOT_FOUND
Mkdir "\clients\client1\empty" NT_STATUS_OK
Rmdir "\clients\client1\empty" NT_STATUS_OK
"#;

/// Every entry under `dir`, relative, with file sizes.
fn tree(dir: &Path) -> Vec<(String, Option<u64>)> {
    let mut out = Vec::new();
    fn walk(base: &Path, p: &Path, out: &mut Vec<(String, Option<u64>)>) {
        let mut ents: Vec<_> = std::fs::read_dir(p).unwrap().flatten().collect();
        ents.sort_by_key(|e| e.file_name());
        for e in ents {
            let m = e.metadata().unwrap();
            let rel = e.path().strip_prefix(base).unwrap().display().to_string();
            if m.is_dir() {
                out.push((rel, None));
                walk(base, &e.path(), out);
            } else {
                out.push((rel, Some(m.len())));
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

#[test]
fn tiny_replay_tree_and_bytes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("clients")).unwrap();
    let lf = loadfile::parse("tiny", TINY).unwrap();
    let mut c = backend_fs::FsClient::new(3, dir.path()).unwrap();
    let mut bytes = 0;
    for op in &lf.ops {
        let out = runner::Backend::exec(&mut c, op).unwrap();
        assert!(op.status.matches(out.ok), "line {}: {:?} -> {out:?}", op.line, op.kind);
        bytes += out.bytes;
    }
    // Writes 10000 + 2000 + 300, reads 4096 + 4096 (dbench counts the size asked).
    assert_eq!(bytes, 10000 + 2000 + 300 + 4096 + 4096);
    assert_eq!(
        tree(dir.path()),
        vec![
            ("clients".to_string(), None),
            ("clients/client3".to_string(), None),
            ("clients/client3/docs".to_string(), None),
            ("clients/client3/docs/b.txt".to_string(), Some(12000)),
        ]
    );
    // A second pass starts from the same state (Deltree) and matches again.
    runner::Backend::reset(&mut c);
    for op in &lf.ops {
        let out = runner::Backend::exec(&mut c, op).unwrap();
        assert!(op.status.matches(out.ok), "pass 2 line {}: {out:?}", op.line);
    }
}

#[test]
fn dbench_run_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let lfp = dir.path().join("tiny.txt");
    std::fs::write(&lfp, TINY).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir(&work).unwrap();
    let b = Dbench;
    for model in ["threads", "processes"] {
        let p = params(
            &b,
            &[
                ("loadfile", lfp.to_str().unwrap()),
                ("model", model),
                ("warmup", "50ms"),
                ("time", "200ms"),
                ("strict", "true"),
                ("dir", work.to_str().unwrap()),
            ],
        );
        b.check(&p).unwrap();
        let mut s = sampler(dir.path());
        b.run(&p, &mut s).unwrap();
        let out = s.finish();
        assert_eq!(out.samples.len(), 1);
        assert!(out.samples[0] > 0.0, "{model}: {:?}", out.samples);
        assert_eq!(out.extras["mismatches"], 0, "{model}: {:?}", out.extras);
        assert!(out.extras["ops"]["WriteX"]["count"].as_u64().unwrap() > 0);
        assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0, "{model}: working tree left behind");
    }
}

#[test]
fn dbench_generated_default_runs() {
    let dir = tempfile::tempdir().unwrap();
    let b = Dbench;
    let p = params(&b, &[("warmup", "50ms"), ("time", "300ms"), ("model", "threads"), ("clients", "2")]);
    let mut s = sampler(dir.path());
    b.run(&p, &mut s).unwrap();
    let out = s.finish();
    assert!(out.samples[0] > 0.0);
    assert_eq!(out.extras["mismatches"], 0, "{:?}", out.extras.get("mismatch_examples"));
    // Only the sampler's list of the trees it made (for the harness) is left.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, [crate::measure::owned::LIST], "working tree left behind");
}

#[test]
fn check_refuses_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let lfp = dir.path().join("bad.txt");
    std::fs::write(&lfp, "Close 1 NT_STATUS_OK\nUnlink \"\\etc\\passwd\" 0 NT_STATUS_OK\n").unwrap();
    let b = Dbench;
    let e = b.check(&params(&b, &[("loadfile", lfp.to_str().unwrap())])).unwrap_err();
    assert!(crate::error::is_bad_input(&e));
    assert!(e.to_string().contains("line 2") && e.to_string().contains("outside the client's directory"), "{e}");
    std::fs::write(&lfp, "SMBopenx x y\n").unwrap();
    let e = b.check(&params(&b, &[("loadfile", lfp.to_str().unwrap())])).unwrap_err();
    assert!(e.to_string().contains("dbench 1.x"), "{e}");
    let e = b.check(&params(&b, &[("dir", "/nonexistent/kdelta")])).unwrap_err();
    assert!(crate::error::is_bad_input(&e));
    let t = Tbench;
    assert!(crate::error::is_bad_input(&t.check(&params(&t, &[("server", "no port here")])).unwrap_err()));
}

#[test]
fn tbench_runs_against_its_own_server() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tbench;
    for model in ["threads", "processes"] {
        let p = params(&t, &[("warmup", "50ms"), ("time", "200ms"), ("model", model)]);
        let mut s = sampler(dir.path());
        t.run(&p, &mut s).unwrap();
        let out = s.finish();
        assert!(out.samples[0] > 0.0, "{model}");
        assert!(out.extras["ops"]["ReadX"]["count"].as_u64().unwrap() > 0);
    }
}

/// A server that answers 50 frames per connection, then drops it.
fn dying_server(conns: usize) -> (String, std::thread::JoinHandle<()>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    let h = std::thread::spawn(move || {
        let mut workers = Vec::new();
        for _ in 0..conns {
            let (mut c, _) = l.accept().unwrap();
            workers.push(std::thread::spawn(move || {
                for _ in 0..50 {
                    let mut hdr = [0u8; 8];
                    if c.read_exact(&mut hdr).is_err() {
                        return;
                    }
                    let len = u32::from_be_bytes(hdr[..4].try_into().unwrap()) as usize;
                    let reply = u32::from_be_bytes(hdr[4..].try_into().unwrap());
                    let mut rest = vec![0u8; len - 4];
                    c.read_exact(&mut rest).unwrap();
                    let mut out = reply.to_be_bytes().to_vec();
                    out.resize(4 + reply as usize, 0);
                    c.write_all(&out).unwrap();
                }
            }));
        }
        for w in workers {
            w.join().unwrap();
        }
    });
    (addr, h)
}

#[test]
fn tbench_lost_server_fails_clearly() {
    let (addr, h) = dying_server(2);
    let dir = tempfile::tempdir().unwrap();
    let lfp = dir.path().join("tiny.txt");
    std::fs::write(&lfp, TINY).unwrap();
    let t = Tbench;
    let p = params(
        &t,
        &[
            ("warmup", "50ms"),
            ("time", "20s"),
            ("model", "threads"),
            ("server", &addr),
            ("loadfile", lfp.to_str().unwrap()),
        ],
    );
    let mut s = sampler(dir.path());
    let t0 = std::time::Instant::now();
    let e = t.run(&p, &mut s).unwrap_err().to_string();
    assert!(e.contains("closed the connection"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(15), "the clients should not wait for the time limit");
    h.join().unwrap();
}

#[test]
fn no_space_ends_the_replay_with_an_error() {
    // /dev/full answers every write with ENOSPC.
    if !Path::new("/dev/full").exists() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("clients/client1")).unwrap();
    // A device node like /dev/full (1, 7) in the tree: the backend follows no link.
    let full = dir.path().join("clients/client1/full");
    let dev = nix::sys::stat::makedev(1, 7);
    if nix::sys::stat::mknod(
        &full,
        nix::sys::stat::SFlag::S_IFCHR,
        nix::sys::stat::Mode::from_bits_truncate(0o666),
        dev,
    )
    .is_err()
    {
        return; // not allowed to make device nodes here
    }
    let lf = loadfile::parse(
        "full",
        "NTCreateX \"\\clients\\client1\\full\" 0x40 0x1 1 NT_STATUS_OK\nWriteX 1 0 4096 4096 NT_STATUS_OK\n",
    )
    .unwrap();
    let mut c = backend_fs::FsClient::new(1, dir.path()).unwrap();
    assert!(runner::Backend::exec(&mut c, &lf.ops[0]).unwrap().ok);
    let e = runner::Backend::exec(&mut c, &lf.ops[1]).unwrap_err().to_string();
    assert!(e.contains("line 2: WriteX pwrite") && e.contains("No space left"), "{e}");
}

/// The bug: `strict` is a boolean parameter, so `strict=1` passed validation,
/// but the dbench read it as `== "true"` and ran non-strict.
#[test]
fn strict_1_runs_strict() {
    for (v, want) in
        [("1", true), ("true", true), ("yes", true), ("on", true), ("0", false), ("false", false), ("off", false)]
    {
        let p = params(&Dbench, &[("strict", v)]);
        assert_eq!(Common::from(&p).unwrap().spec.strict, want, "strict={v}");
    }
    assert!(!Common::from(&params(&Tbench, &[])).unwrap().spec.strict);
}

/// Links planted in the tree are refused and counted, never
/// followed, whether they stand for a directory on the way or for the last
/// name; `Deltree` removes a link without entering it.
#[test]
fn planted_links_are_refused_not_followed() {
    let dir = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    std::fs::write(victim.path().join("keep"), "x").unwrap();
    let c1 = dir.path().join("clients/client1");
    std::fs::create_dir_all(c1.join("real")).unwrap();
    std::os::unix::fs::symlink(victim.path(), c1.join("d")).unwrap();
    std::os::unix::fs::symlink(victim.path().join("new"), c1.join("f")).unwrap();
    std::os::unix::fs::symlink(victim.path(), c1.join("real/inner")).unwrap();
    let lf = loadfile::parse(
        "hostile",
        r#"NTCreateX "\clients\client1\d\x" 0x40 0x2 1 NT_STATUS_OK
NTCreateX "\clients\client1\f" 0x40 0x5 2 NT_STATUS_OK
Mkdir "\clients\client1\d\sub" NT_STATUS_OK
Unlink "\clients\client1\d\keep" 0x6 NT_STATUS_OK
NTCreateX "\clients\client1\real\a" 0x40 0x2 3 NT_STATUS_OK
Close 3 NT_STATUS_OK
Rename "\clients\client1\real\a" "\clients\client1\d\a" NT_STATUS_OK
FIND_FIRST "\clients\client1\d\*" 260 1366 3 NT_STATUS_OK
Deltree "\clients\client1\real" NT_STATUS_OK
"#,
    )
    .unwrap();
    let mut c = backend_fs::FsClient::new(1, dir.path()).unwrap();
    let outs: Vec<bool> = lf.ops.iter().map(|op| runner::Backend::exec(&mut c, op).unwrap().ok).collect();
    assert_eq!(outs, [false, false, false, false, true, true, false, false, true]);
    assert_eq!(runner::Backend::refused(&c), 6);
    let left: Vec<_> = std::fs::read_dir(victim.path()).unwrap().flatten().map(|e| e.file_name()).collect();
    assert_eq!(left, ["keep"], "something was made or removed through a link");
    assert!(!c1.join("real").exists(), "Deltree removes the tree and the link in it");
    // The tree's own root must be a directory, not a link to one.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(victim.path(), &link).unwrap();
    assert!(backend_fs::FsClient::new(1, &link).is_err());
}

/// A loadfile whose timestamps put every payload operation outside the
/// timed phase of a run that ends within its first pass is refused; one
/// with payload due in it, or whose passes fit in the run, is not.
#[test]
fn timestamps_that_leave_the_timed_phase_idle_are_refused() {
    let lf = |late: &str| {
        let text = format!(
            "0.000 NTCreateX \"\\clients\\client1\\f\" 0x0 0x5 1 NT_STATUS_OK\n\
             0.020 WriteX 1 0 65536 65536 NT_STATUS_OK\n\
             {late} ReadX 1 0 65536 65536 NT_STATUS_OK\n\
             {late} Close 1 NT_STATUS_OK\n"
        );
        loadfile::parse("timed", &text).unwrap()
    };
    let s = Duration::from_secs;
    let why = idle_timed_phase(&lf("30.000"), s(2), s(3)).unwrap();
    assert!(why.contains("run to 30.000 s") && why.contains("between 2 s and 5 s"), "{why}");
    assert_eq!(idle_timed_phase(&lf("3.000"), s(2), s(3)), None, "payload due in the timed phase");
    assert_eq!(idle_timed_phase(&lf("1.000"), s(2), s(3)), None, "passes repeat within the run");
    assert_eq!(idle_timed_phase(&loadfile::parse("tiny", TINY).unwrap(), s(2), s(3)), None);
}
