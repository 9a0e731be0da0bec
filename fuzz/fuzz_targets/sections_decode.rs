//! libFuzzer entry point; the body is [`sfstate_fuzz::sections_decode`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::sections_decode(data));
