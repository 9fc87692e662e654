"""Run salt/modules/ini_manage.py's functions (Salt's own code, imported from the venv
running this script) on each file of a directory, in order: argv[1] the directory,
argv[2] a JSON list of [function, args, kwargs]. Prints a JSON list of
{"call", "file", "ret" | "error", "text"} (the file's text after the call)."""

import json
import os
import sys

import salt.modules.ini_manage as ini

ini.__salt_system_encoding__ = "utf-8"
ini.__opts__ = {"test": False}

out = []
directory, calls = sys.argv[1], json.loads(sys.argv[2])
for fun, args, kwargs in calls:
    for name in sorted(os.listdir(directory)):
        path = os.path.join(directory, name)
        entry = {"call": fun, "file": name}
        try:
            entry["ret"] = getattr(ini, fun)(path, *args, **kwargs)
        except Exception as exc:  # pylint: disable=broad-except
            entry["error"] = f"{type(exc).__name__}: {exc}"
        with open(path, "rb") as fh:
            entry["text"] = fh.read().decode("utf-8", "replace")
        out.append(entry)
print(json.dumps(out))
