//! The kernel-settings journal's reader, which `kdelta restore` trusts to
//! say what to write back as root: never panics, whatever the bytes; looks
//! at no more than its bound; whatever it accepts began with kdelta's owner
//! line of this format, names only absolute paths without `.` or `..`, one
//! entry per file, originals of bounded length; a refusal is one line.
#![no_main]
use kdelta::fuzzing::{Entries, MAX_BYTES, MAX_VALUE};
use libfuzzer_sys::fuzz_target;
use std::path::Component;

fuzz_target!(|data: &[u8]| {
    match Entries::parse(data) {
        Ok(e) => {
            assert!(data.len() as u64 <= MAX_BYTES);
            if !e.wrote.is_empty() || !e.mounted.is_empty() {
                assert!(e.owner.is_some_and(|o| o.pid > 0), "entries without an owner line");
            }
            for (p, o) in &e.wrote {
                assert!(
                    p.is_absolute() && p.components().all(|c| matches!(c, Component::RootDir | Component::Normal(_))),
                    "{p:?}"
                );
                assert!(o.len() <= MAX_VALUE && !o.contains('\0'));
                assert_eq!(e.wrote.iter().filter(|(q, _)| q == p).count(), 1, "one entry per file");
            }
            for m in &e.mounted {
                assert!(m.is_absolute(), "{m:?}");
            }
            let _ = e.describe();
        }
        Err(why) => assert!(!why.contains('\n') && why.len() < 10_000, "{why}"),
    }
});
