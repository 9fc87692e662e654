"""Render template cases with Salt's own `jinja` renderer (the minion's loader: real
`__salt__`, `__grains__`, `__pillar__`, `__opts__`), for crates/render/tests/jinja_golden.rs.

stdin: {"root": DIR, "files": DIR, "grains": {...}, "pillar": {...}, "opts": {...},
        "cases": [{"tmpl": TEXT, "sls": SLS, "tplfile": PATH}]}
stdout: [{"ok": TEXT} | {"error": TEXT}] in the cases' order.
"""
import io
import json
import os
import sys

import salt.config
import salt.loader

req = json.load(sys.stdin)
root = req["root"]
conf = os.path.join(root, "minion")
with open(conf, "w") as f:
    f.write(
        "file_client: local\n"
        f"root_dir: {root}\ncachedir: {root}/cache\npki_dir: {root}/pki\n"
        f"sock_dir: {root}/sock\nlog_file: {root}/log\n"
        f"file_roots: {{base: [{req['files']}]}}\n"
    )
opts = salt.config.minion_config(conf)
opts.update(req["opts"])
opts["grains"] = req["grains"]
opts["pillar"] = req["pillar"]
funcs = salt.loader.minion_mods(opts)
rend = salt.loader.render(opts, funcs)
out = []
for case in req["cases"]:
    try:
        text = rend["jinja"](
            io.StringIO(case["tmpl"]),
            saltenv="base",
            sls=case.get("sls", ""),
            tmplpath=case.get("tplfile") or None,
            **case.get("vars", {}),
        )
        out.append({"ok": text if isinstance(text, str) else text.read()})
    except Exception as exc:  # noqa: BLE001 - the error is the answer
        out.append({"error": f"{type(exc).__name__}: {exc}"})
print(json.dumps(out))
