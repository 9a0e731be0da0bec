//! Flink key groups (work in progress).
