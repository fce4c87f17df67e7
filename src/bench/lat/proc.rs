//! Process creation, as LMbench's lat_proc does it: `lat.proc.fork` (fork,
//! the child leaves through the C library's `exit`, the parent waits),
//! `lat.proc.exec` (fork, the child closes its standard output and execve's
//! a program with an empty environment), `lat.proc.shell` (the same through
//! `/bin/sh -c`, with the worker's environment, as `execlp` passes it). The
//! program is by default `hello`, a dynamically linked C program like
//! LMbench's; `prog=static` starts kdelta's tiny static one instead (see
//! `program.rs`).
//!
//! fork's cost grows with the forking process's mappings and resident pages,
//! and kdelta's worker is a Rust program with more of both than LMbench's
//! lat_proc (on the reference VM 35 mappings and 424 KB anonymous against 24
//! and 100 KB, and 1.19x its fork time). So `lat.proc.fork` forks by default
//! from `forker` (`forker.c`, built with `hello`), a C program linked
//! against the C library alone that the worker runs once per sample and that
//! reports its own loop time; `parent=worker` forks from the worker itself.
//! Every result records the forking process's footprint
//! (`measuring_rss_bytes`, `measuring_anon_bytes`, `measuring_maps`).

use super::{os_err, program, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, Env, ParamKind, ParamSpec, Params, Sampler, Unsupported};
use anyhow::{bail, Result};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::time::Duration;

/// fork, run `child` in the child (which must not return), wait for it.
fn spawn_wait(child: &dyn Fn()) -> Result<()> {
    // SAFETY: the worker is single-threaded; the child only calls
    // close/execve/exit.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_err("fork"));
    }
    if pid == 0 {
        child();
        // SAFETY: only reached when execve failed: leave at once, without the
        // parent's destructors.
        unsafe { libc::_exit(127) };
    }
    let mut st = 0;
    // SAFETY: waiting for our own child.
    if unsafe { libc::waitpid(pid, &mut st, 0) } != pid {
        return Err(os_err("waitpid"));
    }
    if !libc::WIFEXITED(st) || libc::WEXITSTATUS(st) != 0 {
        bail!("child failed (wait status {st:#x}): the program could not be run (is the temporary directory mounted noexec?)");
    }
    Ok(())
}

fn slow_info(name: &'static str, what: &'static str) -> BenchInfo {
    BenchInfo::new(name, what, "us", Better::Lower).timeout(Duration::from_secs(120))
}

/// Record what fork had to copy: the forking process's resident size and
/// mappings.
fn record_footprint(s: &mut Sampler, f: Option<crate::sys::memory::Footprint>, whose: &str) {
    match f {
        Some(f) => {
            s.extra("measuring_rss_bytes", f.rss_bytes);
            s.extra("measuring_anon_bytes", f.anon_bytes);
            s.extra("measuring_virt_bytes", f.virt_bytes);
            s.extra("measuring_maps", f.maps);
        }
        None => s.note(format!(
            "the {whose}'s resident size and mappings are unavailable: its /proc/PID/statm or maps could not be read"
        )),
    }
}

crate::model::params::choice! {
    /// The process `lat.proc.fork` forks from (`parent=`).
    pub(super) enum Parent {
        /// `forker`, a C program as small as LMbench's lat_proc.
        Small = "small",
        /// kdelta's worker itself (a Rust process: more mappings and pages).
        Worker = "worker",
    }
}

