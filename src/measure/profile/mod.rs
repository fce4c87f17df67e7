//! Stack profiles of the measured tasks (`--profile`), taken by `perf
//! record` and symbolised by `perf script`, then folded with `inferno`.
//!
//! A [`Recorder`] attaches `perf record` to the measured tasks (the
//! measuring thread, the peers a benchmark names, for a whole-run benchmark
//! every thread of the worker; their children and threads made later are
//! followed, as perf's events are inherited: `--inherit`, which `-t` would
//! otherwise turn off), created disabled and enabled
//! through perf's control FIFO only once perf has acknowledged, so the
//! profile covers the profiled samples and nothing of perf's own start.
//! Kernel frames come from the kernel's call chains, symbolised from
//! /proc/kallsyms; user frames are unwound from a copy of each sample's
//! user stack with the binaries' DWARF call-frame information (Rust and C
//! built without frame pointers still unwind) and named from their ELF
//! symbols, inlined functions from DWARF where present (`inline.rs`, not
//! perf's own lookup, which is slow). perf records the
//! tasks' mappings as they are made, so a forked child that is gone by the
//! time the stacks are symbolised is still named. Why perf and not an
//! in-process sampler: see ARCHITECTURE.md.

mod inline;

use crate::model::profile::Profile;
use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How the parent wants stacks sampled (`--profile`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ProfileSettings {
    /// perf's event name: `cycles` or `cpu-clock`.
    pub event: String,
    /// Samples a second of a measured task's CPU time.
    pub hz: u32,
    /// How long a worker's profiled samples last at least, after its
    /// measured ones.
    pub time: Duration,
    /// The `perf` program.
    pub perf: PathBuf,
    /// This perf knows `record --no-bpf-event` (perf 5.1 and later): no
    /// side-band thread for BPF events, which took perf 0.5 s to stop.
    #[serde(default)]
    pub no_bpf_event: bool,
}

impl ProfileSettings {
    /// The settings for `perf`, asking it which of `record`'s options it
    /// knows.
    pub(crate) fn new(perf: PathBuf, event: &str) -> ProfileSettings {
        let help = std::process::Command::new(&perf)
            .args(["record", "-h"])
            .stdin(std::process::Stdio::null())
            .output()
            .map(|o| [o.stdout, o.stderr].concat())
            .unwrap_or_default();
        let no_bpf_event = String::from_utf8_lossy(&help).contains("--no-bpf-event");
        ProfileSettings { event: event.to_string(), hz: HZ, time: TIME, perf, no_bpf_event }
    }
}

/// Stack samples a second: below perf's default (4000), so that the copied
/// user stacks (8 KiB each) stay a few MB per profiled second.
pub(crate) const HZ: u32 = 1999;
/// A worker's profiled time by default.
pub(crate) const TIME: Duration = Duration::from_millis(400);
/// How many times perf record is started before its failure stands.
const STARTS: u32 = 3;

/// perf record ended before it acknowledged a command: at the start, most
/// often because a task it was to attach to had ended meanwhile.
#[derive(Debug, thiserror::Error)]
#[error("perf record ended ({status}){log}")]
struct Ended {
    status: String,
    log: String,
}
/// How long perf may take to start, acknowledge or write its file.
const PERF_WAIT: Duration = Duration::from_secs(20);

/// What `perf record` attaches to.
pub(crate) enum Target {
    /// These threads (`-t`).
    Threads(Vec<i32>),
    /// Every thread of these processes (`-p`).
    Processes(Vec<i32>),
}

/// `perf record` attached to the measured tasks, sampling while enabled.
pub(crate) struct Recorder {
    child: crate::child::Child,
    ctl: std::fs::File,
    ack: std::fs::File,
    dir: PathBuf,
    settings: ProfileSettings,
    /// Threads whose samples are left out: the harness thread of a
    /// whole-run benchmark, which only starts and waits for the work.
    exclude: Vec<i32>,
}

impl Recorder {
    /// Attach `perf record` to the tasks `target` lists and start sampling;
    /// the samples of the threads in `exclude` are dropped when folded
    /// (their children's are kept). A listed process can end before perf
    /// attaches (the other command of a duet, between two of its runs):
    /// perf then exits at once, and the tasks are listed again, up to
    /// [`STARTS`] times. `dir` is made for perf's files, and removed by
    /// [`Recorder::finish`].
    pub(crate) fn start(
        settings: &ProfileSettings,
        target: impl Fn() -> Target,
        exclude: &[i32],
        dir: &Path,
    ) -> Result<Recorder> {
        let mut tries = 1;
        loop {
            match Recorder::start_once(settings, &target(), exclude, dir) {
                Err(e) if tries < STARTS && e.is::<Ended>() => {
                    let _ = std::fs::remove_dir_all(dir);
                    tries += 1;
                }
                got => return got,
            }
        }
    }

    fn start_once(settings: &ProfileSettings, target: &Target, exclude: &[i32], dir: &Path) -> Result<Recorder> {
        std::fs::create_dir_all(dir).with_context(|| format!("making {}", dir.display()))?;
        let (ctl_path, ack_path) = (dir.join("ctl"), dir.join("ack"));
        for p in [&ctl_path, &ack_path] {
            nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRUSR | nix::sys::stat::Mode::S_IWUSR)
                .with_context(|| format!("mkfifo {}", p.display()))?;
        }
        // Read-write, so neither open waits for perf to open the other end.
        let open = |p: &Path| std::fs::OpenOptions::new().read(true).write(true).open(p);
        let ctl = open(&ctl_path).with_context(|| format!("opening {}", ctl_path.display()))?;
        let ack = open(&ack_path).with_context(|| format!("opening {}", ack_path.display()))?;
        let log = std::fs::File::create(dir.join("record.log"))?;
        let (flag, ids) = match target {
            Target::Threads(t) => ("-t", t),
            Target::Processes(p) => ("-p", p),
        };
        let ids: Vec<String> = ids.iter().map(|t| t.to_string()).collect();
        let mut cmd = std::process::Command::new(&settings.perf);
        // --no-buildid-cache: perf would otherwise copy every binary a stack
        // passed through (kdelta's own, 50 MB with its debug info, and the
        // benchmarks' programs in the run's temporary directory) into
        // ~/.debug, and never remove them. `perf script` below reads the
        // binaries where they are, while they still exist, so no build-ids
        // are needed in perf.data either (--no-buildid: finding them made
        // perf read all its samples again on the way out).
        cmd.args(["record", "-q", "--no-buildid-cache", "--no-buildid", "-e", &settings.event])
            .args(["-F", &settings.hz.to_string()])
            .args(settings.no_bpf_event.then_some("--no-bpf-event"))
            .args(["--call-graph", "dwarf", "-D", "-1", "--inherit", flag, &ids.join(",")])
            .arg("-o")
            .arg(dir.join("perf.data"))
            .arg("--control")
            .arg(format!("fifo:{},{}", ctl_path.display(), ack_path.display()))
            .stdin(std::process::Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        let child = crate::child::spawn(&mut cmd).with_context(|| format!("starting {}", settings.perf.display()))?;
        let mut r =
            Recorder { child, ctl, ack, dir: dir.to_path_buf(), settings: settings.clone(), exclude: exclude.to_vec() };
        r.command("enable")?;
        Ok(r)
    }

    /// Send a control command and wait for perf's `ack`.
    fn command(&mut self, what: &str) -> Result<()> {
        self.ctl.write_all(format!("{what}\n").as_bytes())?;
        let deadline = Instant::now() + PERF_WAIT;
        let mut got = Vec::new();
        while !String::from_utf8_lossy(&got).contains("ack") {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("perf record did not acknowledge `{what}` within {} s{}", PERF_WAIT.as_secs(), self.log_tail());
            }
            let mut fds = [nix::poll::PollFd::new(self.ack.as_fd(), nix::poll::PollFlags::POLLIN)];
            let ms = left.as_millis().min(200) as u16;
            match nix::poll::poll(&mut fds, nix::poll::PollTimeout::from(ms)) {
                Ok(0) | Err(nix::errno::Errno::EINTR) => {}
                Ok(_) => {
                    let mut buf = [0u8; 64];
                    let n = self.ack.read(&mut buf)?;
                    got.extend_from_slice(&buf[..n]);
                }
                Err(e) => return Err(e).context("waiting for perf record"),
            }
            if let Some(st) = self.child.try_wait()? {
                return Err(Ended { status: crate::child::describe(st), log: self.log_tail() }.into());
            }
        }
        Ok(())
    }

    /// The end of perf's messages, for an error.
    fn log_tail(&self) -> String {
        let log = std::fs::read_to_string(self.dir.join("record.log")).unwrap_or_default();
        let tail: Vec<&str> = log.lines().filter(|l| !l.trim().is_empty()).rev().take(3).collect();
        if tail.is_empty() {
            String::new()
        } else {
            format!(": {}", tail.into_iter().rev().collect::<Vec<_>>().join(" / "))
        }
    }

    /// Stop sampling, let perf write its file, symbolise and fold the
    /// stacks, and remove perf's files.
    pub(crate) fn finish(mut self) -> Result<Profile> {
        let got = self.stop_and_fold();
        let _ = std::fs::remove_dir_all(&self.dir);
        got
    }

    fn stop_and_fold(&mut self) -> Result<Profile> {
        self.command("disable")?;
        let _ = nix::sys::signal::kill(self.child.pid(), nix::sys::signal::Signal::SIGINT);
        match self.child.wait_timeout(PERF_WAIT)? {
            Some(st) if st.success() || st.signal() == Some(libc::SIGINT) => {}
            Some(st) => bail!("perf record ended ({}){}", crate::child::describe(st), self.log_tail()),
            None => bail!("perf record did not end within {} s of SIGINT", PERF_WAIT.as_secs()),
        }
        // --no-inline: inlined functions are named by `inline::expand`, which
        // maps each binary's DWARF once; perf would ask binutils' addr2line
        // about every address (0.6 s a worker here). In a process group
        // of its own: a helper perf script starts may outlive it, and goes
        // with the group.
        let mut script = crate::child::spawn_in_flight(
            std::process::Command::new(&self.settings.perf)
                .arg("script")
                .arg("-i")
                .arg(self.dir.join("perf.data"))
                .args(["--no-inline", "-F", "comm,pid,tid,event,ip,sym,dso"])
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .process_group(0),
        )
        .context("running perf script")?;
        let pgid = script.id() as i32;
        let mut text = Vec::new();
        let read = script.stdout.take().map(|mut o| o.read_to_end(&mut text));
        let status = script.wait();
        crate::child::landed(pgid);
        end_group(pgid);
        read.transpose().context("reading perf script's output")?;
        let out = std::process::Output {
            status: status.context("waiting for perf script")?,
            stdout: text,
            stderr: Vec::new(),
        };
        if !out.status.success() {
            bail!("perf script failed ({})", crate::child::describe(out.status));
        }
        let mut p =
            Profile { event: self.settings.event.clone(), hz: self.settings.hz, workers: 1, ..Default::default() };
        p.add_folded(&fold(&inline::expand(&without_tasks(&out.stdout, &self.exclude)))?);
        Ok(p)
    }
}

