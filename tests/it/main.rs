//! kdelta's integration tests, one binary: each module was a test file of
//! its own (one binary each, each linking the whole crate); `common` holds
//! the helpers they share. Run one module with
//! `cargo test --release --test it MODULE::`, for instance `trust::`.

mod common;

mod aim9_measure;
mod bisect;
mod build_bars;
mod cgroups;
mod check;
mod cli;
mod cmd;
mod cmd_once;
mod cmd_params;
mod counters;
mod dbench_compare;
mod docs;
mod doctor;
mod faults;
mod fleet;
mod hardening4;
mod history;
mod hostile;
mod hostile_fs;
mod inputs;
mod journal;
mod knobs;
mod knobs_live;
mod lat;
mod mem_bars;
mod mem_exhaustive;
mod mem_guard;
mod mem_preload;
mod mem_prop;
mod mem_variant;
mod meta;
mod netns;
mod pg_cli;
mod profile;
mod report_history;
mod report_html;
mod shell;
mod store_hostile;
mod study;
mod study_resume;
mod style;
mod trust;
