//! A result's profile as stored: the folded stacks of its measured tasks
//! (`frame;frame;...;leaf COUNT`, root first, kernel frames ending in
//! `_[k]`), sampled while extra samples ran apart from the measured ones
//! (`--profile`), and how they were taken. Stored beside the result (the
//! `profile` column); reports draw it as flame graphs.
//!
//! Its size is bounded ([`Profile::bound`]): at most [`MAX_DEPTH`] frames a
//! stack (the frames nearest the root kept, the rest counted in one
//! `[deeper]` frame), each frame at most [`MAX_FRAME`] bytes, and at most
//! [`MAX_BYTES`] of folded text; the rarest stacks past that are merged into
//! one `[cut]` stack, so the widths still add up to the samples taken.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Bytes of folded text a result keeps (the stacks' names, counted once each).
pub(crate) const MAX_BYTES: usize = 256 * 1024;
/// Frames a stack keeps.
pub(crate) const MAX_DEPTH: usize = 128;
/// Bytes a frame's name keeps.
pub(crate) const MAX_FRAME: usize = 256;
/// The stack standing for the stacks cut to keep a profile within [`MAX_BYTES`].
pub(crate) const CUT: &str = "[cut]";
/// The frame standing for the frames past [`MAX_DEPTH`].
pub(crate) const DEEPER: &str = "[deeper]";

/// One result's profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub(crate) struct Profile {
    /// The sampled event (`cpu-clock`, `cycles`).
    pub(crate) event: String,
    /// Stacks sampled a second per CPU-second of a measured task.
    pub(crate) hz: u32,
    /// Folded stack -> samples. Their sum is [`samples`](Self::samples).
    pub(crate) stacks: BTreeMap<String, u64>,
    /// Stack samples taken (every one is in `stacks`, cut or not).
    pub(crate) samples: u64,
    /// Samples whose stacks were merged into [`CUT`].
    #[serde(default)]
    pub(crate) cut: u64,
    /// Stacks that lost frames past [`MAX_DEPTH`].
    #[serde(default)]
    pub(crate) deep: u64,
    /// The figures of the profiled samples, kept apart from the result's
    /// samples: a profiled sample is never a clean one.
    #[serde(default)]
    pub(crate) figures: Vec<f64>,
    /// Workers that took a profile for this result.
    #[serde(default)]
    pub(crate) workers: u32,
    /// What the profile does not cover (a server in another process).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) notes: Vec<String>,
}

impl Profile {
    /// Add folded lines (`stack COUNT`), as `inferno`'s collapsers write
    /// them; a line without a count is skipped. Each stack is bounded in
    /// depth and frame length as it comes in.
    pub(crate) fn add_folded(&mut self, text: &str) {
        for line in text.lines() {
            let Some((stack, n)) = line.trim_end().rsplit_once(' ') else { continue };
            let Ok(n) = n.parse::<u64>() else { continue };
            if stack.is_empty() || n == 0 {
                continue;
            }
            let (stack, deep) = bound_stack(stack);
            if deep {
                self.deep += n;
            }
            *self.stacks.entry(stack).or_default() += n;
            self.samples += n;
        }
    }

    /// Another worker's profile of the same result.
    pub(crate) fn absorb(&mut self, other: Profile) {
        if self.event.is_empty() {
            self.event = other.event;
            self.hz = other.hz;
        }
        for (s, n) in other.stacks {
            *self.stacks.entry(s).or_default() += n;
        }
        self.samples += other.samples;
        self.cut += other.cut;
        self.deep += other.deep;
        self.figures.extend(other.figures);
        self.workers += other.workers;
        for n in other.notes {
            if !self.notes.contains(&n) {
                self.notes.push(n);
            }
        }
    }

    /// Keep the folded text within `max_bytes`: the most sampled stacks
    /// stay, the others are merged into [`CUT`]. The counts' sum never
    /// changes.
    pub(crate) fn bound(&mut self, max_bytes: usize) {
        let size: usize = self.stacks.keys().map(|s| s.len() + 12).sum();
        if size <= max_bytes {
            return;
        }
        let mut all: Vec<(String, u64)> = std::mem::take(&mut self.stacks).into_iter().collect();
        // Most sampled first; ties by name, so the cut is deterministic.
        all.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut used = CUT.len() + 12;
        let mut cut = 0;
        for (s, n) in all {
            if s != CUT && used + s.len() + 12 <= max_bytes {
                used += s.len() + 12;
                self.stacks.insert(s, n);
            } else {
                cut += n;
            }
        }
        if cut > 0 {
            *self.stacks.entry(CUT.to_string()).or_default() += cut;
            self.cut = self.stacks[CUT];
        }
    }

