#!/usr/bin/env bash
# Regenerates third_party/zeromq-src: a trimmed copy of the zeromq-src crate (libzmq 4.3.4's
# source and the build logic zmq-sys calls) with third_party/zeromq-src.patch applied, used by
# the root Cargo.toml's `[patch.crates-io]`. Why: third_party/zeromq-src/README.md.
#
#   scripts/vendor-zeromq-src.sh [path/to/zeromq-src-0.2.6+4.3.4.crate]
#
# Without an argument it takes the .crate from cargo's download cache (~/.cargo/registry/cache;
# `cargo fetch` on a checkout without the [patch] puts it there). The archive's SHA-256 is
# checked against crates.io's checksum (the one Cargo.lock held before the [patch]).
set -euo pipefail

version='0.2.6+4.3.4'
sha256='fc120b771270365d5ed0dfb4baf1005f2243ae1ae83703265cb3504070f4160b'
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/third_party/zeromq-src"
patch_file="$root/third_party/zeromq-src.patch"

crate=${1:-}
if [[ -z $crate ]]; then
    for c in "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/"zeromq-src-$version.crate"; do
        [[ -f $c ]] && crate=$c && break
    done
fi
if [[ -z $crate || ! -f $crate ]]; then
    echo "zeromq-src-$version.crate not found: pass its path, or run \`cargo fetch\` on a" >&2
    echo "checkout without the [patch.crates-io] entry to download it" >&2
    exit 1
fi
echo "$sha256  $crate" | sha256sum --check --quiet -

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tar -xzf "$crate" -C "$tmp"
src="$tmp/zeromq-src-$version"

# Keep only what `zeromq_src::Build::build` reads on Linux: the crate's manifest, build logic
# and licences; libzmq's headers, sources, builtin SHA-1 and licence texts. (build() copies
# vendor/{include,src,external} into OUT_DIR, so those directories must exist.)
rm -rf "$dest.new"
mkdir -p "$dest.new/vendor/external"
cp "$src"/{Cargo.toml,LICENSE,LICENSE-APACHE,LICENSE-MIT} "$dest.new/"
cp -r "$src/src" "$dest.new/src"
cp -r "$src/vendor/include" "$src/vendor/src" "$dest.new/vendor/"
cp -r "$src/vendor/external/sha1" "$dest.new/vendor/external/"
cp "$src"/vendor/{AUTHORS,COPYING,COPYING.LESSER} "$dest.new/vendor/"

patch -d "$dest.new" -p1 --no-backup-if-mismatch < "$patch_file"

# Our README survives regeneration.
if [[ -f $dest/README.md ]]; then cp "$dest/README.md" "$dest.new/README.md"; fi
rm -rf "$dest"
mv "$dest.new" "$dest"
echo "regenerated $dest from $(basename "$crate") with $(basename "$patch_file")"
