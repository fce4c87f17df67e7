//! The store's header check, which judges a database file before SQLite
//! opens it: never panics, whatever the bytes and the claimed file length;
//! whatever it accepts has a whole SQLite header and a sound page size.
#![no_main]
use kdelta::fuzzing::{check_header, SCHEMA_VERSION};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let claimed = u64::from_le_bytes(data[..8].try_into().unwrap());
    let bytes = &data[8..];
    for len in [bytes.len() as u64, claimed] {
        if let Ok(h) = check_header(bytes, len) {
            assert!(bytes.len() >= 100 && len >= 100);
            assert!(h.page_size.is_power_of_two() && (512..=65536).contains(&h.page_size));
            assert!(len % h.page_size as u64 == 0);
            assert!(h.user_version <= SCHEMA_VERSION || h.application_id != kdelta::fuzzing::APPLICATION_ID);
        }
    }
});
