#!/usr/bin/env python3
"""Experiment behind docs/benchmarks.md "Minion footprint, fourth round": how much of an
idle minion's RSS is start-up-only pages. Starts our master and our minion (as bench.py's
footprint section does), waits for a first test.ping answer, pages the minion's file-backed
mappings out from outside (process_madvise MADV_PAGEOUT; root), then prints its RSS after
10 s idle and after one more test.ping + 10 s, with the per-mapping breakdown.

    BENCH_MINION_BIN_DIR=target/minion python3 scripts/footprint_pageout.py

The kernel skips pages other processes also map (libc, and libcrypto when the master runs
on the same host): point BENCH_MINION_BIN_DIR at a wrapper that execs the minion with
LD_LIBRARY_PATH set to private copies of the libraries to see those paged out too.
"""
import ctypes
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("BENCH_SKIP_SALT", "1")
import bench as b  # noqa: E402

SYS_PIDFD_OPEN, SYS_PROCESS_MADVISE, MADV_PAGEOUT = 434, 440, 21
libc = ctypes.CDLL(None, use_errno=True)


class IoVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def page_out(pid):
    """MADV_PAGEOUT over every file-backed mapping of pid; bytes advised."""
    ranges = []
    for line in open(f"/proc/{pid}/maps"):
        f = line.split()
        if len(f) > 5 and f[5].startswith("/"):
            a, e = (int(x, 16) for x in f[0].split("-"))
            ranges.append(IoVec(a, e - a))
    fd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    if fd < 0:
        raise OSError(ctypes.get_errno(), "pidfd_open")
    try:
        arr = (IoVec * len(ranges))(*ranges)
        r = libc.syscall(SYS_PROCESS_MADVISE, fd, arr, len(ranges), MADV_PAGEOUT, 0)
        if r < 0:
            raise OSError(ctypes.get_errno(), "process_madvise")
        return r
    finally:
        os.close(fd)


def main():
    m = b.Master("ours", "minion-pageout", sign=False).start()
    d, mid = m.dir / "minion", "fp-pageout"
    b.minion_conf(d, m, mid, "ours")
    p = b.subprocess.Popen([str(b.MINION_REL / "salt-minion"), "-c", str(d / "conf")],
                           stdout=open(d / "stdout.log", "a"), stderr=b.subprocess.STDOUT,
                           start_new_session=True)
    mib = lambda: f"{b.rss_kib(p.pid) / 1024:.2f} MiB"
    try:
        b.wait("minion answers", lambda: m.ping(mid, 5)[1] == 1, 120, 0.5)
        time.sleep(2)
        print("signed in, answered one test.ping:", mib())
        page_out(p.pid)
        print("just after the page-out:", mib())
        time.sleep(10)
        print("+ 10 s idle:", mib())
        t = time.time()
        ok = m.ping(mid, 5)[1] == 1
        print(f"test.ping answered: {ok}, salt round trip {time.time() - t:.3f} s")
        time.sleep(10)
        print("+ one test.ping and 10 s idle:", mib())
        print(b.smaps_breakdown(p.pid))
    finally:
        b.kill_group(p)
        m.stop()


if __name__ == "__main__":
    main()
