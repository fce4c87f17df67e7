//! AIM9's process tests: `fork_test`, `exec_test`, `shell_rtns_1..3`
//! (creat-clo.c and num_fcns.c).
//!
//! Everything the child needs (paths, argv) is built before `fork`, so the
//! child only calls `fork`, `execv`, `waitpid` and `_exit`: safe even if the
//! parent has threads. Every child is reaped before the call returns; a child
//! that does not exit with status 0 fails the test. Like AIM9, which calls
//! `wait` until it fails with ECHILD, each reap is followed by one more wait
//! that finds no child (kdelta waits for its own pid, so it never reaps a
//! child of another thread).
//!
//! - fork_test: 100 x (fork, the child exits at once, wait): AIM9's call;
//! - exec_test: 5 x (fork, exec of `true`, wait), `true` being AIM9's
//!   one-line script `#!/bin/sh`, which the kernel hands to /bin/sh;
//! - shell_rtns_1..3: AIM9's `aim_system`: fork; the child runs the script
//!   the way system(3) does (fork, exec `/bin/sh -c "aim_N.sh 0"`, wait)
//!   and exits with its status. AIM9's three scripts are the same one line,
//!   `ls -l > /dev/null 2>&1`, run in AIM9's directory; kdelta's list its
//!   work directory (see fidelity.md).

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
fn spawn_wait(argv: &[CString], system: Option<&CString>) -> Result<()> {
    let status = spawn_status(argv, system)?;
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        let what = argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>().join(" ");
        bail!("child `{what}` did not exit 0 (wait status {status:#x})");
    }
    Ok(())
}

/// Wait for `pid` (retrying on EINTR), then once more as AIM9's wait loop
/// does, which finds no child left.
fn reap(pid: libc::pid_t) -> Result<libc::c_int> {
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
    let mut again = 0;
    // SAFETY: as above; it fails with ECHILD, the child being reaped.
    unsafe { libc::waitpid(pid, &mut again, 0) };
    Ok(status)
}

/// Fork; in the child exec `argv` (or `_exit(0)` when empty); with
/// `system` (a directory), the child first changes to it and runs `argv`
/// through one more fork and wait, as system(3) runs a command. Reap it;
/// the wait status.
fn spawn_status(argv: &[CString], system: Option<&CString>) -> Result<libc::c_int> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: fork; the child only calls async-signal-safe fork, execv,
    // waitpid and _exit on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        bail!("fork: {}", std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the child: exec or leave at once.
        unsafe {
            if let Some(dir) = system {
                if libc::chdir(dir.as_ptr()) != 0 {
                    libc::_exit(127);
                }
                let pid2 = libc::fork();
                if pid2 > 0 {
                    let mut st = 0;
                    while libc::waitpid(pid2, &mut st, 0) < 0 && *libc::__errno_location() == libc::EINTR {}
                    libc::_exit(if libc::WIFEXITED(st) { libc::WEXITSTATUS(st) } else { 127 });
                }
                if pid2 < 0 {
                    libc::_exit(127);
                }
            }
            if !argv.is_empty() {
                libc::execv(ptrs[0], ptrs.as_ptr());
                let busy = *libc::__errno_location() == libc::ETXTBSY;
                libc::_exit(if busy { BUSY } else { 127 });
            }
            libc::_exit(0);
        }
    }
    reap(pid)
}

struct Spawn {
    argv: Vec<CString>,
    /// Children per call (AIM9's argument: 100 forks, 5 execs, 1 script).
    per_call: usize,
    /// The shell tests: the directory to run the command in, system-style.
    system: Option<CString>,
}

impl Work for Spawn {
    fn call(&mut self) -> Result<f64> {
        for _ in 0..self.per_call {
            spawn_wait(&self.argv, self.system.as_ref())?;
        }
        Ok(self.per_call as f64)
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

/// Forks per fork_test call.
pub(crate) const FORKS: usize = 100;
/// Program loads per exec_test call.
pub(crate) const EXECS: usize = 5;

pub(crate) fn fork_test(_c: &Ctx) -> Result<Box<dyn Work>> {
    Ok(Box::new(Spawn { argv: Vec::new(), per_call: FORKS, system: None }))
}

/// AIM9's `true`: its Makefile writes `#!/bin/sh` into it.
pub(crate) const EXEC_SCRIPT: &str = "#!/bin/sh\n";
/// AIM9's aim_1.sh, aim_2.sh and aim_3.sh (without their comment lines).
pub(crate) const SHELL_SCRIPT: &str = "#!/bin/sh\nls -l > /dev/null 2>&1\n";

pub(crate) fn exec_test(c: &Ctx) -> Result<Box<dyn Work>> {
    let p = write_script(&c.dir, "true", EXEC_SCRIPT)?;
    let argv = vec![cstr(&p)?];
    first_run(&argv, None)?;
    Ok(Box::new(Spawn { argv, per_call: EXECS, system: None }))
}

/// `/bin/sh -c "./aim_N.sh 0"` run in the work directory: the script's
/// `ls -l` lists the work directory (AIM9's lists the directory AIM9 runs
/// in, and finds the script through a PATH holding `.`).
fn shell(c: &Ctx, name: &str) -> Result<Box<dyn Work>> {
    write_script(&c.dir, name, SHELL_SCRIPT)?;
    let argv = vec![CString::new("/bin/sh")?, CString::new("-c")?, CString::new(format!("./{name} 0"))?];
    let dir = cstr(&c.dir)?;
    first_run(&argv, Some(&dir))?;
    Ok(Box::new(Spawn { argv, per_call: 1, system: Some(dir) }))
}
/// A first, untimed run of a freshly written script. A script just written
/// can briefly be "text busy" when another thread of this process forks
/// while the file is open for writing (only in multi-threaded callers such as
/// the tests; the worker is single-threaded): retry a few times, then report.
fn first_run(argv: &[CString], system: Option<&CString>) -> Result<()> {
    for _ in 0..20 {
        let st = spawn_status(argv, system)?;
        if !(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == BUSY) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    spawn_wait(argv, system)
}

pub(crate) fn shell_rtns_1(c: &Ctx) -> Result<Box<dyn Work>> {
    shell(c, "aim_1.sh")
}
pub(crate) fn shell_rtns_2(c: &Ctx) -> Result<Box<dyn Work>> {
    shell(c, "aim_2.sh")
}
pub(crate) fn shell_rtns_3(c: &Ctx) -> Result<Box<dyn Work>> {
    shell(c, "aim_3.sh")
}
