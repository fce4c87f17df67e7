//! The simulated machine's shape: packages x cores per package x threads per core.
//!
//! Logical CPUs are numbered core after core, so the siblings of core `c` are
//! `c*threads .. (c+1)*threads` (Molnar's `2x1x2`: CPUs 0,1 share core 0 and
//! CPUs 2,3 share core 1). Packages only group cores; the rate model does not
//! distinguish cores of one package from cores of another.

use crate::error::bad_input;
use serde::Serialize;
use std::ops::Range;

/// Largest number of logical CPUs a simulated machine may have.
pub(crate) const MAX_CPUS: usize = 4096;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Shape {
    pub(crate) packages: usize,
    pub(crate) cores_per_package: usize,
    pub(crate) threads: usize,
}

impl Shape {
    pub(crate) fn new(packages: usize, cores_per_package: usize, threads: usize) -> anyhow::Result<Shape> {
        let s = Shape { packages, cores_per_package, threads };
        let n = packages.checked_mul(cores_per_package).and_then(|c| c.checked_mul(threads));
        match n {
            Some(n) if (1..=MAX_CPUS).contains(&n) && packages >= 1 && cores_per_package >= 1 && threads >= 1 => Ok(s),
            _ => Err(bad_input(format!(
                "topology {packages}x{cores_per_package}x{threads}: each of packages, cores, threads must be at least 1 and the product at most {MAX_CPUS}"
            ))),
        }
    }

    /// Parse `PxCxT` (`2x1x2`).
    pub(crate) fn parse(s: &str) -> anyhow::Result<Shape> {
        let parts: Vec<&str> = s.trim().split(['x', 'X']).collect();
        let bad = || {
            bad_input(format!("topology {s:?}: expected PACKAGESxCORESxTHREADS with positive integers, e.g. 2x1x2 (2 packages of 1 core with 2 threads)"))
        };
        if parts.len() != 3 {
            return Err(bad());
        }
        let mut v = [0usize; 3];
        for (i, p) in parts.iter().enumerate() {
            v[i] = p.trim().parse().map_err(|_| bad())?;
        }
        Shape::new(v[0], v[1], v[2])
    }

    pub(crate) fn ncpus(&self) -> usize {
        self.packages * self.cores_per_package * self.threads
    }
    pub(crate) fn ncores(&self) -> usize {
        self.packages * self.cores_per_package
    }
    pub(crate) fn core_of(&self, cpu: usize) -> usize {
        cpu / self.threads
    }
    /// Logical CPUs of one core.
    pub(crate) fn cpus_of(&self, core: usize) -> Range<usize> {
        core * self.threads..(core + 1) * self.threads
    }
    #[cfg(test)]
    pub(crate) fn package_of_core(&self, core: usize) -> usize {
        core / self.cores_per_package
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}x{}x{}", self.packages, self.cores_per_package, self.threads)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_numbers_siblings() {
        let s = Shape::parse("2x1x2").unwrap();
        assert_eq!((s.ncpus(), s.ncores()), (4, 2));
        assert_eq!(s.cpus_of(1), 2..4);
        assert_eq!(s.core_of(1), 0);
        assert_eq!(s.core_of(2), 1);
        let s = Shape::parse("2x4x2").unwrap();
        assert_eq!(s.package_of_core(5), 1);
        assert_eq!(s.to_string(), "2x4x2");
    }

    #[test]
    fn rejects_malformed() {
        for bad in ["", "2x2", "2x0x2", "axbxc", "2x1x2x1", "-1x1x1", "100000x100000x100000"] {
            let e = Shape::parse(bad).unwrap_err();
            assert!(crate::error::is_bad_input(&e), "{bad}");
        }
    }
}
