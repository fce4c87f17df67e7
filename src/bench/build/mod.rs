//! The `build` family: `build.make`, the 2001 study's measure. A build runs at
//! a `make -jN` level (`jobs`), cleaned before every sample, and its wall,
//! user and system time are taken from the kernel's accounting of the
//! finished children (`wait4` rusage). The value is wall seconds; user and
//! system seconds per sample are stored beside it as parts (the result's
//! extras `user_s`/`sys_s`: medians of the clean builds; `user_s_samples`/
//! `sys_s_samples`: every build's, aligned with the samples).
//!
//! The workload is a generated, deterministic C project ([`project`]) built
//! with the system's `cc` and `make`, or a user's own tree (`dir`, `cmd`,
//! `clean`), for example a kernel: `dir=/src/linux cmd='make -j{jobs}'`.

pub(crate) mod child;
pub(crate) mod project;
pub(crate) mod tools;

use super::{bad_param, BenchInfo, Benchmark, Better, Env, ParamKind, ParamSpec, Params, Sampler};
use crate::error::bad_input;
use crate::model::reach::Reach;
use anyhow::{Context, Result};
use std::path::PathBuf;
use std::time::Duration;

pub(crate) const FAMILY: super::Family =
    super::Family { benchmarks, summary: None, server: None, command: None, run_flags: &[] };

pub(crate) fn benchmarks() -> Vec<Box<dyn Benchmark>> {
    vec![Box::new(BuildMake)]
}

/// `dir` value meaning "the generated project".
pub(crate) const BUILTIN: &str = "builtin";

pub struct BuildMake;

/// `build.make`'s parameters, read once by [`BuildParams::from`].
struct BuildParams {
    jobs: u32,
    /// Files of the generated project (used when `dir` is `None`).
    files: usize,
    /// `None`: the generated project (`dir=builtin`).
    dir: Option<PathBuf>,
    /// The build and clean commands with `{jobs}` replaced.
    cmd: String,
    clean: String,
    warmup: bool,
}

impl BuildParams {
    fn from(p: &Params) -> Result<Self> {
        let dir = match p.str("dir")? {
            BUILTIN => None,
            d if std::path::Path::new(d).is_dir() => Some(PathBuf::from(d)),
            d => {
                return Err(bad_input(format!(
                    "dir={d:?} is not a directory: give the path of a source tree, or `builtin`"
                )))
            }
        };
        for k in ["cmd", "clean"] {
            if p.str(k)?.trim().is_empty() {
                return Err(bad_input(format!("{k} is empty: give a shell command")));
            }
        }
        let jobs = u32::try_from(p.u64("jobs")?)?;
        Ok(BuildParams {
            jobs,
            files: p.usize("files")?,
            dir,
            cmd: p.str("cmd")?.replace("{jobs}", &jobs.to_string()),
            clean: p.str("clean")?.replace("{jobs}", &jobs.to_string()),
            warmup: p.bool("warmup").map_err(bad_param)?,
        })
    }
}

impl Benchmark for BuildMake {
    fn info(&self) -> BenchInfo {
        BenchInfo::new("build.make", "one clean build (make -jN) of a C project, wall seconds", "s", Better::Lower)
            .param(
                ParamSpec::new(
                    "jobs",
                    ParamKind::Int { min: 1, max: 4096 },
                    "1,2,4,5",
                    "parallel jobs: {jobs} in cmd and $JOBS",
                )
                .quick("1,2"),
            )
            .param(
                ParamSpec::new(
                    "files",
                    ParamKind::Int { min: 1, max: 9999 },
                    "300",
                    "C files in the generated project",
                )
                .quick("40"),
            )
            .param(
                ParamSpec::new(
                    "dir",
                    ParamKind::Text,
                    BUILTIN,
                    "`builtin` (a generated project in a temporary directory) or the path of your own tree",
                )
                // Your tree's build runs its own makefiles.
                .reaches(Reach::Commands, &[]),
            )
            .param(
                ParamSpec::new(
                    "cmd",
                    ParamKind::Text,
                    "make -j{jobs}",
                    "build command, run by sh in dir; {jobs} is replaced by the jobs value",
                )
                .reaches(Reach::Commands, &[]),
            )
            .param(
                ParamSpec::new(
                    "clean",
                    ParamKind::Text,
                    "make clean",
                    "command run by sh in dir before every build (untimed)",
                )
                .reaches(Reach::Commands, &[]),
            )
            .param(
                ParamSpec::new(
                    "warmup",
                    ParamKind::Bool,
                    "true",
                    "one untimed build first, so caches and the page cache are warm",
                )
                .quick("false"),
            )
            .samples(5, 2)
            .timeout(Duration::from_secs(4 * 3600))
    }

    fn supported(&self, _env: &Env) -> Result<(), crate::bench::Unsupported> {
        tools::check_tools(&std::env::var("PATH").unwrap_or_default()).map_err(crate::bench::Unsupported::family)
    }

