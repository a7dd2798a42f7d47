"""pypaimon 2.1 branch operations for tests/interop/test_branch_interop.py.

Runs under the pypaimon venv as ``python branch_peer.py`` with a JSON spec on stdin:
``{"warehouse": str, "steps": [step, ...]}``; prints ``{"results": [answer, ...]}``, one per step.
Steps (``table`` is ``db.t`` or ``db.t$branch_<name>``):

  {"op": "create_branch", "table", "branch", "tag": str?}  pypaimon's FileSystemBranchManager
  {"op": "create_tag", "table", "name"}                     tag the table's latest snapshot
  {"op": "write", "table", "rows": {column: [values]}}      one batch commit
  {"op": "read", "table", "tag": str?}                      -> {"rows": [{column: value}, ...]}
  {"op": "branches", "table"}                               -> {"branches": [name, ...]}

Rows travel as JSON (small tables of strings and integers only).
"""

import json
import sys

import pyarrow as pa

from pypaimon import CatalogFactory
from pypaimon.schema.data_types import PyarrowFieldParser


def arrow_schema(table):
    return PyarrowFieldParser.from_paimon_schema(table.table_schema.fields)


def write(table, rows):
    builder = table.new_batch_write_builder()
    writer = builder.new_write()
    committer = builder.new_commit()
    try:
        writer.write_arrow(pa.table(rows, schema=arrow_schema(table)))
        committer.commit(writer.prepare_commit())
    finally:
        writer.close()
        committer.close()


def read(table, tag=None):
    if tag:
        table = table.copy({"scan.tag-name": tag})
    builder = table.new_read_builder()
    splits = builder.new_scan().plan().splits()
    return builder.new_read().to_arrow(splits).to_pylist()


def run(catalog, step):
    op = step["op"]
    if op == "create_branch":
        catalog.create_branch(step["table"], step["branch"], step.get("tag"))
        return {}
    table = catalog.get_table(step["table"])
    if op == "create_tag":
        table.create_tag(step["name"])
        return {}
    if op == "write":
        write(table, step["rows"])
        return {}
    if op == "read":
        return {"rows": read(table, step.get("tag"))}
    if op == "branches":
        return {"branches": sorted(table.branch_manager().branches())}
    raise ValueError("unknown step %r" % op)


def main():
    spec = json.load(sys.stdin)
    catalog = CatalogFactory.create({"warehouse": spec["warehouse"]})
    print(json.dumps({"results": [run(catalog, step) for step in spec["steps"]]}))


if __name__ == "__main__":
    main()
