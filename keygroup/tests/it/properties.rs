//! Property tests (proptest, default config and its fixed-seed persistence): writer/reader
//! round trips over random rows, key-group range and rescale invariants, hash determinism.