    fn check(&self, p: &Params) -> Result<()> {
        BuildParams::from(p).map(drop)
    }

    fn run(&self, p: &Params, s: &mut Sampler) -> Result<()> {
        let BuildParams { jobs, files, dir, cmd, clean, warmup } = BuildParams::from(p)?;
        let dir: PathBuf = match dir {
            None => {
                let d = s.tmpdir().join("project");
                project::generate(&d, files)?;
                s.extra("files", files as u64);
                d
            }
            Some(d) => d,
        };
        let log = s.tmpdir().join("build.log");
        s.extra("jobs", jobs);
        s.extra("cmd", cmd.clone());

        if warmup {
            child::run(&clean, &dir, jobs, &log).context("clean before the warm-up build")?;
            child::run(&cmd, &dir, jobs, &log).context("warm-up build")?;
        }
        for _ in 0..s.samples_wanted() {
            child::run(&clean, &dir, jobs, &log).context("clean between builds")?;
            s.begin_sample();
            let u = child::run(&cmd, &dir, jobs, &log).context("build")?;
            s.push(u.wall.as_secs_f64(), u.wall);
            // Parts, not extras: they stay aligned with the samples of every
            // worker (a result's 5 builds come from 5 workers).
            s.part("user_s", u.user.as_secs_f64());
            s.part("sys_s", u.sys.as_secs_f64());
        }
        // What the last build made, so runs in different configurations
        // (`preload=`, `tunables=`) can be checked for identical outputs.
        if let Some(d) = outputs_digest(&dir) {
            s.extra("outputs_digest", d);
        }
        Ok(())
    }
}

/// FNV-1a (64-bit) over the names and bytes of the regular files directly
/// in `dir` that are not sources (`.c`, `.h`, `Makefile`), in name order:
/// the build's outputs. `None` when the directory cannot be read.
fn outputs_digest(dir: &std::path::Path) -> Option<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !(n.ends_with(".c") || n.ends_with(".h") || n == "Makefile"))
        .collect();
    names.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: &[u8]| {
        for &x in b {
            h = (h ^ x as u64).wrapping_mul(0x0100_0000_01b3);
        }
    };
    for n in &names {
        eat(n.as_bytes());
        eat(&std::fs::read(dir.join(n)).ok()?);
    }
    Some(format!("{h:016x} ({} files)", names.len()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::sampler::SamplerSettings;
    use crate::model::params::expand;
    use std::collections::BTreeMap;

    #[test]
    fn builds_a_tiny_project() {
        if let Err(why) = tools::check_tools(&std::env::var("PATH").unwrap_or_default()) {
            eprintln!("skipped: {why}");
            return;
        }
        let b = BuildMake;
        let info = b.info();
        let o: BTreeMap<String, String> = [("files", "3"), ("jobs", "2"), ("warmup", "false")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let pts = expand(&info.params, &o, true, info.name).unwrap();
        assert_eq!(pts.len(), 1);
        let t = tempfile::tempdir().unwrap();
        let mut s = Sampler::new(SamplerSettings::direct(1, t.path()));
        b.run(&pts[0], &mut s).unwrap();
        assert!(t.path().join("project/prog").exists());
        let out = s.finish();
        assert_eq!(out.samples.len(), 1);
        assert!(out.samples[0] > 0.0);
        assert_eq!(out.parts["user_s"].len(), 1);
        let cpu = out.parts["user_s"][0] + out.parts["sys_s"][0];
        assert!(cpu > 0.0, "the compilers' time is counted: {cpu}");
        assert_eq!(out.extras["cmd"], "make -j2");
        assert!(out.extras["outputs_digest"].as_str().unwrap().ends_with("files)"));
    }

    #[test]
    fn a_missing_dir_is_bad_input() {
        let mut p = Params::default();
        p.set("dir", "/nonexistent/kdelta-tree");
        p.set("cmd", "make");
        p.set("clean", "make clean");
        let e = BuildMake.check(&p).unwrap_err();
        assert!(crate::error::is_bad_input(&e) && e.to_string().contains("/nonexistent/kdelta-tree"), "{e}");
    }

    #[test]
    fn a_failing_build_is_an_error_not_a_number() {
        let t = tempfile::tempdir().unwrap();
        let mut p = Params::default();
        for (k, v) in [
            ("jobs", "1"),
            ("files", "1"),
            ("dir", t.path().to_str().unwrap()),
            ("cmd", "echo broken >&2; false"),
            ("clean", "true"),
            ("warmup", "false"),
        ] {
            p.set(k, v);
        }
        let w = tempfile::tempdir().unwrap();
        let mut s = Sampler::new(SamplerSettings::direct(1, w.path()));
        let e = format!("{:#}", BuildMake.run(&p, &mut s).unwrap_err());
        assert!(e.contains("broken"), "{e}");
        assert!(s.finish().samples.is_empty());
    }
}
