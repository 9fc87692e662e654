"""Issue #39 items 3, 4 and 6 for the TARGETS table (scripts/bench_targets.py): the highstate
storm (section `hsstorm`), the per-minion cost extrapolated to 100,000 (section `cost`) and
the 100 MiB `_serve_file` against the crypto line (section `fileserver`)."""

import re


def add(row, log, target, num):
    # ---- #39 item 3: highstate storms
    sizes = sorted({int(r[0].split()[1]) for r in row(r"^hsstorm \d+$", r".")})
    for n in sizes:
        sec = f"^hsstorm {n}$"
        done = row(sec, r"^highstates done")
        fail = row(sec, r"^highstates failed")
        wall = row(sec, r"^seconds from publish")
        cpu = row(sec, r"^master CPU ms per highstate")
        if done and fail and wall:
            d, f = int(num(done[0][2]) or 0), fail[0][2]
            w = num(wall[0][2])
            failed, timed_out = (int(x) for x in f.split("/"))
            ok = failed == 0 and timed_out == 0 and w is not None
            if n <= 1000:
                target("#39.3", f"highstate storm, {n:,} minions: all done within 30 s, none failed or timed out",
                       f"{d:,} done in {w:.1f} s, {failed} failed ({timed_out} timed out)", ok and w <= 30)
            else:
                target("#39.3", f"highstate storm, {n:,} minions: all done, none failed or timed out",
                       f"{d:,} done in {w:.1f} s, {failed} failed ({timed_out} timed out)", ok)
        if cpu and num(cpu[0][2]):
            o, s = num(cpu[0][2]), num(cpu[0][3])
            if s:
                target("#39.3", f"highstate storm, {n:,} minions: master CPU per highstate >= 20x lower than Salt's",
                       f"{s / o:.1f}x ({o:.2f} vs {s:.2f} ms)", s / o >= 20)
            else:
                target("#39.3", f"highstate storm, {n:,} minions: master CPU per highstate >= 20x lower than Salt's",
                       f"ours {o:.2f} ms, Salt not run", None)
    if not sizes:
        target("#39.3", "highstate storm: 1,000 minions within 30 s, CPU per highstate >= 20x lower than Salt's",
               None, None)

    # ---- #39 item 4: per-minion cost at 100,000 (linear fit of the measured sizes)
    for label, limit, unit in (("master RSS MiB", 1536, " MiB"), ("test.ping fan-out s", 5.0, " s"),
                               ("idle master CPU %", 2.0, "%")):
        r = row(r"^cost$", rf"^{re.escape(label)}.* at 100,000 \(extrapolated\)$")
        fitted = row(r"^cost$", rf"^{re.escape(label)}.*: fit a \+ b\*n$")
        pts = re.search(r"points (.*)$", fitted[0][4]) if fitted else None
        v = num(r[0][2]) if r else None
        op = "<" if "fan-out" in label else "<="
        target("#39.4", f"100,000 minions (extrapolated): {label} {op} {limit:g}",
               None if v is None else f"{v:.3g}{unit} (fit of {pts.group(1) if pts else '-'})",
               None if v is None else (v < limit if op == "<" else v <= limit))

    # ---- #39 item 6: the 100 MiB _serve_file against the same-protocol crypto line
    fs = log("fileserver")
    m = fs and re.search(r"^\| same \+ AES-192-CBC/HMAC-SHA256[^|]*\| *([\d.]+) *\|[^|]*\| *ours = (\d+)%", fs, re.M)
    target("#39.6", "_serve_file, 100 MiB: >= 80% of the AES-192-CBC + HMAC-SHA256 per-chunk line",
           f"{m.group(2)}% of {m.group(1)} MiB/s" if m else None, None if not m else int(m.group(2)) >= 80)
