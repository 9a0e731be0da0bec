#!/usr/bin/env bash
# Installs what a fresh machine lacks for building and testing sfstate. Idempotent: a machine
# that already has everything is left alone (no network access then).
#
# Called by scripts/run.sh, scripts/test.sh and .ci/run; run it by hand only to pre-install.
set -euo pipefail

# Debian packages the build needs: libclang for librocksdb-sys's bindgen (typed-store).
DEBIAN_PACKAGES=(pkg-config libclang-dev)

missing=()
for pkg in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}"
fi

# Cargo subcommands the test command uses.
if ! cargo nextest --version >/dev/null 2>&1; then
  echo "setup: installing cargo-nextest from crates.io" >&2
  cargo install --locked cargo-nextest
fi
