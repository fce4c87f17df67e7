//! A point's samples turned into its stored result: the summary and
//! warnings of its clean samples, the quality counts, the placement split,
//! and below-resolution for net figures.

use super::plan::Item;
use crate::measure::sampler::SampleSet;
use crate::model::record::{Quality, ResultRecord, Status};
use crate::model::sample::used;
use crate::model::Better;
use crate::stats::{self, warnings, Warning};

/// Whether a point's median is known to the target precision.
pub(super) fn ci_met(set: &SampleSet, target_pct: f64) -> bool {
    let clean = pick(&set.samples, &used(&set.meta, set.samples.len()));
    stats::trust::ci_half_width_pct(&clean).is_some_and(|h| h <= target_pct)
}

/// The entries of `v` that `mask` keeps.
fn pick<T: Clone>(v: &[T], mask: &[bool]) -> Vec<T> {
    v.iter().zip(mask).filter(|(_, k)| **k).map(|(x, _)| x.clone()).collect()
}

/// The raw figures a derived figure was computed from (two timings whose
/// difference is the figure, say), beside it: each one's median over the
/// samples the figure uses (`NAME`), and every value, aligned with
/// `samples` (`NAME_samples`). Parts that do not line up with the samples
/// are left out.
fn parts_into_extras(
    parts: &std::collections::BTreeMap<String, Vec<f64>>,
    mask: &[bool],
    extras: &mut serde_json::Map<String, serde_json::Value>,
) {
    for (name, all) in parts {
        if all.len() != mask.len() {
            continue;
        }
        let median = stats::summarize(&pick(all, mask), false).map(|m| m.median);
        crate::model::extras::put_part(extras, name, median, all);
    }
}

/// What a stored result is about: an item under a configuration, by the
/// configuration's name and its CPUs as stored (empty for one unavailable).
pub(super) struct Subject<'a> {
    pub(crate) item: &'a Item,
    pub(crate) config: &'a str,
    pub(crate) cpus: String,
}

/// What a point has gathered over its group's rounds: the samples of every
/// worker that measured it, why it failed if it did, and how many samples
/// extra rounds took to replace disturbed ones.
#[derive(Default, Clone)]
pub(super) struct Gathered {
    pub(crate) set: SampleSet,
    pub(crate) failed: Option<String>,
    pub(crate) retaken_extra: usize,
}

impl Gathered {
    pub(super) fn clean(&self) -> usize {
        self.set.clean()
    }
    pub(super) fn taken(&self) -> usize {
        self.set.samples.len()
    }
}

/// What a group's points are sampled for: the clean samples each wants and,
/// with `--runs auto`, the precision each median is refined to (percent
/// half-width of its 95 % interval).
#[derive(Debug, Clone, Copy)]
pub(super) struct Aim {
    pub(crate) want: usize,
    pub(crate) auto: bool,
    pub(crate) ci_target_pct: f64,
}

/// A result that was not measured: an unavailable configuration or benchmark.
pub(super) fn record_only(of: Subject, reason: String) -> ResultRecord {
    blank(of, Status::Unavailable, Some(reason))
}

/// A result of `of` with no samples yet.
fn blank(of: Subject, status: Status, reason: Option<String>) -> ResultRecord {
    let Subject { item, config, cpus } = of;
    ResultRecord {
        benchmark: item.info.name.to_string(),
        family: item.info.family.to_string(),
        params: item.params.clone(),
        config: config.to_string(),
        cpus,
        unit: item.info.unit.to_string(),
        better: item.info.better,
        status,
        reason,
        samples: Vec::new(),
        samples_meta: Vec::new(),
        quality: None,
        placement: Vec::new(),
        below_resolution: None,
        summary: None,
        iterations: None,
        extras: Default::default(),
        notes: Vec::new(),
        warnings: Vec::new(),
        simulated: false,
        profile: None,
    }
}

/// A profile cut to what a result stores (`MAX_BYTES`), what was cut and
/// the profile's own notes said in `notes`.
fn bounded(mut p: crate::model::profile::Profile, notes: &mut Vec<String>) -> crate::model::profile::Profile {
    p.bound(crate::model::profile::MAX_BYTES);
    if p.cut > 0 {
        notes.push(format!(
            "profile: the rarest stacks ({} of {} stack samples) merged into {} to keep it within {} KiB",
            p.cut,
            p.samples,
            crate::model::profile::CUT,
            crate::model::profile::MAX_BYTES / 1024
        ));
    }
    if p.deep > 0 {
        notes.push(format!(
            "profile: {} stack samples deeper than {} frames cut at {}",
            p.deep,
            crate::model::profile::MAX_DEPTH,
            crate::model::profile::DEEPER
        ));
    }
    notes.extend(p.notes.iter().cloned());
    p
}

