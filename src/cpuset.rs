//! CPU lists as the kernel writes them (`0-3,8,10-11`), parsed and printed.
//!
//! Used for sysfs files (`online`, `core_cpus_list`, `shared_cpu_list`), for the
//! `cpus=LIST` configuration and for every CPU set kdelta shows. Old kernels only
//! have hex masks (`thread_siblings`: `00000000,00000003`); [`CpuSet::parse_mask`]
//! reads those.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

/// A set of logical CPU numbers, kept sorted.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(into = "String", try_from = "String")]
pub struct CpuSet(BTreeSet<u32>);

/// Largest CPU number accepted in a list; guards against `0-4294967295`.
pub(crate) const MAX_CPU: u32 = 65_535;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CPU list {input:?}: {why} (expected e.g. 0-3,8,10-11)")]
pub struct CpuListError {
    pub(crate) input: String,
    pub(crate) why: String,
}

impl CpuSet {
    pub fn new() -> Self {
        CpuSet(BTreeSet::new())
    }

    /// Parse a list such as `0-3,8,10-11`. Whitespace around items and a trailing
    /// newline are accepted; an empty string is the empty set (sysfs writes an
    /// empty line for e.g. `offline` when every CPU is online).
    pub fn parse_list(s: &str) -> Result<Self, CpuListError> {
        let err = |why: String| CpuListError { input: s.to_string(), why };
        let bad = |e: BadCpu| err(e.to_string());
        let mut set = BTreeSet::new();
        let t = s.trim();
        if t.is_empty() {
            return Ok(CpuSet(set));
        }
        for item in t.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(err("empty item".into()));
            }
            let (lo, hi) = match item.split_once('-') {
                Some((a, b)) => (parse_cpu(a).map_err(&bad)?, parse_cpu(b).map_err(&bad)?),
                None => {
                    let c = parse_cpu(item).map_err(&bad)?;
                    (c, c)
                }
            };
            if lo > hi {
                return Err(err(format!("range {lo}-{hi} runs backwards")));
            }
            set.extend(lo..=hi);
        }
        Ok(CpuSet(set))
    }

    /// Parse a hex mask as in `thread_siblings`: comma-separated 32-bit words,
    /// most significant first (`00000000,00000003` is CPUs 0 and 1).
    pub fn parse_mask(s: &str) -> Result<Self, CpuListError> {
        let err = |why: String| CpuListError { input: s.to_string(), why };
        let t = s.trim();
        if t.is_empty() {
            return Err(err("empty mask".into()));
        }
        let mut set = BTreeSet::new();
        let words: Vec<&str> = t.split(',').collect();
        for (i, w) in words.iter().rev().enumerate() {
            let w = w.trim();
            let v = u32::from_str_radix(w, 16).map_err(|_| err(format!("bad hex word {w:?}")))?;
            for bit in 0..32 {
                if v & (1 << bit) != 0 {
                    let cpu = (i as u32) * 32 + bit;
                    if cpu > MAX_CPU {
                        return Err(err(format!("CPU {cpu} above {MAX_CPU}")));
                    }
                    set.insert(cpu);
                }
            }
        }
        Ok(CpuSet(set))
    }

    pub fn insert(&mut self, cpu: u32) {
        self.0.insert(cpu);
    }
    pub fn contains(&self, cpu: u32) -> bool {
        self.0.contains(&cpu)
    }
    pub fn len(&self) -> usize {
        self.0.len()
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
    pub fn first(&self) -> Option<u32> {
        self.0.iter().next().copied()
    }
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().copied()
    }
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.0.is_subset(&other.0)
    }
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.union(&other.0).copied().collect())
    }
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.intersection(&other.0).copied().collect())
    }
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        CpuSet(self.0.difference(&other.0).copied().collect())
    }
    pub fn to_vec(&self) -> Vec<u32> {
        self.0.iter().copied().collect()
    }
}

/// One item of a CPU list that is no CPU kdelta takes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum BadCpu {
    #[error("{0:?} is not a CPU number")]
    NotANumber(String),
    #[error("CPU {0} above {max}", max = MAX_CPU)]
    TooHigh(u64),
}

fn parse_cpu(s: &str) -> Result<u32, BadCpu> {
    let s = s.trim();
    let nan = || BadCpu::NotANumber(s.to_string());
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(nan());
    }
    let v: u64 = s.parse().map_err(|_| nan())?;
    if v > MAX_CPU as u64 {
        return Err(BadCpu::TooHigh(v));
    }
    Ok(v as u32)
}

/// Compact form: consecutive runs collapse to `a-b`.
impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        let mut it = self.0.iter().copied().peekable();
        while let Some(lo) = it.next() {
            let mut hi = lo;
            while it.peek() == Some(&(hi + 1)) {
                hi = it.next().unwrap();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if hi == lo {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> Self {
        CpuSet(it.into_iter().collect())
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse_list(s)
    }
}

impl From<CpuSet> for String {
    fn from(c: CpuSet) -> String {
        c.to_string()
    }
}

impl TryFrom<String> for CpuSet {
    type Error = CpuListError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        CpuSet::parse_list(&s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_lists() {
        assert_eq!(CpuSet::parse_list("0-3,8,10-11\n").unwrap().to_vec(), vec![0, 1, 2, 3, 8, 10, 11]);
        assert_eq!(CpuSet::parse_list("5").unwrap().to_vec(), vec![5]);
        assert!(CpuSet::parse_list("").unwrap().is_empty());
        assert!(CpuSet::parse_list("\n").unwrap().is_empty());
    }

    #[test]
    fn rejects_bad_lists() {
        for bad in ["a", "1-", "-1", "3-1", "1,,2", "1-2-3", "99999999", "0x1", " , "] {
            let e = CpuSet::parse_list(bad).unwrap_err();
            assert!(e.to_string().contains(bad.trim()) || bad.trim().is_empty(), "{e}");
        }
    }

    #[test]
    fn parses_masks() {
        assert_eq!(CpuSet::parse_mask("00000000,00000003\n").unwrap().to_vec(), vec![0, 1]);
        assert_eq!(CpuSet::parse_mask("00000001,00000000").unwrap().to_vec(), vec![32]);
        assert_eq!(CpuSet::parse_mask("0101").unwrap().to_vec(), vec![0, 8]);
        assert!(CpuSet::parse_mask("zz").is_err());
    }

    #[test]
    fn displays_compactly() {
        assert_eq!(CpuSet::from_iter([0, 1, 2, 4, 6, 7]).to_string(), "0-2,4,6-7");
        assert_eq!(CpuSet::new().to_string(), "");
    }

    proptest! {
        #[test]
        fn display_parse_roundtrip(v in proptest::collection::btree_set(0u32..4096, 0..200)) {
            let s = CpuSet(v);
            prop_assert_eq!(CpuSet::parse_list(&s.to_string()).unwrap(), s);
        }

        #[test]
        fn parse_never_panics(s in "\\PC{0,40}") {
            let _ = CpuSet::parse_list(&s);
            let _ = CpuSet::parse_mask(&s);
        }
    }
}
