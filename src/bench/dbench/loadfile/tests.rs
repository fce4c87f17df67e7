//! Loadfile parsing and validation tests.

use super::parse::tokenize;
use super::*;

#[test]
fn load_refuses_what_is_not_a_bounded_regular_file() {
    let d = tempfile::tempdir().unwrap();
    let is_bad = |p: &Path, want: &str| {
        let e = load(p).unwrap_err();
        assert!(crate::error::is_bad_input(&e), "{e}");
        let s = e.to_string();
        assert!(s.contains(want) && !s.contains('\n'), "{s}");
    };
    is_bad(Path::new("/dev/zero"), "a device");
    is_bad(d.path(), "a directory");
    let fifo = d.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    is_bad(&fifo, "a FIFO");
    let big = d.path().join("big.txt");
    std::fs::File::create(&big).unwrap().set_len(MAX_BYTES + 1).unwrap();
    is_bad(&big, "over the limit");
    is_bad(&d.path().join("missing"), "cannot read it");
    let ok = d.path().join("ok.txt");
    std::fs::write(&ok, "NTCreateX \"\\clients\\client1\\f\" 0x40 0x1 1 NT_STATUS_OK\n").unwrap();
    assert_eq!(load(&ok).unwrap().ops.len(), 1);
}

/// Finding 7: a line of millions of one-letter tokens was split into as many
/// `String`s (1.1-1.9 GB for a 40-63 MB line) before any check; now the
/// tokens stop at MAX_TOKENS with a one-line error, and a long comment is
/// still a comment.
#[test]
fn a_line_of_many_tokens_stops_at_the_token_bound() {
    let line = format!("NTCreateX {}", "a ".repeat(2_000_000));
    let e = parse("f", &format!("{line}\n")).unwrap_err().to_string();
    assert!(e.starts_with("loadfile f line 1: more than 16 tokens") && !e.contains('\n') && e.len() < 300, "{e}");
    let toks = tokenize(&"x ".repeat(MAX_TOKENS + 1)).unwrap_err().to_string();
    assert!(toks.contains("more than 16 tokens"), "{toks}");
    assert_eq!(tokenize(&"x ".repeat(MAX_TOKENS)).unwrap().len(), MAX_TOKENS);
    let comment = format!("# {}\nClose 1 NT_STATUS_OK\n", "word ".repeat(100_000));
    assert_eq!(parse("f", &comment).unwrap().ops.len(), 1);
}

#[test]
fn long_lines_are_quoted_short() {
    let e = ParseError { file: "f".into(), line: 3, msg: format!("bad token {:?}", "x".repeat(100_000)) };
    let s = e.to_string();
    assert!(s.len() < 300 && s.ends_with("..."), "{}", s.len());
}

fn one(line: &str) -> Op {
    parse_line(line, 1).unwrap().unwrap()
}
fn err(line: &str) -> String {
    parse_line(line, 1).unwrap_err().to_string()
}
fn cp(rest: &[&str]) -> SharePath {
    SharePath { place: Place::Client(rest.iter().map(|s| s.to_string()).collect()) }
}

