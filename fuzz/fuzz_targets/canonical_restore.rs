//! libFuzzer entry point; the body is [`sfstate_fuzz::canonical_restore`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::canonical_restore(data));
