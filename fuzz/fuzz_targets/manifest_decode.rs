//! libFuzzer entry point; the body is [`sfstate_fuzz::manifest_decode`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::manifest_decode(data));
