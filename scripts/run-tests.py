#!/usr/bin/env python3
"""Runs the workspace's test binaries side by side: what `cargo test --workspace
--no-fail-fast` does one binary after the other, spread over SLOTS binaries at once.

Most of the suite waits on real daemons (Salt's masters and minions, PostgreSQL, our own),
so one binary at a time leaves the machine idle. Two at once, each integration binary with
one test thread, still left the 2-core CI machine 31% idle on average (vmstat, a full local
run of 2026-11-29; 8% with three) and the run 1.6 minutes short of CI's 90-minute limit;
three at once is the default.

- Binaries are built first (`cargo test --no-run`, so a build error stops the run as before;
  then `cargo build --profile test --workspace --bins`, the daemons the tests start, which
  they take from SALT_RS_BIN_DIR)
  and run longest first, by the weights in scripts/test-weights.txt (seconds per binary from
  an earlier run; unknown binaries count as DEFAULT_WEIGHT), so the long ones do not end last.
- A binary of the integration package (`salt-integration-tests`, real daemons) runs with one
  test thread; the others (unit tests of a crate, quick) with two.
- EXCLUSIVE binaries load the machine on purpose (swarms of hundreds of minions, descriptor
  limits, soak, fault labs); they run first, each alone with two test threads, as under
  `cargo test`.
- Each binary runs where cargo runs it (its package's directory, CARGO_MANIFEST_DIR set), its
  output printed whole when it ends, then cargo's closing summary: `error: N targets failed:`.
- Doc-tests run last (`cargo test --doc`).

Usage: scripts/run-tests.py [SLOTS]  (default TEST_SLOTS or 3). Exit status 101 when any
binary failed, as cargo's; the failed binaries' panic lines are repeated at the end. The
durations measured are written to test-durations.txt in the target directory (copy them
into scripts/test-weights.txt to re-balance). A binary's output is printed when it ends, so
a hung test shows nothing until its own timeouts fire.
"""

import json
import os
import subprocess
import sys
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_WEIGHT = 20.0
INTEGRATION_PACKAGE = "salt-integration-tests"
EXCLUSIVE = {
    "fd_ceiling",
    "swarm_smoke",
    "swarm_highstate_smoke",
    "startup_soak",
    "chaos",
    "sub_stability",
    "failover_lab",
}


def weights():
    out = {}
    path = os.path.join(ROOT, "scripts", "test-weights.txt")
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2 and not line.startswith("#"):
                    out[parts[1]] = float(parts[0])
    except FileNotFoundError:
        pass
    return out


def build():
    """Builds every test binary; returns [(name, package, manifest_dir, executable)]."""
    cmd = [
        "cargo", "test", "--workspace", "--no-run",
        "--message-format=json-render-diagnostics",
    ]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    found = []
    for line in proc.stdout:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if msg.get("reason") != "compiler-artifact":
            continue
        exe = msg.get("executable")
        if not exe or not msg.get("profile", {}).get("test"):
            continue
        pkg = msg["package_id"]
        name = os.path.basename(exe).rsplit("-", 1)[0]
        manifest_dir = os.path.dirname(msg["manifest_path"])
        found.append((name, package_name(pkg), manifest_dir, exe))
    if proc.wait() != 0:
        sys.exit(proc.returncode or 101)
    # The daemons and tools the integration tests start (tests/src/bins.rs, the swarm), built
    # here with the workspace's feature resolution, which the build above already compiled
    # the dependencies for; the tests then take them from SALT_RS_BIN_DIR instead of running
    # `cargo build -p ...` themselves, whose narrower package selection resolved features
    # differently and rebuilt part of the dependency tree inside the first test binary.
    if "SALT_RS_BIN_DIR" not in os.environ:
        bins = subprocess.run(
            ["cargo", "build", "--profile", "test", "--workspace", "--bins"], cwd=ROOT
        )
        if bins.returncode != 0:
            sys.exit(bins.returncode or 101)
        target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
        os.environ["SALT_RS_BIN_DIR"] = os.path.join(target, "debug")
    return found


