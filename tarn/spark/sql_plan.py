"""What a Spark SQL statement asks of tarn, read with sqlglot (Spark dialect), without Spark.

`plan(statement, resolve)` returns one of the plain records below, or `Passthrough` for a
statement Spark runs itself. `resolve(parts)` gives the identifier `db.t` that a table name's
parts name in the attached catalog, or None. A statement tarn takes but cannot do raises
`InvalidArgument` naming the clause. Expressions are kept as Spark SQL text; MERGE's are
rewritten over the aliases `source` and `target` that `tarn.spark.merge_into` reads.
"""

from __future__ import annotations

import logging
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from tarn.errors import InvalidArgument

Resolve = Callable[[list[str]], "str | None"]
SOURCE, TARGET = "source", "target"  # merge_into's aliases (tarn/spark/dml.py)
PROVIDERS = (None, "paimon", "tarn")

# Paimon 2.0's Spark procedures (paimon-spark-common .../spark/procedure/*Procedure.java): their
# parameters in order; the ones tarn does not take are refused when given.
PROCEDURES = {
    "compact": ("table", "partitions", "compact_strategy", "order_strategy", "order_by", "where", "options",
                "partition_idle_time", "buckets"),
    "expire_snapshots": ("table", "retain_max", "retain_min", "older_than", "max_deletes", "options"),
    "create_tag": ("table", "tag", "snapshot", "time_retained"),
    "delete_tag": ("table", "tag"),
    "rollback": ("table", "version", "snapshot", "tag"),
    "create_branch": ("table", "branch", "tag", "ignoreIfExists"),
    "fast_forward": ("table", "branch"),
    "remove_orphan_files": ("table", "older_than", "dry_run", "parallelism", "mode"),
    "expire_partitions": ("table", "expiration_time", "timestamp_formatter", "timestamp_pattern",
                          "expire_strategy", "max_expires", "options"),
}
TAKEN = {
    "compact": {"table", "partitions", "compact_strategy"},
    "expire_snapshots": {"table", "retain_max", "retain_min", "older_than", "max_deletes"},
    "create_tag": {"table", "tag", "snapshot", "time_retained"},
    "delete_tag": {"table", "tag"},
    "rollback": {"table", "version", "snapshot", "tag"},
    "create_branch": {"table", "branch", "tag", "ignoreIfExists"},
    "fast_forward": {"table", "branch"},
    "remove_orphan_files": {"table", "older_than", "dry_run", "parallelism"},
    "expire_partitions": {"table", "expiration_time", "timestamp_formatter", "timestamp_pattern",
                          "expire_strategy", "max_expires", "options"},
}


@dataclass(frozen=True)
class Passthrough:
    """A statement for `spark.sql`: `sql` unchanged, or rewritten so that attached tables
    read through their views; `reads`: (view, identifier, read options) to make first."""
    sql: str
    reads: tuple[tuple[str, str, tuple], ...] = ()


@dataclass(frozen=True)
class Column:
    name: str
    type: str  # Spark DDL
    nullable: bool = True
    comment: str | None = None
    position: object = None  # None, "first" or ("after", column)


@dataclass(frozen=True)
class CreateTable:
    identifier: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    partition_keys: tuple[str, ...]
    options: dict
    comment: str | None
    if_not_exists: bool
    catalog: str | None = None  # the catalog's name, when the statement gives one (cat.db.t)
    query: Passthrough | None = None  # CREATE TABLE ... AS SELECT: the columns and rows


@dataclass(frozen=True)
class Insert:
    identifier: str
    query: Passthrough
    columns: tuple[str, ...] | None  # INSERT INTO t (a, b): the query's columns, in order
    static: dict  # PARTITION (k = v) values
    overwrite: bool
    by_name: bool = False  # INSERT ... BY NAME: the query's columns matched to the table's by name


@dataclass(frozen=True)
class Update:
    identifier: str
    set: dict  # column -> Spark SQL
    where: str | None


@dataclass(frozen=True)
class Delete:
    identifier: str
    where: str | None


