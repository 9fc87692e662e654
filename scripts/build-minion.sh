#!/usr/bin/env bash
# Builds salt-minion and salt-call as shipped: Cargo profile `minion` (opt-level "z", fat
# LTO) with OpenSSL linked statically from the distribution's libcrypto.a/libssl.a (Debian:
# libssl-dev), for a small idle footprint (docs/benchmarks.md "Minion footprint, fifth
# round"; docs/decisions.md says why and what it means for OpenSSL security updates: a
# rebuild). Only the minion is linked this way; the master keeps the shared libcrypto.
# Output: target/minion/. Extra arguments go to `cargo build` (e.g. --locked, --quiet).
# MINION_OPENSSL=shared builds the same profile against the shared libraries instead.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${MINION_OPENSSL:-static}" = static ]; then
    lib=$(gcc -print-file-name=libcrypto.a 2>/dev/null || true)
    if [ ! -f "$lib" ]; then
        echo "build-minion.sh: no libcrypto.a found (Debian/Ubuntu: apt-get install libssl-dev);" \
            "MINION_OPENSSL=shared links the shared OpenSSL instead" >&2
        exit 1
    fi
    # openssl-sys finds OpenSSL through pkg-config, which never links a library of a
    # system directory statically: name the directories and ask for static linking.
    export OPENSSL_STATIC=1 OPENSSL_NO_PKG_CONFIG=1
    OPENSSL_LIB_DIR=$(dirname "$(readlink -f "$lib")")
    export OPENSSL_LIB_DIR OPENSSL_INCLUDE_DIR=${OPENSSL_INCLUDE_DIR:-/usr/include}
fi
exec cargo build --profile minion -p salt-minion "$@"
