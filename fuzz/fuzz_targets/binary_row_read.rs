//! libFuzzer entry point; the body is [`sfstate_fuzz::binary_row_read`].
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| sfstate_fuzz::binary_row_read(data));