/// The stored result of one point: summary and warnings of the clean
/// samples, quality counts, the placement split, below-resolution.
pub(super) fn finish(of: Subject, got: Gathered, aim: Aim) -> ResultRecord {
    let Gathered { set, failed, retaken_extra } = got;
    let unit = set.unit.clone().unwrap_or_else(|| of.item.info.unit.to_string());
    let rate = of.item.info.better == Better::Higher;
    let status = if failed.is_some() { Status::Failed } else { Status::Ok };
    // With no clean sample at all, the disturbed ones are summarised rather
    // than nothing: the result is noisy, and says so.
    let mask = used(&set.meta, set.samples.len());
    let clean = pick(&set.samples, &mask);
    let clean_secs = pick(&set.sample_secs, &mask);
    // Placement is read from clean samples only.
    let clean_meta = if set.clean() > 0 && set.meta.len() == mask.len() { pick(&set.meta, &mask) } else { Vec::new() };
    let summary = stats::summarize(&clean, rate);
    let placement = stats::trust::placement_split(&clean, &clean_meta).unwrap_or_default();
    let mut warns: Vec<Warning> =
        if status == Status::Ok { warnings::for_samples(&clean, &clean_secs) } else { Vec::new() };
    if !placement.is_empty() {
        // The split says it better than two anonymous clusters.
        warns.retain(|w| !matches!(w, Warning::TwoClusters { .. }));
    }
    warns.dedup();
    let disturbed = set.meta.iter().filter(|m| m.disturbed).count();
    let keep_meta = set.meta.len() == set.samples.len();
    let ci_pct = stats::trust::ci_half_width_pct(&clean);
    let quality = (status == Status::Ok || !set.samples.is_empty()).then(|| Quality {
        kind: set.kind,
        wanted: aim.want,
        clean: set.samples.len() - disturbed,
        disturbed,
        retaken: set.retaken + retaken_extra.min(disturbed),
        noisy: set.samples.len() - disturbed < aim.want,
        busy: disturbed > set.samples.len() - disturbed,
        ci_pct: if aim.auto { ci_pct } else { None },
        ci_target_met: aim.auto.then(|| ci_pct.is_some_and(|h| h <= aim.ci_target_pct)),
        futile: false,
    });
    let below_resolution =
        if set.net_of_overhead && status == Status::Ok { stats::trust::below_resolution(&clean) } else { None };
    let mut family = set.extras;
    parts_into_extras(&set.parts, &mask, &mut family);
    let mut extras = crate::model::extras::Extras::from_map(family);
    if set.quiet_waited_s > 0.0 {
        // How long samples waited for other work on their CPUs to stop
        // (`--quiet-wait`), and how many waits it outlasted.
        extras.quiet_waited_s = Some((set.quiet_waited_s * 1e3).round() / 1e3);
        extras.quiet_in_vain = Some(set.quiet_in_vain as u64);
    }
    let mut notes = set.notes;
    let profile = set.profile.map(|p| bounded(p, &mut notes));
    ResultRecord {
        profile,
        samples: set.samples,
        samples_meta: if keep_meta { set.meta } else { Vec::new() },
        quality,
        placement,
        below_resolution,
        summary,
        iterations: set.iterations,
        extras,
        notes,
        warnings: warns,
        unit,
        ..blank(of, status, failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_go_beside_the_figure_as_clean_medians_and_every_value() {
        let mut parts = std::collections::BTreeMap::new();
        parts.insert("catch_us".to_string(), vec![1.0, 9.0, 3.0, 2.0]);
        parts.insert("send_us".to_string(), vec![0.5, 0.4, 0.6, 0.5]);
        parts.insert("short".to_string(), vec![1.0]);
        let mut extras = serde_json::Map::new();
        // The second sample was disturbed: its 9.0 stays out of the median.
        parts_into_extras(&parts, &[true, false, true, true], &mut extras);
        assert_eq!(extras["catch_us"], 2.0);
        assert_eq!(extras["send_us"], 0.5);
        assert_eq!(extras["catch_us_samples"], serde_json::json!([1.0, 9.0, 3.0, 2.0]));
        assert!(
            !extras.contains_key("short") && !extras.contains_key("short_samples"),
            "misaligned parts are left out"
        );
    }
}
