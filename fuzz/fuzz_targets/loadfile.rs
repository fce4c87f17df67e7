//! Fuzz the dbench loadfile parser: any bytes must give a loadfile or an
//! error naming a line, never a panic; whatever parses must format back to
//! lines that parse to the same operations.
//!
//! Run with `cargo fuzz run loadfile` from the repository root (needs
//! cargo-fuzz and a nightly toolchain).
#![no_main]

use kdelta::fuzzing::{format_op, parse_bytes, parse_line};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_bytes("fuzz", data) {
        Ok(lf) => {
            for op in &lf.ops {
                let again = parse_line(&format_op(op), op.line).expect("a formatted op parses").expect("not blank");
                assert_eq!(again.kind, op.kind);
                assert_eq!(again.status, op.status);
            }
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
});