/// Run `forker n` and read its loop time and its own footprint.
fn run_forker(path: &std::path::Path, n: u64) -> Result<(Duration, Option<crate::sys::memory::Footprint>)> {
    let mut cmd = std::process::Command::new(path);
    cmd.arg(n.to_string()).stdin(std::process::Stdio::null());
    crate::child::die_with_parent(&mut cmd);
    let out = cmd.output().map_err(|e| anyhow::anyhow!("running {}: {e}", path.display()))?;
    if !out.status.success() {
        bail!("{} {n} failed ({}): {}", path.display(), out.status, String::from_utf8_lossy(&out.stderr).trim());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let ns: u64 = lines
        .next()
        .and_then(|l| l.trim().parse().ok())
        .ok_or_else(|| anyhow::anyhow!("forker printed no loop time: {text:?}"))?;
    let statm = lines.next().unwrap_or("");
    let maps = lines.next().and_then(|l| l.trim().parse().ok());
    let fp = maps.and_then(|m| crate::sys::memory::parse_statm(statm, m, crate::sys::memory::page_size()));
    Ok((Duration::from_nanos(ns), fp))
}

struct Fork;

impl Benchmark for Fork {
    fn info(&self) -> BenchInfo {
        slow_info("lat.proc.fork", "fork, the child leaves through the C library's exit(), the parent waits (lat_proc fork)").param(ParamSpec::new(
            "parent",
            ParamKind::choice::<Parent>(),
            "small",
            "the forking process: small (a C program as small as LMbench's lat_proc, run once per sample) or worker (kdelta's worker itself)",
        ))
    }

    fn supported_at(&self, _env: &Env, params: &Params) -> Result<(), Unsupported> {
        match params.choice("parent").map_err(Unsupported::Param)? {
            Parent::Small => program::forker().map(|_| ()).map_err(Unsupported::family),
            Parent::Worker => Ok(()),
        }
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        s.kind(crate::model::sample::TaskKind::Waits);
        let parent: Parent = p.choice("parent")?;
        s.extra("fork_parent", crate::model::params::Choice::name(parent));
        match parent {
            Parent::Small => {
                let path = program::write_forker(s.tmpdir())?;
                let mut last = None;
                s.measure_us(|n| {
                    let (t, fp) = run_forker(&path, n)?;
                    last = fp.or(last);
                    Ok(t)
                })?;
                record_footprint(s, last, "forking program");
            }
            Parent::Worker => {
                s.measure_us(|n| {
                    time_n(n, || {
                        spawn_wait(&|| {
                            // SAFETY: the C library's exit, as LMbench's child
                            // leaves: atexit handlers, stdio flush, exit_group.
                            unsafe { libc::exit(0) }
                        })
                    })
                })?;
                record_footprint(s, crate::sys::memory::footprint(), "worker");
            }
        }
        Ok(())
    }
}

pub(super) fn fork() -> Box<dyn Benchmark> {
    Box::new(Fork)
}

extern "C" {
    static environ: *const *const libc::c_char;
}

/// Time fork + execve(`file`, `argv`, the worker's environment or none), the
/// child's standard output closed.
fn exec_loop(file: CString, argv: Vec<CString>, with_environ: bool, s: &mut Sampler) -> Result<()> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    let empty: [*const libc::c_char; 1] = [std::ptr::null()];
    // SAFETY: reading the C library's environment pointer; the worker never
    // changes its environment while measuring.
    let envp = if with_environ { unsafe { environ } } else { empty.as_ptr() };
    s.kind(crate::model::sample::TaskKind::Waits);
    s.measure_us(|n| {
        time_n(n, || {
            spawn_wait(&|| {
                // SAFETY: argv and envp are NULL-terminated arrays of valid C
                // strings; closing stdout in the child touches only the child.
                unsafe {
                    libc::close(1);
                    libc::execve(file.as_ptr(), ptrs.as_ptr(), envp);
                }
            })
        })
    })?;
    record_footprint(s, crate::sys::memory::footprint(), "worker");
    Ok(())
}

fn prog_param() -> ParamSpec {
    ParamSpec::new(
        "prog",
        ParamKind::choice::<program::Prog>(),
        "hello",
        "the program started: hello (dynamically linked C, like LMbench's) or static (kdelta's tiny static ELF: the kernel's share alone)",
    )
}

/// `lat.proc.exec` (`shell: false`) or `lat.proc.shell`.
struct Exec {
    shell: bool,
}

impl Exec {
    fn available(&self, prog: program::Prog) -> Result<(), Unsupported> {
        program::image(prog).map_err(Unsupported::family)?;
        if self.shell && !std::path::Path::new("/bin/sh").exists() {
            return Err(Unsupported::Missing("/bin/sh"));
        }
        Ok(())
    }
}

impl Benchmark for Exec {
    fn info(&self) -> BenchInfo {
        let i = if self.shell {
            slow_info("lat.proc.shell", "fork and /bin/sh -c of a program, its stdout closed (lat_proc shell)")
        } else {
            slow_info("lat.proc.exec", "fork and execve of a program, its stdout closed (lat_proc exec)")
        };
        i.param(prog_param())
    }

    fn supported(&self, _env: &Env) -> Result<(), Unsupported> {
        self.available(program::Prog::Hello)
    }

    fn supported_at(&self, _env: &Env, params: &Params) -> Result<(), Unsupported> {
        self.available(params.choice("prog").map_err(Unsupported::Param)?)
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let w = program::write_to(p.choice("prog")?, s.tmpdir())?;
        s.extra("prog_path", w.path.display().to_string());
        s.extra("prog_bytes", w.bytes);
        s.extra("prog_linkage", w.linkage.kind());
        if let Some(i) = &w.linkage.interp {
            s.extra("prog_interp", i.clone());
        }
        let path = CString::new(w.path.as_os_str().as_bytes())?;
        if self.shell {
            exec_loop(CString::new("/bin/sh")?, vec![CString::new("sh")?, CString::new("-c")?, path], true, s)
        } else {
            exec_loop(path.clone(), vec![path], false, s)
        }
    }
}

pub(super) fn exec() -> Box<dyn Benchmark> {
    Box::new(Exec { shell: false })
}

pub(super) fn shell() -> Box<dyn Benchmark> {
    Box::new(Exec { shell: true })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forker_forks_and_reports_its_loop_and_footprint() {
        let d = tempfile::tempdir().unwrap();
        let path = program::write_forker(d.path()).unwrap();
        let (t, fp) = run_forker(&path, 3).unwrap();
        assert!(t > Duration::ZERO, "{t:?}");
        let fp = fp.expect("forker reports its statm and maps");
        assert!(fp.rss_bytes > 0 && fp.maps > 3, "{fp:?}");
        assert!(run_forker(&path, 0).is_err(), "N = 0 is refused by the program");
    }
}