@dataclass(frozen=True)
class Clause:
    """A WHEN clause of MERGE: `action` 'update', 'delete' or 'insert'; `values` '*' or
    {column: Spark SQL}; `condition` Spark SQL or None."""
    matched: bool
    action: str
    condition: str | None = None
    values: object = None


@dataclass(frozen=True)
class Merge:
    identifier: str
    source: Passthrough
    on: tuple[str, ...]
    clauses: tuple[Clause, ...]


@dataclass(frozen=True)
class Call:
    procedure: str
    identifier: str
    args: dict = field(default_factory=dict)


@dataclass(frozen=True)
class AlterTable:
    """`changes`: ('add', Column), ('rename', old, new), ('drop', name), ('set', key, value),
    ('unset', key)."""
    identifier: str
    changes: tuple


def plan(statement: str, resolve: Resolve):
    """The record of what `statement` asks (see the module docstring)."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.errors import ParseError

    try:
        with _quiet():
            trees = [t for t in sqlglot.parse(statement, read="spark") if t is not None]
    except ParseError:
        return Passthrough(statement)
    if len(trees) != 1:
        raise InvalidArgument(f"tarn.spark.sql runs one statement at a time, got {len(trees)}")
    tree = trees[0]
    if isinstance(tree, exp.Command):
        return _command(tree, statement, resolve)
    planner = _PLANNERS.get(type(tree).__name__)
    if planner is not None:
        done = planner(tree, resolve)
        if done is not None:
            return done
    return _passthrough(tree, statement, resolve)


@contextmanager
def _quiet():
    """sqlglot logs a warning for each statement it keeps as a Command (CALL, UNSET)."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _sql(node) -> str:
    return node.sql(dialect="spark")


def _parts(table) -> list[str]:
    return [p.name for p in table.parts]


def _target(table, resolve: Resolve, clause: str) -> str | None:
    from sqlglot import exp

    if isinstance(table, exp.Schema):
        table = table.this
    if not isinstance(table, exp.Table):
        raise InvalidArgument(f"tarn.spark.sql: {clause} needs a table name, got {_sql(table)}")
    return resolve(_parts(table))


def _text(node) -> str:
    """A literal's text (strings unquoted), or the expression's SQL."""
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return node.this
    if isinstance(node, exp.Boolean):
        return "true" if node.this else "false"
    return _sql(node)


# ------------------------------------------------------------------------------- reads


def _passthrough(tree, statement: str, resolve: Resolve) -> Passthrough:
    """`statement` unchanged when it reads no attached table; else rewritten over views."""
    reads = _rewrite_reads(tree, resolve)
    return Passthrough(_sql(tree), tuple(reads)) if reads else Passthrough(statement)


def _rewrite_reads(tree, resolve: Resolve) -> list:
    """Point every table `tree` reads in the attached catalog at its view (time travel: a view
    of its own); returns the (view, identifier, read options) used."""
    from sqlglot import exp

    reads = []
    for table in list(tree.find_all(exp.Table)):
        if not table.name:
            continue
        identifier = resolve(_parts(table))
        if identifier is None:
            continue
        options: tuple = ()
        view = identifier
        version = table.args.get("version")
        if version is not None:
            key = "versionasof" if version.this.upper() == "VERSION" else "timestampasof"
            value = _text(version.expression)
            options = ((key, value),)
            view = f"{identifier} {version.this.upper()} AS OF {value}"
        alias = table.args.get("alias") or exp.TableAlias(this=exp.to_identifier(table.name))
        replacement = exp.Table(this=exp.to_identifier(view, quoted=True), alias=alias)
        table.replace(replacement)
        reads.append((view, identifier, options))
    return reads


# ------------------------------------------------------------------------------- CREATE TABLE


