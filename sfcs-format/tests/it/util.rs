//! Shared helpers.

use sfcs_format::Envelope;

/// Deterministic pseudo-random bytes (splitmix64, the generator of the Flink vector set).
pub(crate) fn splitmix_bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        out.extend_from_slice(&(z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// The chunks of an encoded envelope as owned buffers, ready to be tampered with.
pub(crate) fn owned_chunks(env: &Envelope<'_>) -> Vec<Vec<u8>> {
    env.chunks().map(<[u8]>::to_vec).collect()
}

/// `chunks` in the form `decode` takes.
pub(crate) fn present(chunks: &[Vec<u8>]) -> impl Iterator<Item = Option<&[u8]>> {
    chunks.iter().map(|c| Some(c.as_slice()))
}

/// Lowercase hex to bytes.
pub(crate) fn unhex(s: &str) -> Vec<u8> {
    assert!(s.len().is_multiple_of(2), "odd hex length");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

/// The workspace root. Cargo and nextest set `CARGO_MANIFEST_DIR` when they run a test, so a
/// test binary built in another checkout (and still fresh by mtime) reads this checkout's
/// fixtures; the compile-time value is the fallback for a binary run by hand.
pub(crate) fn workspace_root() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(
            || env!("CARGO_MANIFEST_DIR").into(),
            std::path::PathBuf::from,
        )
        .join("..")
}
