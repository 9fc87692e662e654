#!/usr/bin/env python3
"""Salt's master file server answers for the gitfs option tests (tests/tests/gitfs_options.rs).

Usage: python gitfs-answers.py <master config file> <requests.json> > answers.json

Builds Salt's `salt.fileserver.Fileserver` from the master config (what the master's
`AESFuncs` answers file requests with), runs `update()` (Salt's `fileserver.update`), then
answers each `[cmd, load]` of the JSON list in <requests.json> with the method the master binds to that
command (`_file_list` -> `Fileserver.file_list`, ...); `_file_hash_listed` answers
`_file_hash` for every file `_file_list` names. Prints the answers as a JSON list.
Run with a Salt venv's python and GitPython importable (its gitfs provider).
"""
import json
import sys

import salt.config
import salt.fileserver

COMMANDS = {
    "_file_envs": "file_envs",
    "_file_list": "file_list",
    "_dir_list": "dir_list",
    "_symlink_list": "symlink_list",
    "_file_hash": "file_hash",
    "_file_list_emptydirs": "file_list_emptydirs",
}


def main():
    opts = salt.config.master_config(sys.argv[1])
    fs = salt.fileserver.Fileserver(opts)
    fs.update()
    with open(sys.argv[2], encoding="utf-8") as f:
        requests = json.load(f)
    answers = []
    for cmd, load in requests:
        if cmd == "_file_hash_listed":
            # Not a master command: `_file_hash` of every file `_file_list` names.
            answers.append(
                {
                    path: fs.file_hash(dict(load, path=path))
                    for path in fs.file_list(load)
                }
            )
        else:
            answers.append(getattr(fs, COMMANDS[cmd])(load))
    json.dump(answers, sys.stdout, default=str)


if __name__ == "__main__":
    main()
