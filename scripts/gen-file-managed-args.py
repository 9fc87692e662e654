"""Golden data: the arguments of Salt's `file.managed` with their defaults, from
`inspect.signature(salt.states.file.managed)`, for crates/states/tests/file_managed_args.rs.

    .venv/salt-3007.17/bin/python scripts/gen-file-managed-args.py \
        > crates/states/tests/data/file-managed-args.json
"""
import inspect
import json

import salt.states.file
import salt.version

params = []
for p in inspect.signature(salt.states.file.managed).parameters.values():
    if p.kind is p.VAR_KEYWORD:
        continue
    default = None if p.default is inspect.Parameter.empty else p.default
    params.append({"name": p.name, "default": default, "required": p.default is inspect.Parameter.empty})
print(json.dumps({"salt": salt.version.__version__, "params": params}, indent=1))
