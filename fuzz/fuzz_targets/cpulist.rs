//! CPU lists and masks: never panic; whatever parses prints back to itself.
#![no_main]
use kdelta::fuzzing::CpuSet;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(set) = CpuSet::parse_list(s) {
            assert_eq!(CpuSet::parse_list(&set.to_string()).unwrap(), set);
        }
        let _ = CpuSet::parse_mask(s);
    }
});