/// `perf script` output without the samples of the threads in `tids`
/// (a sample is a header line `comm pid/tid event:` and its frames, up to
/// a blank line).
pub(crate) fn without_tasks(script: &[u8], tids: &[i32]) -> Vec<u8> {
    if tids.is_empty() {
        return script.to_vec();
    }
    let mut out = Vec::with_capacity(script.len());
    let mut keep = true;
    for line in script.split_inclusive(|&b| b == b'\n') {
        if !line.starts_with(b"\t") && !line.iter().all(u8::is_ascii_whitespace) {
            keep = sample_tid(line).is_none_or(|t| !tids.contains(&t));
        }
        if keep {
            out.extend_from_slice(line);
        }
    }
    out
}

/// The thread id of a sample's header line (`comm pid/tid event:`; comm
/// may hold spaces, so the field is found from the event's end).
fn sample_tid(header: &[u8]) -> Option<i32> {
    let text = String::from_utf8_lossy(header);
    text.split_whitespace().rev().find_map(|w| w.split_once('/').and_then(|(_, t)| t.parse().ok()))
}

/// SIGKILL process group `pgid` (a helper's, its leader already reaped) and
/// reap those of its members that are this process's children: a child
/// subreaper (a `cmd` worker) adopts them, and an unreaped one would be
/// taken for something the measured command left.
fn end_group(pgid: i32) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pgid), nix::sys::signal::Signal::SIGKILL);
    let me = std::process::id() as i32;
    for pid in crate::sys::task::children_of(me) {
        if crate::sys::task::stat(pid).is_some_and(|st| st.pgrp == pgid) {
            let _ = nix::sys::wait::waitpid(nix::unistd::Pid::from_raw(pid), None);
        }
    }
}

