//! Parameter values (sizes, durations, booleans, scanned ranges): never panic;
//! a scan never gives more than its bound.
#![no_main]
use kdelta::fuzzing::{parse_bool, parse_duration, parse_size, scan_list};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        let _ = parse_size(s);
        let _ = parse_duration(s);
        let _ = parse_bool(s);
        if let Ok(v) = scan_list(s) {
            assert!(v.len() <= 1000);
        }
    }
});
