//! Fuzz the chat frame decoder: any bytes must decode, wait for more, or be
//! rejected, never panic; what decodes must re-encode to the same frame.
#![no_main]

use kdelta::fuzzing::{decode, encoded, read_frame};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut at = 0;
    while let Ok(Some((frame, n))) = decode(&data[at..]) {
        assert!(n >= 5 && at + n <= data.len());
        let again = encoded(&frame);
        assert_eq!(decode(&again), Ok(Some((frame, again.len()))));
        at += n;
    }
    let mut buf = Vec::new();
    let mut r = data;
    while let Ok(true) = read_frame(&mut r, &mut buf) {}
});