/// `perf script` output folded into `stack COUNT` lines, root first,
/// kernel frames marked `_[k]`, each stack rooted at its task's name.
pub(crate) fn fold(script: &[u8]) -> Result<String> {
    use inferno::collapse::Collapse;
    let mut opt = inferno::collapse::perf::Options::default();
    opt.annotate_kernel = true;
    opt.nthreads = 1;
    let mut out = Vec::new();
    inferno::collapse::perf::Folder::from(opt).collapse(script, &mut out).context("folding perf script's stacks")?;
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One sample of a pipe round trip as `perf script -F
    /// comm,pid,tid,event,ip,sym,dso` (perf 6.1) writes it.
    const PIPE_SAMPLE: &str = "\
kdelta 1200/1200 cpu-clock: 
\tffffffff810d4a10 try_to_wake_up ([kernel.kallsyms])
\tffffffff811e2b30 __wake_up_common ([kernel.kallsyms])
\tffffffff8130c0c4 pipe_write ([kernel.kallsyms])
\tffffffff81000130 entry_SYSCALL_64_after_hwframe ([kernel.kallsyms])
\t           f82ad __GI___libc_write (inlined)
\t          5b7b11 kdelta::bench::lat::pipe::round_trip (/usr/bin/kdelta)
\t          27249 __libc_start_call_main (/usr/lib/x86_64-linux-gnu/libc.so.6)

";

    /// One sample of a fork, the same way.
    const FORK_SAMPLE: &str = "\
kdelta 1201/1201 cpu-clock: 
\tffffffff81234560 copy_page_range ([kernel.kallsyms])
\tffffffff81090000 dup_mm ([kernel.kallsyms])
\tffffffff81091000 copy_process ([kernel.kallsyms])
\t            1234 [unknown] (/usr/bin/kdelta)

";

    /// Two samples of a pipe round trip and one of a fork.
    fn script() -> String {
        [PIPE_SAMPLE, PIPE_SAMPLE, FORK_SAMPLE].concat()
    }

    #[test]
    fn perf_script_stacks_fold_root_first_with_kernel_frames_marked() {
        let folded = fold(script().as_bytes()).unwrap();
        let mut p = Profile::default();
        p.add_folded(&folded);
        assert_eq!(p.samples, 3, "{folded}");
        let pipe = "kdelta;__libc_start_call_main;kdelta::bench::lat::pipe::round_trip;__GI___libc_write;\
                    entry_SYSCALL_64_after_hwframe_[k];pipe_write_[k];__wake_up_common_[k];try_to_wake_up_[k]";
        assert_eq!(p.stacks.get(pipe), Some(&2), "{folded}");
        let fork = p.stacks.keys().find(|s| s.ends_with("copy_page_range_[k]")).expect("the fork's stack");
        assert!(fork.starts_with("kdelta;"), "{fork}");
    }

    #[test]
    fn the_harness_threads_samples_are_left_out() {
        let kept = without_tasks(script().as_bytes(), &[1200]);
        let mut p = Profile::default();
        p.add_folded(&fold(&kept).unwrap());
        assert_eq!(p.samples, 1, "only the fork's sample is left");
        assert!(p.stacks.keys().all(|s| s.ends_with("copy_page_range_[k]")));
        let all = script();
        assert_eq!(without_tasks(all.as_bytes(), &[]), all.as_bytes());
        assert_eq!(sample_tid(b"my prog 12/34 cpu-clock: \n"), Some(34));
    }

    #[test]
    fn nothing_sampled_folds_to_nothing() {
        let mut p = Profile::default();
        p.add_folded(&fold(b"").unwrap());
        assert_eq!(p.samples, 0);
    }
}
