#!/usr/bin/env bash
# Sourced by the other scripts: one persistent target directory per machine, so repeated
# builds (and CI runs on the same machine) are incremental.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/sfstate/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
