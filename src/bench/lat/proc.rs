//! Process creation, as LMbench's lat_proc does it: `lat.proc.fork` (fork,
//! the child leaves through the C library's `exit`, the parent waits),
//! `lat.proc.exec` (fork, the child closes its standard output and execve's
//! a program with an empty environment), `lat.proc.shell` (the same through
//! `/bin/sh -c`, with the worker's environment, as `execlp` passes it). The
//! program is by default `hello`, a dynamically linked C program like
//! LMbench's; `prog=static` starts kdelta's tiny static one instead (see
//! `program.rs`).
//!
//! fork's cost grows with the parent's mappings and resident size, so every
//! result records the measuring process's footprint (`measuring_rss_bytes`,
//! `measuring_maps`): the worker is a small process of its own, holding no
//! database and no large heap.

use super::{os_err, program, time_n};
use crate::bench::{BenchInfo, Benchmark, Better, Env, ParamKind, ParamSpec, Params, Sampler};
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

/// Record what fork had to copy: the measuring process's resident size and
/// mappings, read when its samples are taken (its sample records included).
fn record_footprint(s: &mut Sampler) {
    match crate::sys::memory::footprint() {
        Some(f) => {
            s.extra("measuring_rss_bytes", f.rss_bytes);
            s.extra("measuring_anon_bytes", f.anon_bytes);
            s.extra("measuring_virt_bytes", f.virt_bytes);
            s.extra("measuring_maps", f.maps);
        }
        None => s.note("the measuring process's resident size and mappings are unavailable: /proc/self/statm or /proc/self/maps could not be read"),
    }
}

pub fn fork() -> Box<dyn Benchmark> {
    crate::bench::Simple::boxed(
        || slow_info("lat.proc.fork", "fork, the child leaves through the C library's exit(), the parent waits (lat_proc fork)"),
        |_, s| {
            s.kind(crate::model::sample::TaskKind::Waits);
            s.measure_us(|n| {
                time_n(n, || {
                    spawn_wait(&|| {
                        // SAFETY: the C library's exit, as LMbench's child
                        // leaves: atexit handlers, stdio flush, exit_group.
                        unsafe { libc::exit(0) }
                    })
                })
            })?;
            record_footprint(s);
            Ok(())
        },
    )
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
    record_footprint(s);
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
    fn available(&self, prog: program::Prog) -> Result<(), String> {
        program::image(prog)?;
        if self.shell && !std::path::Path::new("/bin/sh").exists() {
            return Err("/bin/sh is missing".into());
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

    fn supported(&self, _env: &Env) -> Result<(), String> {
        self.available(program::Prog::Hello)
    }

    fn supported_at(&self, _env: &Env, params: &Params) -> Result<(), String> {
        self.available(params.choice("prog").map_err(|e| e.to_string())?)
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

pub fn exec() -> Box<dyn Benchmark> {
    Box::new(Exec { shell: false })
}

pub fn shell() -> Box<dyn Benchmark> {
    Box::new(Exec { shell: true })
}