#[test]
fn every_operation() {
    let f = cp(&["~dmtmp", "F.TXT"]);
    let cases: Vec<(&str, OpKind)> = vec![
        (
            r#"NTCreateX "\clients\client1\~dmtmp\F.TXT" 0x40 0x2 9938 NT_STATUS_OK"#,
            OpKind::NtCreateX { path: f.clone(), options: 0x40, disposition: 2, handle: 9938 },
        ),
        ("Close 9938 NT_STATUS_OK", OpKind::Close { handle: 9938 }),
        (
            r#"Rename "\clients\client1\a" "\clients\client1\b" NT_STATUS_OK"#,
            OpKind::Rename { old: cp(&["a"]), new: cp(&["b"]) },
        ),
        (r#"Unlink "\clients\client1\~dmtmp\F.TXT" 0x6 NT_STATUS_OK"#, OpKind::Unlink { path: f.clone(), attr: 6 }),
        (r#"Deltree "\clients\client1" NT_STATUS_OK"#, OpKind::Deltree { path: cp(&[]) }),
        (r#"Rmdir "\clients\client1\d" NT_STATUS_OK"#, OpKind::Rmdir { path: cp(&["d"]) }),
        (r#"Mkdir "\clients" NT_STATUS_OK"#, OpKind::Mkdir { path: SharePath { place: Place::Clients } }),
        (
            r#"QUERY_PATH_INFORMATION "\clients\client1\~dmtmp\F.TXT" 1004 NT_STATUS_OBJECT_NAME_NOT_FOUND"#,
            OpKind::QueryPathInfo { path: f.clone(), level: 1004 },
        ),
        ("QUERY_FILE_INFORMATION 9938 258 NT_STATUS_OK", OpKind::QueryFileInfo { handle: 9938, level: 258 }),
        ("QUERY_FS_INFORMATION 1 NT_STATUS_OK", OpKind::QueryFsInfo { level: 1 }),
        ("SET_FILE_INFORMATION 9938 1004 NT_STATUS_OK", OpKind::SetFileInfo { handle: 9938, level: 1004 }),
        (
            r#"FIND_FIRST "\clients\client1\~dmtmp\*" 260 1366 11 NT_STATUS_OK"#,
            OpKind::FindFirst { pattern: cp(&["~dmtmp", "*"]), level: 260, maxcnt: 1366, count: 11 },
        ),
        (
            "WriteX 9938 65536 65536 65536 NT_STATUS_OK",
            OpKind::WriteX { handle: 9938, offset: 65536, size: 65536, ret_size: 65536 },
        ),
        ("ReadX 9938 0 4096 100 NT_STATUS_OK", OpKind::ReadX { handle: 9938, offset: 0, size: 4096, ret_size: 100 }),
        ("LockX 10430 2147483538 1 NT_STATUS_OK", OpKind::LockX { handle: 10430, offset: 2147483538, size: 1 }),
        ("UnlockX 10430 2147483538 1 NT_STATUS_OK", OpKind::UnlockX { handle: 10430, offset: 2147483538, size: 1 }),
        ("Flush 10012 NT_STATUS_OK", OpKind::Flush { handle: 10012 }),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (line, kind) in cases {
        let op = one(line);
        assert_eq!(op.kind, kind, "{line}");
        seen.insert(op.kind.name());
        // Round trip through the formatter.
        assert_eq!(one(&format_op(&op)), op, "{line}");
    }
    assert_eq!(seen.len(), OP_NAMES.len());
}

#[test]
fn every_status_form() {
    let st = |s: &str| one(&format!("Close 1 {s}")).status;
    assert_eq!(st("NT_STATUS_OK"), Status::Ok("NT_STATUS_OK".into()));
    assert_eq!(st("SUCCESS"), Status::Ok("SUCCESS".into()));
    assert_eq!(st("0x00000000"), Status::Ok("0x00000000".into()));
    assert_eq!(st("0xC0000034"), Status::Fail("0xC0000034".into()));
    assert_eq!(st("NT_STATUS_NO_SUCH_FILE"), Status::Fail("NT_STATUS_NO_SUCH_FILE".into()));
    assert_eq!(st("ERROR"), Status::Fail("ERROR".into()));
    assert_eq!(st("*"), Status::Any);
    assert!(Status::Any.matches(false) && Status::Any.matches(true));
    assert!(st("ERROR").matches(false) && !st("ERROR").matches(true));
    for bad in ["OK", "NT_STATUS_", "0x", "0xZZ", "nt_status_ok", "42"] {
        let e = err(&format!("Close 1 {bad}"));
        assert!(e.contains("expected a status"), "{bad}: {e}");
    }
}

#[test]
fn quoting_backslashes_comments_timestamps() {
    assert_eq!(tokenize(r#"a "b c" \x\y "\p q\""#).unwrap(), vec!["a", "b c", "/x/y", "/p q/"]);
    assert_eq!(tokenize(r#"""#).unwrap_err().to_string(), "unterminated double quote");
    assert_eq!(tokenize(r#"x "" y"#).unwrap(), vec!["x", "", "y"]);
    let op = one(r#"NTCreateX "\clients\client1\my file.doc" 0x40 0x5 7 NT_STATUS_OK"#);
    assert_eq!(op.kind, OpKind::NtCreateX { path: cp(&["my file.doc"]), options: 0x40, disposition: 5, handle: 7 });
    // Unquoted, forward slashes, no leading slash: the same path.
    let op2 = one("Unlink clients/client1/x 0 NT_STATUS_OK");
    assert_eq!(op2.kind, OpKind::Unlink { path: cp(&["x"]), attr: 0 });
    assert_eq!(parse_line("   ", 3).unwrap(), None);
    assert_eq!(parse_line("# a comment", 3).unwrap(), None);
    assert_eq!(parse_line("", 3).unwrap(), None);
    assert_eq!(parse_line("Close 5 NT_STATUS_OK\r", 3).unwrap().unwrap().kind, OpKind::Close { handle: 5 });
    let t = one("12.5 Close 5 NT_STATUS_OK");
    assert_eq!(t.time, Some(12.5));
    assert!(err("12x Close 5 NT_STATUS_OK").contains("timestamp"));
}

#[test]
fn malformed_lines_say_what_was_expected() {
    assert!(err("SMBopenx 1 2").contains("dbench 1.x loadfile"));
    assert!(err("Frobnicate 1 NT_STATUS_OK").contains("unknown operation"));
    assert!(err("WriteX 1 2 3 NT_STATUS_OK").contains("WriteX expects 4 arguments (handle offset size returned_size)"));
    assert!(err("Close").contains("no status"));
    assert!(err("Close x NT_STATUS_OK").contains("expected handle"));
    assert!(err("ReadX 1 0 99999999999 1 NT_STATUS_OK").contains("too large"));
    assert!(err(r#"NTCreateX "\clients\client1\f" 0x40 0x9 1 NT_STATUS_OK"#).contains("disposition"));
    let e = parse("t.txt", "Close 1 NT_STATUS_OK\n\nClose 1 OK\n").unwrap_err();
    assert_eq!(e.line, 3);
    assert!(e.to_string().starts_with("loadfile t.txt line 3: expected a status"), "{e}");
    assert!(parse("t.txt", "# nothing\n\n").unwrap_err().to_string().contains("no operations"));
    let e = parse_bytes("b.txt", b"Close 1 NT_STATUS_OK\nClose \xff NT_STATUS_OK\n").unwrap_err();
    assert_eq!((e.line, e.msg.as_str()), (2, "the line is not valid UTF-8 text"));
}

#[test]
fn path_escapes_refused() {
    for bad in [
        r#"Unlink "\etc\passwd" 0 NT_STATUS_OK"#,
        r#"Unlink "/etc/passwd" 0 NT_STATUS_OK"#,
        r#"Unlink "\clients\client2\x" 0 NT_STATUS_OK"#,
        r#"Unlink "\clients\client1\..\client2\x" 0 NT_STATUS_OK"#,
        r#"Unlink "\clients\client1\..\..\..\x" 0 NT_STATUS_OK"#,
        r#"Deltree "\clients" NT_STATUS_OK"#,
        r#"Rmdir "\" NT_STATUS_OK"#,
        r#"Rename "\clients\client1\a" "\tmp\a" NT_STATUS_OK"#,
        r#"NTCreateX "\clients" 0x40 0x5 1 NT_STATUS_OK"#,
    ] {
        let e = err(bad);
        assert!(
            e.contains("outside the client's directory")
                || e.contains("climbs above")
                || e.contains("shared by all clients"),
            "{bad}: {e}"
        );
    }
    // `..` that stays inside is fine; ancestors for harmless operations too.
    assert_eq!(
        one(r#"Unlink "\clients\client1\a\..\b" 0 NT_STATUS_OK"#).kind,
        OpKind::Unlink { path: cp(&["b"]), attr: 0 }
    );
    one(r#"NTCreateX "\clients" 0x1 0x2 1 NT_STATUS_OK"#);
    one(r#"QUERY_PATH_INFORMATION "\" 1004 NT_STATUS_OK"#);
}

#[test]
fn names_as_dbench_builds_them() {
    let p = cp(&["~dmtmp", "x"]);
    assert_eq!(p.relative(7), "clients/client7/~dmtmp/x");
    assert_eq!(p.dbench_name_len(7), "./clients/client7/~dmtmp/x".len());
    assert_eq!(SharePath { place: Place::Clients }.relative(3), "clients");
}

#[test]
fn space_estimate() {
    let lf = parse(
        "t",
        "NTCreateX \"\\clients\\client1\\a\" 0x40 0x2 1 NT_STATUS_OK\nWriteX 1 0 10000 10000 NT_STATUS_OK\nWriteX 1 1000000000 1 1 NT_STATUS_OK\nClose 1 NT_STATUS_OK\n\
         Rename \"\\clients\\client1\\a\" \"\\clients\\client1\\b\" NT_STATUS_OK\n\
         NTCreateX \"\\clients\\client1\\c\" 0x40 0x2 2 NT_STATUS_OK\nWriteX 2 0 4096 4096 NT_STATUS_OK\nClose 2 NT_STATUS_OK\n\
         Deltree \"\\clients\\client1\" NT_STATUS_OK\n\
         NTCreateX \"\\clients\\client1\\b\" 0x40 0x5 3 NT_STATUS_OK\nWriteX 3 0 100 100 NT_STATUS_OK\n",
    )
    .unwrap();
    // Peak: a (3 blocks + 1) and c (1 block + 1) before the Deltree.
    assert_eq!(space_per_client(&lf), (3 + 1 + 1 + 1) * 4096);
}

/// Debian's dbench package ships the 458k-line NetBench trace; parse all
/// of it when it is installed (skipped otherwise).
#[test]
fn debian_client_txt() {
    let path = Path::new("/usr/share/dbench/client.txt");
    if !path.exists() {
        eprintln!("skipped: {} not installed (apt-get install dbench)", path.display());
        return;
    }
    let lf = load(path).unwrap();
    assert!(lf.ops.len() > 450_000, "{}", lf.ops.len());
    let per_client = space_per_client(&lf);
    // The study: about 21 MB per client.
    assert!((15_000_000..30_000_000).contains(&per_client), "{per_client}");
}

mod props {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
        #[test]
        fn never_panics(s in "\\PC{0,120}") {
            let _ = parse_line(&s, 1);
        }

        #[test]
        fn never_panics_on_near_valid(op in prop::sample::select(OP_NAMES.to_vec()),
                                      args in prop::collection::vec("[\"\\\\a-z0-9x./ ]{0,12}", 0..6),
                                      st in prop::sample::select(vec!["NT_STATUS_OK", "*", "0x1", "ERROR", "bogus"])) {
            let line = format!("{op} {} {st}", args.join(" "));
            let _ = parse_line(&line, 1);
        }

        #[test]
        fn valid_lines_round_trip(h in 0u32..100000, off in 0u64..(1u64 << 40), size in 0u32..65536,
                                  name in "[A-Za-z0-9_~.]{1,12}", which in 0usize..6, ok in any::<bool>()) {
            let status = if ok { "NT_STATUS_OK" } else { "NT_STATUS_OBJECT_NAME_NOT_FOUND" };
            prop_assume!(name != "." && name != "..");
            let line = match which {
                0 => format!("NTCreateX \"\\clients\\client1\\{name}\" 0x40 0x1 {h} {status}"),
                1 => format!("ReadX {h} {off} {size} {size} {status}"),
                2 => format!("WriteX {h} {off} {size} {size} {status}"),
                3 => format!("QUERY_PATH_INFORMATION \"\\clients\\client1\\d\\{name}\" 1004 {status}"),
                4 => format!("LockX {h} {off} {size} {status}"),
                _ => format!("FIND_FIRST \"\\clients\\client1\\{name}\" 260 1366 {size} {status}"),
            };
            let op = parse_line(&line, 1).unwrap().unwrap();
            let again = parse_line(&format_op(&op), 1).unwrap().unwrap();
            prop_assert_eq!(again, op);
        }
    }
}
