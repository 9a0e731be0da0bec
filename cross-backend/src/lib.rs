//! Test-only crate: the one place that sees both backends (backends never depend on each
//! other). Its tests (`tests/it/`) run the cross-backend cases of the `state-api`
//! conformance suite with each backend's `test-util` factory. There is no library API.

#![forbid(unsafe_code)]
