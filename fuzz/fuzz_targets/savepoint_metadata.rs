//! libFuzzer entry point; the body is [`sfstate_fuzz::savepoint_metadata`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::savepoint_metadata(data));