    /// The folded lines, one stack a line, as `inferno` reads them.
    pub(crate) fn folded(&self) -> Vec<String> {
        self.stacks.iter().map(|(s, n)| format!("{s} {n}")).collect()
    }
}

/// A stack within [`MAX_DEPTH`] frames of [`MAX_FRAME`] bytes, and whether
/// frames were dropped.
fn bound_stack(stack: &str) -> (String, bool) {
    let frames: Vec<&str> = stack.split(';').collect();
    let deep = frames.len() > MAX_DEPTH;
    let keep = if deep { MAX_DEPTH - 1 } else { frames.len() };
    let mut out = String::with_capacity(stack.len().min(MAX_DEPTH * 32));
    for (i, f) in frames[..keep].iter().enumerate() {
        if i > 0 {
            out.push(';');
        }
        out.push_str(truncate(f, MAX_FRAME));
    }
    if deep {
        out.push(';');
        out.push_str(DEEPER);
    }
    (out, deep)
}

/// `s` cut to at most `max` bytes, on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// A frame's function name without `inferno`'s kernel (`_[k]`) or JIT
/// (`_[j]`) annotation, and whether it is a kernel frame.
pub(crate) fn frame_name(frame: &str) -> (&str, bool) {
    match frame.strip_suffix("_[k]") {
        Some(f) => (f, true),
        None => (frame.strip_suffix("_[j]").unwrap_or(frame), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folded_lines_add_up_and_bad_lines_are_skipped() {
        let mut p = Profile::default();
        p.add_folded("kdelta;main;write;do_syscall_64_[k] 3\nkdelta;main 2\nno count\nx;y notanumber\n\n a 0\n");
        p.add_folded("kdelta;main 5\n");
        assert_eq!(p.samples, 10);
        assert_eq!(p.stacks["kdelta;main"], 7);
        assert_eq!(p.stacks.len(), 2);
    }

    #[test]
    fn deep_stacks_and_long_frames_are_bounded() {
        let deep: Vec<String> = (0..200).map(|i| format!("f{i}")).collect();
        let long = "x".repeat(1000);
        let mut p = Profile::default();
        p.add_folded(&format!("{} 4\nroot;{long} 1\n", deep.join(";")));
        assert_eq!(p.samples, 5);
        assert_eq!(p.deep, 4);
        let kept = p.stacks.keys().find(|s| s.ends_with(DEEPER)).unwrap();
        assert_eq!(kept.split(';').count(), MAX_DEPTH);
        assert!(kept.starts_with("f0;f1;"), "the root side is kept");
        assert!(p.stacks.contains_key(&format!("root;{}", "x".repeat(MAX_FRAME))));
        // A multi-byte character at the cut stays whole.
        assert_eq!(truncate("ééé", 3), "é");
    }

    #[test]
    fn bounding_merges_the_rarest_stacks_and_keeps_the_sum() {
        let mut p = Profile::default();
        for i in 0..100u64 {
            p.add_folded(&format!("root;frame_number_{i:03} {}\n", i + 1));
        }
        let before = p.samples;
        p.bound(1000);
        let size: usize = p.stacks.keys().map(|s| s.len() + 12).sum();
        assert!(size <= 1000, "{size}");
        assert_eq!(p.stacks.values().sum::<u64>(), before, "widths still add up");
        assert!(p.cut > 0 && p.stacks[CUT] == p.cut);
        assert!(p.stacks.contains_key("root;frame_number_099"), "the most sampled stays");
        assert!(!p.stacks.contains_key("root;frame_number_000"), "the rarest goes");
        // Within the bound: untouched.
        let mut q = Profile::default();
        q.add_folded("a;b 1\n");
        q.bound(MAX_BYTES);
        assert_eq!(q.cut, 0);
        assert_eq!(q.folded(), ["a;b 1"]);
    }

    #[test]
    fn profiles_of_two_workers_merge() {
        let mut a =
            Profile { event: "cpu-clock".into(), hz: 999, workers: 1, figures: vec![1.0], ..Default::default() };
        a.add_folded("x;y 2\n");
        let mut b =
            Profile { event: "cpu-clock".into(), hz: 999, workers: 1, figures: vec![2.0], ..Default::default() };
        b.add_folded("x;y 1\nx;z 1\n");
        b.notes.push("n".into());
        a.absorb(b);
        assert_eq!((a.samples, a.workers, a.stacks["x;y"]), (4, 2, 3));
        assert_eq!(a.figures, [1.0, 2.0]);
        assert_eq!(a.notes, ["n"]);
    }

    #[test]
    fn frame_names() {
        assert_eq!(frame_name("do_idle_[k]"), ("do_idle", true));
        assert_eq!(frame_name("main"), ("main", false));
        assert_eq!(frame_name("jitted_[j]"), ("jitted", false));
    }
}