def _create(tree, resolve: Resolve):
    from sqlglot import exp

    if (tree.args.get("kind") or "").upper() != "TABLE":
        return None
    props = {type(p).__name__: p for p in (tree.args.get("properties") or exp.Properties()).expressions}
    provider = props.get("FileFormatProperty")
    provider_name = provider.this.name.lower() if provider is not None else None
    if provider_name not in PROVIDERS:
        return None
    schema = tree.this
    query = None
    if tree.expression is not None:
        if isinstance(schema, exp.Schema):
            raise InvalidArgument("tarn.spark.sql: CREATE TABLE ... AS SELECT takes its columns from the query; "
                                  "drop the column list")
        query = _passthrough(tree.expression, _sql(tree.expression), resolve)
    elif not isinstance(schema, exp.Schema):
        raise InvalidArgument(f"tarn.spark.sql: CREATE TABLE {_sql(schema)} needs its columns ((name type, ...)) "
                              "or AS SELECT ...")
    parts = _parts(schema.this if isinstance(schema, exp.Schema) else schema)
    catalog = parts[0] if len(parts) == 3 else None
    identifier = ".".join((["default"] + parts)[-2:])
    options, primary_key, partition_keys, comment = {}, (), (), None
    for name, prop in props.items():
        if name == "PartitionedByProperty":
            partition_keys = tuple(_partition_column(c) for c in prop.this.expressions)
        elif name == "SchemaCommentProperty":
            comment = _text(prop.this)
        elif name not in ("FileFormatProperty", "Property"):
            raise InvalidArgument(f"tarn.spark.sql: CREATE TABLE clause {_sql(prop)} is not supported (columns, "
                                  "PARTITIONED BY, COMMENT and TBLPROPERTIES are)")
    for prop in (tree.args.get("properties") or exp.Properties()).expressions:
        if type(prop) is exp.Property:
            options[_text(prop.this)] = _text(prop.args["value"])
    if "primary-key" in options:
        primary_key = tuple(k.strip() for k in options.pop("primary-key").split(",") if k.strip())
    columns = tuple(_column(c, "CREATE TABLE") for c in schema.expressions) if query is None else ()
    return CreateTable(identifier, columns, primary_key, partition_keys, options, comment,
                       bool(tree.args.get("exists")), catalog, query)


def _partition_column(node) -> str:
    from sqlglot import exp

    if isinstance(node, (exp.Identifier, exp.Column)):
        return node.name
    raise InvalidArgument(f"tarn.spark.sql: PARTITIONED BY takes column names, got {_sql(node)} (partition "
                          "transforms are not Paimon partitions)")


def _column(node, clause: str) -> Column:
    from sqlglot import exp

    if not isinstance(node, exp.ColumnDef):
        raise InvalidArgument(f"tarn.spark.sql: {clause} takes column definitions, got {_sql(node)}")
    nullable, comment = True, None
    for constraint in node.args.get("constraints") or []:
        kind = constraint.args.get("kind")
        if isinstance(kind, exp.NotNullColumnConstraint) and not kind.args.get("allow_null"):
            nullable = False
        elif isinstance(kind, exp.CommentColumnConstraint):
            comment = _text(kind.this)
        else:
            raise InvalidArgument(f"tarn.spark.sql: {clause} column {node.name}: {_sql(constraint)} is not "
                                  "supported (NOT NULL and COMMENT are)")
    position = node.args.get("position")
    if position is not None:
        where = position.args.get("position", "").upper()
        position = "first" if where == "FIRST" else ("after", position.this.name) if where == "AFTER" else where
    return Column(node.name, _sql(node.args["kind"]), nullable, comment, position)


# ------------------------------------------------------------------------------- INSERT, UPDATE, DELETE


def _insert(tree, resolve: Resolve):
    from sqlglot import exp

    identifier = _target(tree.this, resolve, "INSERT")
    if identifier is None:
        return None
    table = tree.this.this if isinstance(tree.this, exp.Schema) else tree.this
    columns = tuple(c.name for c in tree.this.expressions) if isinstance(tree.this, exp.Schema) else None
    static = {}
    partition = table.args.get("partition")
    for item in partition.expressions if partition is not None else []:
        if not isinstance(item, exp.EQ):  # PARTITION (dt): a dynamic partition, the value from the query
            continue
        static[item.this.name] = _literal(item.expression, "INSERT ... PARTITION")
    query = tree.expression
    return Insert(identifier, _passthrough(query, _sql(query), resolve), columns, static,
                  bool(tree.args.get("overwrite")), bool(tree.args.get("by_name")))


