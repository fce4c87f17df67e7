//! Parameter values (sizes, durations, booleans): never panic.
#![no_main]
use kdelta::fuzzing::{parse_bool, parse_duration, parse_size};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = parse_size(s);
        let _ = parse_duration(s);
        let _ = parse_bool(s);
    }
});
