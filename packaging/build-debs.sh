#!/usr/bin/env bash
# Builds the Debian packages salt-rs-master, salt-rs-minion and salt-rs-key into
# target/debian/ (see packaging/README.md). Needs cargo-deb:
#   cargo install cargo-deb --locked
# One release build of the master's and salt-key's crates (the workspace's release profile:
# thin LTO, stripped), the minion's build (scripts/build-minion.sh), then
# `cargo deb --no-build` per package. Extra arguments go to `cargo build`
# (e.g. --locked, --offline).
set -euo pipefail
cd "$(dirname "$0")/.."

if ! cargo deb --version >/dev/null 2>&1; then
    echo "cargo-deb is not installed: cargo install cargo-deb --locked" >&2
    exit 1
fi

cargo build --release -p salt-master -p salt-cli -p salt-key -p salt-api "$@"
# The minion (salt-minion, salt-call): profile `minion`, OpenSSL linked statically
# (docs/decisions.md: rebuild it on OpenSSL security advisories) -> target/minion/.
scripts/build-minion.sh "$@"
for pkg in salt-master salt-minion salt-key salt-api; do
    # --strip: also drops .comment and .note (lintian: binary-has-unneeded-section); the
    # release profile has stripped the symbols already. salt-minion's metadata names its
    # profile (`minion`), so cargo-deb takes its binaries from target/minion/.
    cargo deb --no-build --strip -p "$pkg" --output target/debian/
done
ls -l target/debian/*.deb