def package_name(package_id):
    # "path+file:///…/tests#salt-integration-tests@0.1.0" or "name 0.1.0 (path+file://…)"
    if "#" in package_id:
        tail = package_id.rsplit("#", 1)[1]
        return tail.split("@", 1)[0]
    return package_id.split(" ", 1)[0]


def panic_lines(output, context=6):
    """The failed tests' names and the first lines of each panic message, for the run's
    closing lines (a long binary output may be cut in the middle where CI shows it)."""
    lines = output.splitlines()
    out = []
    for i, line in enumerate(lines):
        if " panicked at " in line or (line.startswith("test ") and line.endswith("FAILED")):
            out.extend(l[:300] for l in lines[i : i + (context if "panicked" in line else 1)])
    return out[:60]


class Runner:
    def __init__(self, slots):
        self.free = threading.Semaphore(slots)
        self.print_lock = threading.Lock()
        self.failed = []
        self.durations = {}
        self.panics = {}

    def run(self, name, package, manifest_dir, exe, threads, extra):
        t0 = time.monotonic()
        env = dict(os.environ, CARGO_MANIFEST_DIR=manifest_dir, CARGO_PKG_NAME=package)
        rel = os.path.relpath(exe, ROOT)
        proc = subprocess.run(
            [exe, f"--test-threads={threads}", *extra],
            cwd=manifest_dir, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        )
        took = time.monotonic() - t0
        with self.print_lock:
            self.durations[name] = took
            sys.stdout.write(f"     Running {name} ({rel}) [{package}, {took:.1f}s]\n")
            sys.stdout.write(proc.stdout.decode("utf-8", "replace"))
            sys.stdout.flush()
            if proc.returncode != 0:
                self.failed.append((package, name, proc.returncode))
                self.panics[name] = panic_lines(proc.stdout.decode("utf-8", "replace"))

    def run_in_slot(self, *args):
        try:
            self.run(*args)
        finally:
            self.free.release()


def main():
    slots = int(sys.argv[1]) if len(sys.argv) > 1 else int(os.environ.get("TEST_SLOTS", "3"))
    extra = sys.argv[2:]
    known = weights()
    found = build()
    found.sort(key=lambda t: -known.get(t[0], DEFAULT_WEIGHT))
    runner = Runner(slots)
    # The exclusive binaries first, one at a time, alone on the machine.
    for name, package, manifest_dir, exe in found:
        if name in EXCLUSIVE:
            runner.run(name, package, manifest_dir, exe, "2", extra)
    # Then the others, longest first, `slots` at a time.
    threads = []
    for name, package, manifest_dir, exe in found:
        if name in EXCLUSIVE:
            continue
        runner.free.acquire()
        n = "1" if package == INTEGRATION_PACKAGE else "2"
        t = threading.Thread(
            target=runner.run_in_slot, args=(name, package, manifest_dir, exe, n, extra)
        )
        t.start()
        threads.append(t)
    for t in threads:
        t.join()
    doc = subprocess.run(["cargo", "test", "--workspace", "--doc", "--no-fail-fast"], cwd=ROOT)
    target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
    out = os.path.join(target, "test-durations.txt")
    try:
        with open(out, "w") as f:
            for name, took in sorted(runner.durations.items(), key=lambda kv: -kv[1]):
                f.write(f"{took:.1f} {name}\n")
    except OSError:
        pass
    if runner.failed:
        sys.stdout.write(f"error: {len(runner.failed)} targets failed:\n")
        for package, name, code in runner.failed:
            sys.stdout.write(f"    `-p {package} --test {name}` (exit status: {code})\n")
            for line in runner.panics.get(name, []):
                sys.stdout.write(f"        {line}\n")
        return 101
    return 101 if doc.returncode != 0 else 0


if __name__ == "__main__":
    sys.exit(main())
