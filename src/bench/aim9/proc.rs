//! AIM9's process tests: `fork_test`, `exec_test`, `shell_rtns_1..3`.
//!
//! Everything the child needs (paths, argv) is built before `fork`, so the
//! child only calls `execv` and `_exit`: safe even if the parent has threads.
//! Every child is reaped before the call returns; a child that does not exit
//! with status 0 fails the test.
//!
//! The scripts kdelta writes in the test's work directory:
//! - exec_test: `exec.sh` = `#!/bin/sh` + `exit 0`, exec'd directly (the
//!   kernel loads /bin/sh for it): one "program load", as in AIM9;
//! - shell_rtns_1: `/bin/sh shell1.sh`, builtins only: a 10-step counting
//!   loop with arithmetic expansion, a `case` and string tests;
//! - shell_rtns_2: `/bin/sh shell2.sh`, two external programs: `ls -l` of
//!   the work directory and `cat` of the script, both to /dev/null;
//! - shell_rtns_3: `/bin/sh shell3.sh`, a three-stage pipeline:
//!   `printf` of five lines | `sort` | `wc -l`, checked to count 5.

use super::runner::{Ctx, Work};
use anyhow::{bail, Context, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Exit status of a child whose exec met ETXTBSY: the script was still open
/// for writing in a child some other thread of ours forked meanwhile.
const BUSY: i32 = 126;

/// Fork; in the child exec `argv` (or `_exit(0)` when empty); reap it and
/// fail unless it exited 0.
fn spawn_wait(argv: &[CString]) -> Result<()> {
    let status = spawn_status(argv)?;
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let what = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
        bail!("child `{what}` did not exit 0 (wait status {status:#x})");
    }
    Ok(())
}

/// Fork, exec (or `_exit(0)`), reap; the wait status.
fn spawn_status(argv: &[CString]) -> Result<libc::c_int> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: fork; the child only calls async-signal-safe execv and _exit
    // on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the child: exec or leave at once.
        unsafe {
            if !argv.is_empty() {
                libc::execv(ptrs[0], ptrs.as_ptr());
                let busy = *libc::__errno_location() == libc::ETXTBSY;
                libc::_exit(if busy { BUSY } else { 127 });
            }
            libc::_exit(0);
        }
    }
    let mut status = 0;
    loop {
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut status, 0) };
        if r == pid {
            break;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != std::io::ErrorKind::Interrupted {
            bail!("waitpid: {e}");
        }
    }
    Ok(status)
}

struct Spawn {
    argv: Vec<CString>,
    count: usize,
}

impl Work for Spawn {
    fn call(&mut self) -> Result<()> {
        spawn_wait(&self.argv)?;
        self.count = 1;
        Ok(())
    }
    fn done(&self) -> f64 {
        self.count as f64
    }
}

fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes()).context("path with a NUL byte")
}

fn write_script(dir: &Path, name: &str, body: &str) -> Result<std::path::PathBuf> {
    let p = dir.join(name);
    std::fs::write(&p, body).with_context(|| format!("writing {}", p.display()))?;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755))?;
    Ok(p)
}

pub fn fork_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Spawn { argv: Vec::new(), count: 0 }))
}

pub const EXEC_SCRIPT: &str = "#!/bin/sh\nexit 0\n";
pub const SHELL1: &str = "i=0\nwhile [ $i -lt 10 ]; do\n  i=$((i + 1))\n  case $i in\n    5) s=five ;;\n    *) s=other ;;\n  esac\n  [ -n \"$s\" ] || exit 1\ndone\n[ $i -eq 10 ] || exit 1\nexit 0\n";
pub const SHELL2: &str = "ls -l \"${0%/*}\" > /dev/null || exit 1\ncat \"$0\" > /dev/null || exit 1\nexit 0\n";
pub const SHELL3: &str = "n=$(printf 'echo\\ndelta\\nalpha\\ncharlie\\nbravo\\n' | sort | wc -l)\n[ $n -eq 5 ] || exit 1\nexit 0\n";

pub fn exec_test(c: &Ctx) -> Result<Box<dyn Work>> {
    let p = write_script(&c.dir, "exec.sh", EXEC_SCRIPT)?;
    let argv = vec![cstr(&p)?];
    first_run(&argv)?;
    Ok(Box::new(Spawn { argv, count: 0 }))
}

fn shell(c: &Ctx, name: &str, body: &str) -> Result<Box<dyn Work>> {
    let p = write_script(&c.dir, name, body)?;
    let argv = vec![CString::new("/bin/sh")?, cstr(&p)?];
    first_run(&argv)?;
    Ok(Box::new(Spawn { argv, count: 0 }))
}

/// A first, untimed run of a freshly written script. A script just written
/// can briefly be "text busy" when another thread of this process forks
/// while the file is open for writing (only in multi-threaded callers such as
/// the tests; the worker is single-threaded): retry a few times, then report.
fn first_run(argv: &[CString]) -> Result<()> {
    for _ in 0..20 {
        let st = spawn_status(argv)?;
        if !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == BUSY) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    spawn_wait(argv)
}

pub fn shell_rtns_1(c: &Ctx) -> Result<Box<dyn Work>> {
    shell(c, "shell1.sh", SHELL1)
}
pub fn shell_rtns_2(c: &Ctx) -> Result<Box<dyn Work>> {
    shell(c, "shell2.sh", SHELL2)
}
pub fn shell_rtns_3(c: &Ctx) -> Result<Box<dyn Work>> {
    shell(c, "shell3.sh", SHELL3)
}
