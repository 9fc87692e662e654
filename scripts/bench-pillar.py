#!/usr/bin/env python3
"""Salt's side of scripts/bench-pillar.sh: what Salt's master does for each `_pillar`
request (salt.pillar.get_pillar(...).compile_pillar(), as AESFuncs._pillar), N times, for
minion ids m0..m{N-1} with the same grains. Prints one line like the Rust bench."""
import json
import os
import sys
import tempfile
import time

import salt.config
import salt.pillar


def main():
    tree, grains_file, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    extra = sys.argv[4] if len(sys.argv) > 4 else ""
    with open(grains_file) as f:
        grains = json.load(f)
    d = tempfile.mkdtemp(prefix="bench-pillar-")
    conf = os.path.join(d, "master")
    with open(conf, "w") as f:
        f.write(
            f"root_dir: {d}\npki_dir: {d}/pki\ncachedir: {d}/cache\nsock_dir: {d}/sock\n"
            f"log_file: {d}/log\npillar_roots: {{base: [{tree}]}}\n{extra}\n"
        )
    opts = salt.config.master_config(conf)
    keys = 0
    t0 = time.monotonic()
    for i in range(n):
        g = dict(grains)
        g["id"] = f"m{i}"
        p = salt.pillar.get_pillar(opts, g, f"m{i}", saltenv="base")
        keys += len(p.compile_pillar())
    secs = time.monotonic() - t0
    print(
        f"salt: {n} compiles in {secs:.2f} s = {n / secs:.0f} compiles/s "
        f"(1 process, {keys / n:.1f} keys/minion)"
    )


if __name__ == "__main__":
    main()
