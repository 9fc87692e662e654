#!/usr/bin/env python3
"""Write Salt's DEFAULT_MASTER_OPTS as JSON, for the wheel function `config.values`.

Run with the Salt 3007.17 venv's python (installs nothing, reads no configuration):

    .venv/salt-3007.17/bin/python scripts/gen-salt-master-defaults.py [OUT_DIR]

OUT_DIR defaults to crates/config/data; the file is OUT_DIR/salt-master-defaults.json:

    {"generated_by": ..., "salt": "3007.17",
     "computed": {key: how salt-rs computes it at call time},
     "defaults": {every key of DEFAULT_MASTER_OPTS: its value, sorted}}

salt-config embeds it: `config.values` starts from these defaults, as Salt's
`salt.config.master_config()` starts from `DEFAULT_MASTER_OPTS.copy()`.

The defaults that depend on the machine or the process running Salt are not written: their
value is the marker "<computed>" and salt-config computes them when called, as Salt does
when it imports salt.config:

    user              salt.utils.user.get_user(): the name of the effective uid
    ssh_config_file   os.path.join(salt.syspaths.HOME_DIR, ".ssh", "config"), HOME_DIR being
                      os.path.expanduser("~") ($HOME, else the user's home in passwd)
    ipc_write_buffer  int(max(5% of the memory, 10 MiB) * 0.5); apply_master_config sets it to
                      0 unless the file sets it, so only a file's `dynamic` needs it

The script checks that list: it imports salt.config again with another HOME and compares,
and fails if a key not in the list changed (or a listed one has a value that is not the
machine's). salt.syspaths are Salt's Linux defaults here (no salt/_syspaths.py in a pip venv).
"""

import json
import os
import subprocess
import sys

COMPUTED = {
    "user": "the name of the effective uid (salt.utils.user.get_user)",
    "ssh_config_file": "os.path.join(os.path.expanduser('~'), '.ssh', 'config')",
    "ipc_write_buffer": "int(max(0.05 * memory, 10 MiB) * 0.5) (_DFLT_IPC_WBUFFER)",
}

DUMP = """
import json, salt.config
print(json.dumps(salt.config.DEFAULT_MASTER_OPTS.copy(), sort_keys=True))
"""


def dump(env):
    out = subprocess.run([sys.executable, "-c", DUMP], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "crates", "config", "data"
    )
    import salt.utils.user
    import salt.version

    try:
        import salt._syspaths  # noqa: F401  pylint: disable=unused-import
        sys.exit("this Salt has build-time salt/_syspaths.py; use a pip-installed venv")
    except ImportError:
        pass
    here = dump(dict(os.environ))
    elsewhere = dump(dict(os.environ, HOME="/nonexistent/probe-home"))
    moved = {k for k in here if here[k] != elsewhere[k]}
    if not moved <= set(COMPUTED):
        sys.exit(f"defaults that depend on HOME but are not in COMPUTED: {sorted(moved - set(COMPUTED))}")
    if here["user"] != salt.utils.user.get_user():
        sys.exit("user is not the effective user")
    if here["ssh_config_file"] != os.path.join(os.path.expanduser("~"), ".ssh", "config"):
        sys.exit("ssh_config_file is not under the home directory")
    if not isinstance(here["ipc_write_buffer"], int):
        sys.exit("ipc_write_buffer is not a number")
    for key in COMPUTED:
        here[key] = "<computed>"
    doc = {
        "generated_by": "scripts/gen-salt-master-defaults.py from salt.config.DEFAULT_MASTER_OPTS",
        "salt": salt.version.__version__,
        "computed": COMPUTED,
        "defaults": here,
    }
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "salt-master-defaults.json")
    with open(path, "w") as f:
        json.dump(doc, f, sort_keys=True, indent=1)
        f.write("\n")
    print(f"{path}: {len(here)} defaults, {len(COMPUTED)} computed")


if __name__ == "__main__":
    main()
