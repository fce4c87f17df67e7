//! Process creation: `lat.proc.fork` (fork, the child exits, the parent
//! waits), `lat.proc.exec` (fork and execve of kdelta's tiny static program,
//! see `tiny.rs`), `lat.proc.shell` (fork and `/bin/sh -c` of that program).
//! The child's output goes to /dev/null, as the worker's stdout does.

use super::{os_err, time_n, tiny};
use crate::bench::{BenchInfo, Benchmark, Better, Sampler, Simple};
use anyhow::{bail, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

/// fork, run `child` in the child (which must not return), wait for it.
fn spawn_wait(child: &dyn Fn()) -> Result<()> {
    // SAFETY: the worker is single-threaded; the child only calls execve/_exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_err("fork"));
    }
    if pid == 0 {
        child();
        // SAFETY: leave at once, without the parent's destructors.
        unsafe { libc::_exit(127) };
    }
    let mut st = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut st, 0) } != pid {
        return Err(os_err("waitpid"));
    }
    if !libc::WIFEXITED(st) || libc::WEXITSTATUS(st) != 0 {
        bail!("child failed (wait status {st:#x}): the program could not be run");
    }
    Ok(())
}

fn slow_info(name: &'static str, what: &'static str) -> BenchInfo {
    BenchInfo::new(name, what, "us", Better::Lower).timeout(Duration::from_secs(120))
}

pub fn fork() -> Box<dyn Benchmark> {
    Simple::boxed(
        || slow_info("lat.proc.fork", "fork, the child exits, the parent waits"),
        |_, s| {
            s.kind(crate::model::sample::TaskKind::Waits);
            s.measure_us(|n| {
                time_n(n, || {
                    spawn_wait(&|| {
                        // SAFETY: exit the child at once.
                        unsafe { libc::_exit(0) }
                    })
                })
            })
        },
    )
}

fn exec_loop(argv: Vec<CString>, s: &mut Sampler) -> Result<()> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    s.kind(crate::model::sample::TaskKind::Waits);
    s.measure_us(|n| {
        time_n(n, || {
            spawn_wait(&|| {
                // SAFETY: argv and envp are NULL-terminated arrays of valid C strings.
                unsafe { libc::execve(ptrs[0], ptrs.as_ptr(), envp.as_ptr()) };
            })
        })
    })
}

fn tiny_path(s: &Sampler) -> Result<CString> {
    let p = tiny::write_to(s.tmpdir())?;
    Ok(CString::new(p.as_os_str().as_bytes())?)
}

fn has_tiny() -> Result<(), String> {
    tiny::image().map(|_| ()).ok_or_else(|| format!("no tiny program for {}", std::env::consts::ARCH))
}

pub fn exec() -> Box<dyn Benchmark> {
    Simple::boxed_if(
        || slow_info("lat.proc.exec", "fork and execve of a tiny static program"),
        |_, s| {
            let p = tiny_path(s)?;
            exec_loop(vec![p], s)
        },
        has_tiny,
    )
}

pub fn shell() -> Box<dyn Benchmark> {
    Simple::boxed_if(
        || slow_info("lat.proc.shell", "fork and /bin/sh -c of a tiny static program"),
        |_, s| {
            let p = tiny_path(s)?;
            exec_loop(vec![CString::new("/bin/sh")?, CString::new("-c")?, p], s)
        },
        || {
            has_tiny()?;
            if std::path::Path::new("/bin/sh").exists() {
                Ok(())
            } else {
                Err("/bin/sh is missing".into())
            }
        },
    )
}
