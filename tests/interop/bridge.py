"""The command loop both peer bridge scripts (peer.py, rust_peer.py) share; standard library
only, since it runs in the peers' own venvs (the scripts' directory is on their sys.path).

A bridge is a dict of commands, each taking the JSON spec read from stdin and returning the
JSON answer written to stdout; `batch` runs several calls in one process.
"""

import contextlib
import json
import sys


def run(commands: dict, argv: list) -> int:
    """`<script> <command> < spec.json`: the command's answer as one JSON line on stdout."""
    commands = {**commands, "batch": lambda spec: _batch(commands, spec)}
    if len(argv) != 2 or argv[1] not in commands:
        sys.stderr.write("usage: %s {%s} < spec.json\n" % (argv[0], "|".join(commands)))
        return 2
    spec = json.load(sys.stdin)
    # Anything the peer prints must not corrupt the JSON answer on stdout.
    with contextlib.redirect_stdout(sys.stderr):
        result = commands[argv[1]](spec)
    sys.stdout.write(json.dumps(result) + "\n")
    return 0


def _batch(commands: dict, spec: dict) -> dict:
    """`{"calls": [[command, spec], ...], "errors": "return"?}`: each call's answer in order;
    with errors="return" a failing call answers {"error": "<class>: <message>"} instead of
    failing the batch."""
    return {"results": [_call(commands, command, call_spec, spec.get("errors"))
                        for command, call_spec in spec["calls"]]}


def _call(commands: dict, command: str, call_spec: dict, errors) -> dict:
    if errors != "return":
        return commands[command](call_spec)
    try:
        return commands[command](call_spec)
    except Exception as error:  # reported to the caller, who asserts on it
        return {"error": "%s: %s" % (type(error).__name__, error)}
