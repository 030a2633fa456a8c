//! `cargo +nightly fuzz run artifact`: the artifact decoder (`put_artifact` and
//! `get_artifact` arguments, SPEC §18.1).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parley_fuzz::artifact(data));
