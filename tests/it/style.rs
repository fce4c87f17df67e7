//! `--style`, hyperfine's names for colour and the progress bar: `none`
//! writes no escape sequence even where colour would be on (stdout a
//! terminal, `NO_COLOR` unset), `color` writes them even into a pipe, and
//! a name it does not know is refused in one line.

use crate::common::{Env, TINY_SLEEP};
use std::io::Read;

/// `kdelta ARGS` with stdout on a terminal (a pseudo-terminal this test
/// reads) and `NO_COLOR` unset: what `auto` colours. Returns the status and
/// what reached the terminal.
fn on_a_terminal(e: &Env, args: &[&str]) -> (i32, String) {
    let pty = nix::pty::openpty(None, None).unwrap();
    let mut c = e.spawnable();
    c.env_remove("NO_COLOR")
        .args(args)
        .stdout(std::process::Stdio::from(pty.slave))
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    // `c` holds a copy of the terminal's slave side: gone, the reader sees
    // the end once the child has ended.
    drop(c);
    let mut master = std::fs::File::from(pty.master);
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        // EIO once no process holds the slave side: the end.
        while let Ok(n) = master.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    let code = child.wait().unwrap().code().unwrap_or(-1);
    (code, reader.join().unwrap())
}

#[test]
fn style_none_writes_no_colour_where_auto_would() {
    let e = Env::new();
    let args = |style: &'static str| [&TINY_SLEEP[..], &["--config", "up", "--style", style]].concat();
    // The condition is real: on a terminal, auto colours (the notes dimmed).
    let (code, auto) = on_a_terminal(&e, &args("auto"));
    assert_eq!(code, 0, "{auto}");
    assert!(auto.contains("\x1b["), "{auto:?}");
    for style in ["none", "basic", "nocolor"] {
        let (code, out) = on_a_terminal(&e, &args(style));
        assert_eq!(code, 0, "{out}");
        assert!(out.contains("test.sleep") && !out.contains('\x1b'), "{style}: {out:?}");
    }
    // `color` and `full` colour a pipe too, NO_COLOR set or not.
    for style in ["color", "full"] {
        let out = e.cmd().args(args(style)).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(String::from_utf8_lossy(&out.stdout).contains("\x1b["), "{style}");
    }
}

#[test]
fn an_unknown_style_is_refused_in_one_line_naming_the_allowed_ones() {
    let e = Env::new();
    for sub in ["run", "check"] {
        let out = e.cmd().args([sub, "cmd", "--cmd", "true", "--style", "bogus"]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(if sub == "check" { 128 } else { 2 }), "{err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("\"bogus\"") && err.contains("auto, full, basic, nocolor, color or none"), "{err}");
    }
    assert!(!e.db().exists());
}