def _literal(node, clause: str):
    from sqlglot import exp

    if isinstance(node, exp.Literal):
        return node.this if node.is_string else (int(node.this) if node.this.lstrip("-").isdigit()
                                                 else float(node.this))
    if isinstance(node, exp.Null):
        return None
    if isinstance(node, exp.Boolean):
        return node.this
    raise InvalidArgument(f"tarn.spark.sql: {clause} values are literals, got {_sql(node)}")


def _update(tree, resolve: Resolve):
    identifier = _target(tree.this, resolve, "UPDATE")
    if identifier is None:
        return None
    if tree.args.get("from_") or tree.args.get("from"):
        raise InvalidArgument("tarn.spark.sql: UPDATE ... FROM is not supported: use MERGE INTO")
    assignments = {a.this.name: _sql(a.expression) for a in tree.expressions}
    where = tree.args.get("where")
    return Update(identifier, assignments, _sql(where.this) if where is not None else None)


def _delete(tree, resolve: Resolve):
    identifier = _target(tree.this, resolve, "DELETE FROM")
    if identifier is None:
        return None
    if tree.args.get("using"):
        raise InvalidArgument("tarn.spark.sql: DELETE ... USING is not supported: use MERGE INTO ... THEN DELETE")
    where = tree.args.get("where")
    return Delete(identifier, _sql(where.this) if where is not None else None)


# ------------------------------------------------------------------------------- MERGE INTO


def _merge(tree, resolve: Resolve):
    from sqlglot import exp

    identifier = _target(tree.this, resolve, "MERGE INTO")
    if identifier is None:
        return None
    target_names = {tree.this.alias_or_name.lower()} | {p.lower() for p in _parts(tree.this)}
    using = tree.args["using"]
    source_names = {using.alias_or_name.lower()}
    if isinstance(using, exp.Table):
        source_names |= {p.lower() for p in _parts(using)}
        plain = using.copy()
        plain.set("alias", None)
        query = exp.select("*").from_(plain)
    elif isinstance(using, exp.Subquery):
        query = using.this.copy()
    else:
        raise InvalidArgument(f"tarn.spark.sql: MERGE INTO ... USING {_sql(using)} is not supported (a table or a "
                              "subquery is)")
    source = _passthrough(query, _sql(query), resolve)
    aliases = (target_names, source_names)
    on = _merge_keys(tree.args["on"], aliases)
    clauses = tuple(_when(w, aliases) for w in tree.args["whens"].expressions)
    return Merge(identifier, source, on, clauses)


def _realiased(node, aliases) -> str:
    """Spark SQL of `node` with columns of the target and the source over `target.`/`source.`."""
    from sqlglot import exp

    target_names, source_names = aliases

    def realias(column):
        if not isinstance(column, exp.Column) or not column.table:
            return column
        owner = column.table.lower()
        alias = TARGET if owner in target_names else SOURCE if owner in source_names else None
        return column if alias is None else exp.column(column.name, table=alias, quoted=column.this.quoted)

    return _sql(node.copy().transform(realias))


def _merge_keys(on, aliases) -> tuple[str, ...]:
    """The key columns of ON: `target.k = source.k` terms joined by AND."""
    from sqlglot import exp

    target_names, source_names = aliases
    keys = []
    for term in on.flatten() if isinstance(on, exp.And) else [on]:
        sides = [term.this, term.expression] if isinstance(term, exp.EQ) else []
        owners = sorted((c.table.lower() in target_names, c.name) for c in sides if isinstance(c, exp.Column))
        if (len(owners) != 2 or [o[0] for o in owners] != [False, True] or owners[0][1] != owners[1][1]
                or any(isinstance(s, exp.Column) and s.table.lower() not in target_names | source_names
                       for s in sides)):
            raise InvalidArgument(f"tarn.spark.sql: MERGE INTO ... ON {_sql(on)}: tarn matches rows on the primary "
                                  "key, so ON must be target.k = source.k for each key column k, joined by AND")
        keys.append(owners[0][1])
    return tuple(keys)


