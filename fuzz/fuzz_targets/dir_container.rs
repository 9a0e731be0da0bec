//! libFuzzer entry point; the body is [`sfstate_fuzz::dir_container`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::dir_container(data));
