//! `cargo +nightly fuzz run bundle`: the bundle decoder and verifier.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| parley_fuzz::bundle(data));