def _when(when, aliases) -> Clause:
    from sqlglot import exp

    if when.args.get("source"):
        raise InvalidArgument("tarn.spark.sql: MERGE clause WHEN NOT MATCHED BY SOURCE is not supported")
    matched = bool(when.args.get("matched"))
    condition = when.args.get("condition")
    condition = _realiased(condition, aliases) if condition is not None else None
    then = when.args["then"]
    if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
        return Clause(matched, "delete", condition)
    if isinstance(then, exp.Update):
        if len(then.expressions) == 1 and isinstance(then.expressions[0], exp.Star):
            return Clause(matched, "update", condition, "*")
        return Clause(matched, "update", condition,
                      {a.this.name: _realiased(a.expression, aliases) for a in then.expressions})
    if isinstance(then, exp.Insert):
        if isinstance(then.this, exp.Star) or then.this is None:
            return Clause(matched, "insert", condition, "*")
        names = [c.name for c in then.this.expressions]
        values = [_realiased(v, aliases) for v in then.expression.expressions]
        return Clause(matched, "insert", condition, dict(zip(names, values)))
    raise InvalidArgument(f"tarn.spark.sql: MERGE clause {_sql(when)} is not supported")


def merge_arguments(merge: Merge, columns: list[str], table: str) -> dict:
    """`tarn.spark.merge_into`'s when_* arguments for `merge`'s WHEN clauses over a table of
    `columns`: the first clause a row meets acts, as in SQL. Matched clauses become one delete
    condition and one update per column (CASE over the update clauses, the row's own value when
    none acts); one WHEN NOT MATCHED clause without a condition is the insert."""
    matched = [c for c in merge.clauses if c.matched]
    inserts = [c for c in merge.clauses if not c.matched]
    if len(inserts) > 1 or inserts and inserts[0].condition is not None:
        clause = f"WHEN NOT MATCHED AND {inserts[0].condition}" if len(inserts) == 1 else "a second WHEN NOT MATCHED"
        raise InvalidArgument(f"table {table}: MERGE clause {clause} is not supported (merge_into inserts every "
                              "unmatched source row, or none)")
    deletes, updates, earlier = [], [], []
    for clause in matched:
        guard = " AND ".join([f"coalesce({clause.condition}, false)" if clause.condition else "true"]
                             + [f"NOT coalesce({c}, false)" for c in earlier])
        if clause.action == "delete":
            deletes.append(f"({guard})")
        else:
            updates.append((clause.condition, clause.values))
        earlier.append(clause.condition or "true")
        if clause.condition is None:
            break  # later matched clauses are never reached
    delete = None if not deletes else True if deletes == ["(true)"] else " OR ".join(deletes)
    update = None
    if updates == [(None, "*")] and not deletes:
        update = "*"
    elif updates:
        update = {}
        for name in columns:
            cases = [(cond, _value_of(values, name)) for cond, values in updates]
            cases = [(cond, value) for cond, value in cases if value is not None]
            if not cases:
                continue
            whens = " ".join(f"WHEN coalesce({cond or 'true'}, false) THEN {value}" for cond, value in cases)
            update[name] = f"CASE {whens} ELSE {TARGET}.`{name}` END"
    insert = inserts[0].values if inserts else None
    return {"when_matched_update": update, "when_matched_delete": delete, "when_not_matched_insert": insert}


def _value_of(values, name: str) -> str | None:
    if values == "*":
        return f"{SOURCE}.`{name}`"
    return values.get(name)


# ------------------------------------------------------------------------------- ALTER TABLE


