//! kdelta: a Linux performance lab. See ARCHITECTURE.md for the map.

pub mod app;
pub mod bench;
pub mod child;
pub mod cli;
pub mod config;
pub mod cpuset;
pub mod error;
pub mod harness;
pub mod measure;
pub mod model;
pub mod place;
pub mod report;
pub mod simulate;
pub mod stats;
pub mod store;
pub mod study;
pub mod sys;
pub mod topology;
