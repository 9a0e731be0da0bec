//! libFuzzer entry point; the body is [`sfstate_fuzz::stored_value`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::stored_value(data));
