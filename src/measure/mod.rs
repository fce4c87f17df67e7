//! The measuring side, inside a worker process: the [`sampler::Sampler`] a
//! benchmark times its work through, and the probe that judges every sample
//! ([`disturb`]). It knows nothing of configurations, statistics, storage or
//! any particular benchmark.

pub(crate) mod benchmark;
pub(crate) mod disturb;
pub(crate) mod interfere;
pub(crate) mod owned;
pub(crate) mod profile;
pub(crate) mod reference;
pub(crate) mod sampler;