def _alter(tree, resolve: Resolve):
    from sqlglot import exp

    if (tree.args.get("kind") or "").upper() != "TABLE":
        return None
    identifier = _target(tree.this, resolve, "ALTER TABLE")
    if identifier is None:
        return None
    changes = []
    for action in tree.args.get("actions") or []:
        if isinstance(action, exp.Schema):
            changes += [("add", _column(c, "ALTER TABLE ADD COLUMNS")) for c in action.expressions]
        elif isinstance(action, exp.ColumnDef):
            changes.append(("add", _column(action, "ALTER TABLE ADD COLUMN")))
        elif isinstance(action, exp.RenameColumn):
            changes.append(("rename", action.this.name, action.args["to"].name))
        elif isinstance(action, exp.Drop) and (action.args.get("kind") or "").upper() in ("COLUMN", "COLUMNS"):
            for dropped in action.args.get("tables") or []:
                names = dropped.expressions if isinstance(dropped, exp.Schema) else [dropped]
                changes += [("drop", n.name) for n in names]
        elif isinstance(action, exp.AlterSet) and action.expressions and isinstance(action.expressions[0],
                                                                                    exp.Properties):
            changes += [("set", _text(p.this), _text(p.args["value"])) for p in action.expressions[0].expressions]
        else:
            raise InvalidArgument(f"tarn.spark.sql: ALTER TABLE {identifier} {_sql(action)} is not supported (ADD "
                                  "COLUMNS, RENAME COLUMN, DROP COLUMN, SET/UNSET TBLPROPERTIES are)")
    return AlterTable(identifier, tuple(changes))


# ------------------------------------------------------------------------------- CALL, UNSET


def _command(tree, statement: str, resolve: Resolve):
    word = tree.this.upper()
    text = tree.expression.this if hasattr(tree.expression, "this") else str(tree.expression)
    if word == "CALL":
        return _call(text)
    if word == "ALTER":
        return _unset(text, statement, resolve)
    return Passthrough(statement)


def _call(text: str) -> Call:
    import sqlglot
    from sqlglot import exp

    call = sqlglot.parse_one(f"SELECT {text}", read="spark").expressions[0]
    function = call.expression if isinstance(call, exp.Dot) else call
    space = call.this.name.lower() if isinstance(call, exp.Dot) else "sys"
    name = function.name.lower() if isinstance(function, exp.Func) else ""
    if space != "sys" or name not in PROCEDURES:
        raise InvalidArgument(f"tarn.spark.sql: CALL {text.split('(')[0]} is not a procedure tarn runs "
                              f"({', '.join('sys.' + p for p in PROCEDURES)})")
    params = PROCEDURES[name]
    args = {}
    for i, arg in enumerate(function.expressions):
        if isinstance(arg, exp.Kwarg):
            key, value = arg.this.name, arg.expression
        elif i < len(params):
            key, value = params[i], arg
        else:
            raise InvalidArgument(f"tarn.spark.sql: CALL sys.{name} takes at most {len(params)} arguments")
        if key not in params:
            raise InvalidArgument(f"tarn.spark.sql: CALL sys.{name} has no argument {key} (its arguments: "
                                  f"{', '.join(params)})")
        if key not in TAKEN[name]:
            raise InvalidArgument(f"tarn.spark.sql: CALL sys.{name} argument {key} is not supported by tarn")
        args[key] = _literal(value, f"CALL sys.{name}")
    if "table" not in args:
        raise InvalidArgument(f"tarn.spark.sql: CALL sys.{name} needs the argument table => 'db.t'")
    return Call(name, str(args.pop("table")), args)


def _unset(text: str, statement: str, resolve: Resolve):
    """ALTER TABLE t UNSET TBLPROPERTIES [IF EXISTS] ('k', ...), read token by token."""
    from sqlglot.tokens import Tokenizer, TokenType

    tokens = Tokenizer(dialect="spark").tokenize(text)
    words = [t.text.upper() for t in tokens]
    if words[:1] != ["TABLE"] or "UNSET" not in words:
        return Passthrough(statement)
    at = words.index("UNSET")
    name = [t.text for t in tokens[1:at] if t.token_type is not TokenType.DOT]
    identifier = resolve(name)
    if identifier is None:
        return Passthrough(statement)
    if words[at + 1:at + 2] != ["TBLPROPERTIES"]:
        raise InvalidArgument(f"tarn.spark.sql: ALTER TABLE {identifier} {' '.join(words[at:])} is not supported")
    keys = [t.text for t in tokens[at + 2:] if t.token_type is TokenType.STRING]
    return AlterTable(identifier, tuple(("unset", k) for k in keys))


_PLANNERS = {"Create": _create, "Insert": _insert, "Update": _update, "Delete": _delete, "Merge": _merge,
             "Alter": _alter}
