"""DuckDB's Iceberg extension as a reader of Iceberg tables (see duckdb_iceberg_env.py).

Runs under the DuckDB peer venv as ``python duckdb_iceberg_peer.py <command>`` with a JSON spec on
stdin; prints one JSON object on stdout. The Avro and Iceberg extensions are LOADed from the
files their PyPI packages ship, with automatic installs off: a missing extension fails loudly
instead of reaching for the network.

Commands:
  read    ``iceberg_scan(<location>)`` into the Arrow IPC file ``out_ipc``; ``location`` is a
          ``v<N>.metadata.json`` file or a table directory (DuckDB then follows
          ``metadata/version-hint.text``); ``snapshot_id`` reads that snapshot instead of the
          current one. Prints ``{"rows": n, "schema": [[name, arrow type], ...]}``.
  batch   ``{"calls": [[command, spec], ...]}`` -> ``{"results": [answer, ...]}`` (one process,
          the extensions loaded once); ``"errors": "return"`` answers a failing call with
          ``{"error": "<class>: <message>"}``.
"""

import functools
import pathlib
import sys

import duckdb
import duckdb_extension_avro
import duckdb_extension_iceberg
import pyarrow.ipc as ipc

import bridge


def extension_binary(package):
    binaries = sorted(pathlib.Path(package.__file__).parent.glob("extensions/*/*.duckdb_extension"))
    if len(binaries) != 1:
        raise RuntimeError("expected one extension binary in %s, found %s" % (package.__name__, binaries))
    return binaries[0]


@functools.lru_cache(maxsize=1)
def connection():
    con = duckdb.connect()
    con.execute("SET autoinstall_known_extensions = false")
    con.execute("SET autoload_known_extensions = false")
    for package in (duckdb_extension_avro, duckdb_extension_iceberg):
        con.execute("LOAD '%s'" % extension_binary(package))
    return con


def sql_text(value):
    return "'%s'" % str(value).replace("'", "''")


def cmd_read(spec):
    arguments = [sql_text(spec["location"])]
    if spec.get("snapshot_id") is not None:
        arguments.append("snapshot_from_id = %d" % int(spec["snapshot_id"]))
    rows = connection().sql("SELECT * FROM iceberg_scan(%s)" % ", ".join(arguments)).to_arrow_table()
    with ipc.new_file(spec["out_ipc"], rows.schema) as sink:
        sink.write_table(rows)
    return {"rows": rows.num_rows, "schema": [[f.name, str(f.type)] for f in rows.schema]}


COMMANDS = {"read": cmd_read}


if __name__ == "__main__":
    sys.exit(bridge.run(COMMANDS, sys.argv))
