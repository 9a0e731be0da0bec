//! libFuzzer entry point; the body is [`sfstate_fuzz::store_model`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::store_model(data));
