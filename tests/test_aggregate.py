"""The aggregation merge engine: every function, retraction, options, and properties against a
slow row-by-row reference that follows Java Paimon's AggregateMergeFunction."""

import itertools
import math
import time
from decimal import Decimal

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tarn.errors import InvalidOption, TarnError
from tarn.lsm.aggregate import merge_aggregate, validate_aggregation
from tarn.lsm.merge import DELETE, INSERT, SEQUENCE, UPDATE_AFTER, UPDATE_BEFORE, VALUE_KIND, MergeSpec
from tarn.options import Options
from tarn.types import (ARRAY, BIGINT, BOOLEAN, DECIMAL, DOUBLE, FLOAT, INT, ROW, STRING, TINYINT, VARCHAR,
                        DataField, arrow_schema)

KINDS = {"+I": INSERT, "-U": UPDATE_BEFORE, "+U": UPDATE_AFTER, "-D": DELETE}
ITEM = ROW([DataField(10, "id", INT()), DataField(11, "v", INT())])


def fields_of(**types):
    return (DataField(0, "k", INT(False)),) + tuple(DataField(i + 1, n, t) for i, (n, t) in enumerate(types.items()))


def kv_table(fields, rows):
    """rows: (key, kind, {column: value}) in merge order; sequence numbers follow that order."""
    schema = arrow_schema(fields)
    data = {f.name: [] for f in fields}
    for k, _, values in rows:
        for f in fields:
            data[f.name].append(k if f.name == "k" else values.get(f.name))
    table = pa.table(data, schema=schema)
    table = table.append_column(SEQUENCE, pa.array(np.arange(len(rows)), pa.int64()))
    return table.append_column(VALUE_KIND, pa.array([KINDS[kind] for _, kind, _ in rows], pa.int8()))


def merge(fields, rows, ignore_delete=False, sequence=(), **options):
    spec = MergeSpec(("k",), "aggregation", ignore_delete, tuple(sequence), fields, Options(options))
    return merge_aggregate(kv_table(fields, rows), spec)


def one(fields, rows, column, **options):
    """Merge rows of key 1 and return `column` of the merged row."""
    out = merge(fields, [(1, kind, {column: v}) for kind, v in rows], **options)
    assert out.num_rows == 1
    return out.column(column)[0].as_py()


def opt(column, function, **more):
    options = {f"fields.{column}.aggregate-function": function}
    options.update({f"fields.{column}.{k.replace('_', '-')}": v for k, v in more.items()})
    return options


# ---------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize("column_type, function", [
    (STRING(), "sum"), (STRING(), "product"), (INT(), "bool_and"), (INT(), "bool_or"), (INT(), "listagg"),
    (VARCHAR(10), "listagg"), (ARRAY(INT()), "nested_update"), (ITEM, "nested_update"), (ARRAY(INT()), "max"),
    (ITEM, "min"),
])
def test_validate_rejects_type_mismatch(column_type, function):
    fields = fields_of(v=column_type)
    with pytest.raises(InvalidOption, match=r"fields\.v\.aggregate-function.*'v'"):
        validate_aggregation(fields, ["k"], {"fields.v.aggregate-function": function}, "t")


@pytest.mark.parametrize("name", ["foo", "counts", "sum_all"])
def test_validate_rejects_unknown_function(name):
    with pytest.raises(InvalidOption, match=f"fields.v.aggregate-function.*'{name}'"):
        validate_aggregation(fields_of(v=INT()), ["k"], {"fields.v.aggregate-function": name}, "t")


def test_validate_rejects_default_mismatch():
    # every Paimon function is merged (the new ones: tests/test_aggregate_functions.py)
    validate_aggregation(fields_of(v=ARRAY(INT())), ["k"], {"fields.v.aggregate-function": "collect"}, "t")
    # the default function applies to every non-key column: the STRING column cannot sum
    with pytest.raises(InvalidOption, match="fields.default-aggregate-function.*'s'"):
        validate_aggregation(fields_of(v=INT(), s=STRING()), ["k"], {"fields.default-aggregate-function": "sum"}, "t")
    # ... but it does not apply to the (INT NOT NULL) key, nor to an explicitly set column
    validate_aggregation(fields_of(v=INT(), s=STRING()), ["k"],
                         {"fields.default-aggregate-function": "sum", "fields.s.aggregate-function": "max"}, "t")


def test_merge_rejects_function_it_cannot_run():
    with pytest.raises(InvalidOption, match="'v'.*'foo'"):
        one(fields_of(v=ARRAY(INT())), [("+I", [1]), ("+I", [2])], "v", **opt("v", "foo"))


def test_validate_option_conflicts():
    fields = fields_of(v=INT(), n=ARRAY(ITEM))
    with pytest.raises(InvalidOption, match="remove-record-on-delete.*fields.v.ignore-retract"):
        validate_aggregation(fields, ["k"], {"aggregation.remove-record-on-delete": "true",
                                             "fields.v.ignore-retract": "true"}, "t")
    with pytest.raises(InvalidOption, match="sequence field 'v'"):
        validate_aggregation(fields, ["k"], {"sequence.field": "v", "fields.v.aggregate-function": "sum"}, "t")
    with pytest.raises(InvalidOption, match="fields.n.nested-key.*'nope'"):
        validate_aggregation(fields, ["k"], {"fields.n.aggregate-function": "nested_update",
                                             "fields.n.nested-key": "nope"}, "t")
    validate_aggregation(fields, ["k"], {"fields.n.aggregate-function": "nested_update", "fields.n.nested-key": "id",
                                         "fields.v.aggregate-function": "product"}, "t")


# ---------------------------------------------------------------------------------------------
# functions, one by one


def test_sum_nulls_and_retraction():
    f = fields_of(v=INT())
    assert one(f, [("+I", 1), ("+I", None), ("+I", 3), ("-U", 2)], "v", **opt("v", "sum")) == 2
    assert one(f, [("+I", None), ("+I", None)], "v", **opt("v", "sum")) is None
    assert one(f, [("-D", 5), ("+I", 1)], "v", **opt("v", "sum")) == -4  # retract on null negates
    assert one(f, [("-D", None), ("+I", None)], "v", **opt("v", "sum")) is None
    assert one(f, [("+I", 1), ("-U", 1), ("+U", 7)], "v", **opt("v", "sum", ignore_retract="true")) == 8


def test_sum_types_and_overflow():
    assert one(fields_of(v=DOUBLE()), [("+I", 1.5), ("-U", 0.25)], "v", **opt("v", "sum")) == 1.25
    assert one(fields_of(v=FLOAT()), [("+I", 1.5), ("+I", 2.0)], "v", **opt("v", "sum")) == 3.5
    d = fields_of(v=DECIMAL(5, 2))
    assert one(d, [("+I", Decimal("1.10")), ("-U", Decimal("0.15")), ("+I", None)], "v",
               **opt("v", "sum")) == Decimal("0.95")
    assert one(d, [("+I", Decimal("999.00")), ("+I", Decimal("1.00"))], "v", **opt("v", "sum")) is None
    with pytest.raises(TarnError, match="'v'.*overflow"):
        one(fields_of(v=INT()), [("+I", 2 ** 31 - 1), ("+I", 1)], "v", **opt("v", "sum"))
    with pytest.raises(TarnError, match="'v'.*overflow"):  # Java checks every step
        one(fields_of(v=TINYINT()), [("+I", 100), ("+I", 100), ("+I", -100)], "v", **opt("v", "sum"))
    with pytest.raises(TarnError, match="'v'.*overflow"):
        one(fields_of(v=BIGINT()), [("+I", 2 ** 62), ("+I", 2 ** 62), ("+I", -5)], "v", **opt("v", "sum"))
    assert one(fields_of(v=BIGINT()), [("+I", 2 ** 62), ("+I", 2 ** 62 - 1)], "v", **opt("v", "sum")) == 2 ** 63 - 1


def test_product():
    f = fields_of(v=BIGINT())
    assert one(f, [("+I", 2), ("+I", None), ("+I", -3)], "v", **opt("v", "product")) == -6
    assert one(f, [("+I", 6), ("-U", 4), ("+I", 2)], "v", **opt("v", "product")) == 2  # 6/4 truncates to 1
    assert one(f, [("+I", -7), ("-U", 2)], "v", **opt("v", "product")) == -3  # toward zero
    # a retract on a null accumulator takes the value (Java's FieldProductAgg.retract)
    assert one(f, [("-U", 4), ("+I", 3)], "v", **opt("v", "product")) == 12
    assert one(fields_of(v=DOUBLE()), [("+I", 6.0), ("-D", 4.0)], "v", **opt("v", "product")) == 1.5
    with pytest.raises(TarnError, match="'v'.*zero"):
        one(f, [("+I", 6), ("-U", 0)], "v", **opt("v", "product"))
    # integers wrap as Java's long / int / short / byte arithmetic does, with no overflow check
    assert one(f, [("+I", 2 ** 40), ("+I", 2 ** 30), ("+I", 3)], "v", **opt("v", "product")) == 0
    assert one(f, [("+I", 2 ** 62), ("+I", 3)], "v", **opt("v", "product")) == -(2 ** 62)
    assert one(fields_of(v=INT()), [("+I", 2 ** 20), ("+I", 2 ** 11)], "v", **opt("v", "product")) == -(2 ** 31)
    assert one(fields_of(v=INT()), [("+I", 2 ** 20), ("+I", 2 ** 12)], "v", **opt("v", "product")) == 0
    assert one(fields_of(v=INT()), [("+I", -(2 ** 31)), ("-U", -1)], "v", **opt("v", "product")) == -(2 ** 31)
    assert one(fields_of(v=INT()), [("+I", 50000), ("+I", 50000), ("-U", 7)], "v",
               **opt("v", "product")) == (2500000000 - 2 ** 32) // 7 + 1  # wrap, then truncate


def test_product_decimal_rounds_half_up_every_step():
    f = fields_of(v=DECIMAL(10, 2))
    assert one(f, [("+I", Decimal("1.25")), ("+I", Decimal("1.25"))], "v", **opt("v", "product")) == Decimal("1.56")
    assert one(f, [("+I", Decimal("1.05")), ("+I", Decimal("1.50"))], "v", **opt("v", "product")) == Decimal("1.58")
    assert one(f, [("+I", Decimal("-1.05")), ("+I", Decimal("1.50"))], "v",
               **opt("v", "product")) == Decimal("-1.58")
    assert one(f, [("+I", Decimal("1.00")), ("-U", Decimal("3.00")), ("+I", Decimal("3.00"))], "v",
               **opt("v", "product")) == Decimal("0.99")


def test_max_min():
    s = fields_of(v=STRING())
    assert one(s, [("+I", "b"), ("+I", None), ("+I", "ab"), ("+I", "c")], "v", **opt("v", "max")) == "c"
    assert one(s, [("+I", "b"), ("+I", None), ("+I", "ab")], "v", **opt("v", "min")) == "ab"
    assert one(s, [("+I", None), ("+I", None)], "v", **opt("v", "min")) is None
    with pytest.raises(TarnError, match="'v'.*'max'.*fields.v.ignore-retract"):
        one(s, [("+I", "b"), ("-U", "b")], "v", **opt("v", "max"))
    assert one(s, [("+I", "b"), ("-U", "z")], "v", **opt("v", "max", ignore_retract="true")) == "b"


def test_last_values():
    f = fields_of(v=INT())
    assert one(f, [("+I", 1), ("+I", None)], "v", **opt("v", "last_value")) is None
    assert one(f, [("+I", 1), ("+I", 2), ("-U", 2)], "v", **opt("v", "last_value")) is None
    assert one(f, [("+I", 1), ("+I", None)], "v") == 1  # last_non_null_value is the default
    assert one(f, [("+I", 1), ("-U", 5)], "v") is None  # a non-null retract clears it
    assert one(f, [("+I", 1), ("-U", None)], "v") == 1
    assert one(f, [("+I", 1), ("-U", 5)], "v", **opt("v", "last_non_null_value", ignore_retract="true")) == 1


def test_first_values():
    f = fields_of(v=INT())
    assert one(f, [("+I", None), ("+I", 2)], "v", **opt("v", "first_value")) is None
    assert one(f, [("+I", None), ("+I", 2), ("+I", 3)], "v", **opt("v", "first_non_null_value")) == 2
    assert one(f, [("+I", None), ("+I", 2)], "v", **opt("v", "first_not_null_value")) == 2
    with pytest.raises(TarnError, match="'v'"):
        one(f, [("+I", 1), ("-D", 1)], "v", **opt("v", "first_value"))
    assert one(f, [("-U", 9), ("+I", 1)], "v", **opt("v", "first_value", ignore_retract="true")) == 1


def test_listagg():
    f = fields_of(v=STRING())
    rows = [("+I", "a"), ("+I", None), ("+I", " \t"), ("+I", ""), ("+I", "b,a")]
    assert one(f, rows, "v", **opt("v", "listagg")) == "a,b,a"
    assert one(f, rows, "v", **opt("v", "listagg", list_agg_delimiter="-")) == "a-b,a"
    assert one(f, [("+I", None), ("+I", " ")], "v", **opt("v", "listagg")) is None
    assert one(f, [("+I", "x"), ("-U", "x")], "v", **opt("v", "listagg", ignore_retract="true")) == "x"
    with pytest.raises(TarnError, match="'v'.*'listagg'"):
        one(f, [("+I", "x"), ("-U", "x")], "v", **opt("v", "listagg"))


def test_listagg_distinct():
    f = fields_of(v=STRING())
    distinct = opt("v", "listagg", distinct="true")
    assert one(f, [("+I", "a,b"), ("+I", "b,c,c"), ("+I", "a, ,d")], "v", **distinct) == "a,b,c,d"
    # Java keeps the first string as it is (duplicates and blank tokens included)
    assert one(f, [("+I", "a,a,,"), ("+I", "a,b")], "v", **distinct) == "a,a,,,b"
    assert one(f, [("+I", "x;y"), ("+I", "y;z")], "v", **opt("v", "listagg", distinct="true",
                                                               list_agg_delimiter=";")) == "x;y;z"


def test_bool_and_or():
    f = fields_of(v=BOOLEAN())
    assert one(f, [("+I", True), ("+I", None), ("+I", False)], "v", **opt("v", "bool_and")) is False
    assert one(f, [("+I", True), ("+I", None)], "v", **opt("v", "bool_and")) is True
    assert one(f, [("+I", False), ("+I", None), ("+I", True)], "v", **opt("v", "bool_or")) is True
    assert one(f, [("+I", None), ("+I", None)], "v", **opt("v", "bool_or")) is None


def items(*pairs):
    return [None if p is None else {"id": p[0], "v": p[1]} for p in pairs]


def test_nested_update_keyed():
    f = fields_of(n=ARRAY(ITEM))
    keyed = opt("n", "nested_update", nested_key="id")
    rows = [("+I", items((1, 10), (2, 20))), ("+I", None), ("+I", items((1, 11), None, (3, 30)))]
    assert one(f, rows, "n", **keyed) == items((1, 11), (2, 20), (3, 30))
    rows = [("+I", items((1, 10), (2, 20))), ("-U", items((1, 99))), ("+I", items((1, 12)))]
    assert one(f, rows, "n", **keyed) == items((2, 20), (1, 12))
    assert one(f, [("-U", items((1, 1))), ("+I", None)], "n", **keyed) is None
    assert one(f, [("+I", []), ("+I", None)], "n", **keyed) == []
    limited = opt("n", "nested_update", nested_key="id", count_limit="2")
    assert one(f, [("+I", items((1, 1), (2, 2), (3, 3))), ("+I", items((2, 5), (4, 4)))], "n",
               **limited) == items((1, 1), (2, 5))
    by_sequence = opt("n", "nested_update", nested_key="id", nested_sequence_field="v")
    assert one(f, [("+I", items((1, 5))), ("+I", items((1, 3))), ("+I", items((1, 7), (2, None)))], "n",
               **by_sequence) == items((1, 7), (2, None))
    nulls = [("+I", items((None, 1), (1, 1))), ("+I", items((None, 2)))]
    assert one(f, nulls, "n", **keyed) == items((None, 2), (1, 1))
    assert one(f, nulls, "n", **opt("n", "nested_update", nested_key="id",
                                    nested_key_null_strategy="ignore")) == items((1, 1))
    with pytest.raises(TarnError, match="'n'.*null"):
        one(f, nulls, "n", **opt("n", "nested_update", nested_key="id", nested_key_null_strategy="error"))


def test_nested_update_append():
    f = fields_of(n=ARRAY(ITEM))
    plain = opt("n", "nested_update")
    rows = [("+I", items((1, 1), (2, 2))), ("+I", items((1, 1), None)), ("-U", items((1, 1))),
            ("+I", items((1, 1), (3, 3)))]
    assert one(f, rows, "n", **plain) == items((2, 2), (1, 1), (3, 3))
    assert one(f, [("+I", items((1, 1), (2, 2))), ("+I", items((3, 3)))], "n",
               **opt("n", "nested_update", count_limit="2")) == items((1, 1), (2, 2))


# ---------------------------------------------------------------------------------------------
# rows, kinds and options


def test_defaults_keys_sequence_and_shape():
    f = fields_of(a=INT(), b=INT(), s=BIGINT())
    rows = [(2, "+I", {"a": 1, "b": 1, "s": 5}), (1, "+I", {"a": 1, "b": None, "s": 9}),
            (1, "+I", {"a": 2, "b": None, "s": None}), (2, "+I", {"a": 3, "b": 4, "s": 6})]
    rows.sort(key=lambda r: r[0])
    out = merge(f, rows, sequence=["s"], **{"fields.default-aggregate-function": "sum",
                                             "fields.b.aggregate-function": "max"})
    assert out.schema == kv_table(f, rows).schema
    assert out.column("k").to_pylist() == [1, 2]
    assert out.column("a").to_pylist() == [3, 4]  # default function
    assert out.column("b").to_pylist() == [None, 4]
    assert out.column("s").to_pylist() == [None, 6]  # a sequence field takes the last value
    assert out.column(SEQUENCE).to_pylist() == [1, 3]
    assert out.column(VALUE_KIND).to_pylist() == [INSERT, INSERT]


def test_single_rows_pass_through():
    f = fields_of(a=INT(), b=STRING())
    rows = [(1, "-D", {"a": 5, "b": " "}), (2, "+I", {"a": 1, "b": "x"}), (2, "-U", {"a": 1, "b": "x"}),
            (3, "-U", {"a": 7, "b": "y"})]
    out = merge(f, rows, **opt("a", "sum"), **opt("b", "listagg", ignore_retract="true"))
    assert out.to_pylist() == [
        {"k": 1, "a": 5, "b": " ", SEQUENCE: 0, VALUE_KIND: DELETE},
        {"k": 2, "a": 0, "b": "x", SEQUENCE: 2, VALUE_KIND: INSERT},
        {"k": 3, "a": 7, "b": "y", SEQUENCE: 3, VALUE_KIND: UPDATE_BEFORE},
    ]


def test_remove_record_on_delete():
    f = fields_of(a=INT(), b=INT(), c=INT())
    options = {"aggregation.remove-record-on-delete": "true", **opt("a", "sum"), **opt("b", "first_value"),
               **opt("c", "first_non_null_value")}
    out = merge(f, [(1, "+I", {"a": 5, "b": 1, "c": None}), (1, "-D", {"a": 1, "b": 2, "c": 3})], **options)
    assert out.to_pylist() == [{"k": 1, "a": 1, "b": 2, "c": 3, SEQUENCE: 1, VALUE_KIND: DELETE}]
    # later rows aggregate on top of the -D row's values; first_value stays initialized
    out = merge(f, [(1, "+I", {"a": 5, "b": 1, "c": None}), (1, "-D", {"a": 1, "b": 2, "c": 3}),
                    (1, "+I", {"a": 2, "b": 4, "c": 6})], **options)
    assert out.to_pylist() == [{"k": 1, "a": 3, "b": 2, "c": 6, SEQUENCE: 2, VALUE_KIND: INSERT}]
    out = merge(f, [(1, "-D", {"a": 1, "b": 2, "c": 3}), (1, "+I", {"a": 2, "b": 4, "c": 6})], **options)
    assert out.to_pylist() == [{"k": 1, "a": 3, "b": 4, "c": 6, SEQUENCE: 1, VALUE_KIND: INSERT}]
    with pytest.raises(TarnError, match="'b'"):  # -U still retracts
        merge(f, [(1, "+I", {"a": 5}), (1, "-U", {"a": 1})], **options)


def test_ignore_delete_drops_retract_rows():
    f = fields_of(a=INT(), b=STRING())
    rows = [(1, "+I", {"a": 5, "b": "x"}), (1, "-U", {"a": 5, "b": "x"}), (1, "+U", {"a": 6, "b": "y"}),
            (2, "-D", {"a": 1})]
    out = merge(f, rows, ignore_delete=True, **opt("a", "sum"), **opt("b", "max"))
    assert out.to_pylist() == [{"k": 1, "a": 11, "b": "y", SEQUENCE: 2, VALUE_KIND: INSERT}]


def test_large_input_is_fast():
    n = 300_000
    f = fields_of(a=BIGINT(), b=STRING(), c=DOUBLE())
    rng = np.random.default_rng(1)
    keys = np.sort(rng.integers(0, n // 3, n)).astype(np.int32)
    table = pa.table({"k": keys, "a": rng.integers(0, 100, n), "b": rng.choice(["x", "y", "z"], n),
                      "c": rng.random(n)}, schema=arrow_schema(f))
    table = table.append_column(SEQUENCE, pa.array(np.arange(n))).append_column(
        VALUE_KIND, pa.array(rng.choice([0, 1], n, p=[0.9, 0.1]).astype(np.int8)))
    options = Options({**opt("a", "sum"), **opt("b", "max", ignore_retract="true"), **opt("c", "last_value")})
    started = time.perf_counter()
    out = merge_aggregate(table, MergeSpec(("k",), "aggregation", False, (), f, options))
    assert time.perf_counter() - started < 3
    assert out.num_rows == len(np.unique(keys))


# ---------------------------------------------------------------------------------------------
# a slow reference: Java's AggregateMergeFunction, row by row


class Ref:
    """One column's aggregator, as Java's FieldAggregator (agg / retract / reset state)."""

    def __init__(self, function, ignore_retract=False, delimiter=",", distinct=False, nested_key=()):
        self.function, self.ignore_retract = function, ignore_retract
        self.delimiter, self.distinct, self.nested_key = delimiter, distinct, nested_key
        self.initialized = False

    def agg(self, acc, x):
        fn = self.function
        if fn in ("sum", "product", "max", "min", "bool_and", "bool_or"):
            if acc is None or x is None:
                return x if acc is None else acc
            return {"sum": lambda: acc + x, "product": lambda: acc * x, "max": lambda: max(acc, x),
                    "min": lambda: min(acc, x), "bool_and": lambda: acc and x, "bool_or": lambda: acc or x}[fn]()
        if fn in ("last_value", "primary-key"):
            return x
        if fn == "last_non_null_value":
            return acc if x is None else x
        if fn == "first_value":
            if not self.initialized:
                self.initialized = True
                return x
            return acc
        if fn == "first_non_null_value":
            if not self.initialized and x is not None:
                self.initialized = True
                return x
            return acc
        if fn == "listagg":
            return self.listagg(acc, x)
        if fn == "nested_update":
            return self.nested(acc, x)
        raise AssertionError(fn)

    def retract(self, acc, x):
        fn = self.function
        if self.ignore_retract:
            return acc
        if fn == "sum":
            if acc is None or x is None:
                return None if acc is None and x is None else (-x if acc is None else acc)
            return acc - x
        if fn == "product":
            if acc is None or x is None:
                return x if acc is None else acc
            if isinstance(acc, float):
                return acc / x
            if x == 0:
                raise ZeroDivisionError
            q = abs(acc) // abs(x)
            return q if (acc >= 0) == (x > 0) else -q
        if fn == "last_value":
            return None
        if fn == "last_non_null_value":
            return None if x is not None else acc
        if fn == "primary-key":
            return x
        if fn == "nested_update":
            if acc is None or x is None:
                return acc
            if self.nested_key:
                kept = {self.key(e): e for e in acc if e is not None}
                for e in x:
                    if e is not None:
                        kept.pop(self.key(e), None)
                return list(kept.values())
            kept = [e for e in acc if e is not None]
            for e in x:
                if e is not None:
                    kept = [o for o in kept if o != e]
            return kept
        raise RuntimeError(f"{fn} cannot retract")

    @staticmethod
    def blank(s):
        return s is None or s.strip(" \t\n\x0b\f\r\x1c\x1d\x1e\x1f") == ""

    def listagg(self, acc, x):
        if self.blank(x):
            return acc
        if self.blank(acc):
            return x
        if not self.distinct:
            return acc + self.delimiter + x
        seen, out = set(acc.split(self.delimiter)), [acc]
        for token in x.split(self.delimiter):
            if self.blank(token) or token in seen:
                continue
            seen.add(token)
            out.append(token)
        return self.delimiter.join(out)

    def key(self, e):
        return tuple(e[k] for k in self.nested_key)

    def nested(self, acc, x):
        if x is None:
            return acc
        if not self.nested_key:
            return [e for e in (acc or []) if e is not None] + [e for e in x if e is not None]
        merged = {}
        for e in (acc or []) + x:
            if e is not None:
                merged[self.key(e)] = e
        return list(merged.values())


def reference(rows, columns, refs, remove_on_delete=False):
    """rows: dicts (with k, SEQUENCE, VALUE_KIND) sorted by key then sequence."""
    out = []
    for _, run in itertools.groupby(rows, key=lambda r: r["k"]):
        run = list(run)
        if len(run) == 1:
            out.append(dict(run[0]))
            continue
        aggs = {c: refs[c]() for c in columns}
        row, deleted = {c: None for c in columns}, False
        for r in run:
            deleted = remove_on_delete and r[VALUE_KIND] == DELETE
            if deleted:
                row = {c: r[c] for c in columns}
                continue
            retract = r[VALUE_KIND] in (UPDATE_BEFORE, DELETE)
            for c in columns:
                row[c] = aggs[c].retract(row[c], r[c]) if retract else aggs[c].agg(row[c], r[c])
        out.append({**row, "k": run[-1]["k"], SEQUENCE: run[-1][SEQUENCE], VALUE_KIND: DELETE if deleted else INSERT})
    return out


PROPERTY_FIELDS = fields_of(a=INT(), p=BIGINT(), d=DOUBLE(), mx=STRING(), mn=INT(), lv=INT(), ln=INT(),
                            fv=INT(), fn=INT(), la=STRING(), ld=STRING(), ba=BOOLEAN(), bo=BOOLEAN(),
                            nu=ARRAY(ITEM), nn=ARRAY(ITEM))
PROPERTY_FUNCTIONS = {"a": "sum", "p": "product", "d": "sum", "mx": "max", "mn": "min", "lv": "last_value",
                      "ln": None, "fv": "first_value", "fn": "first_non_null_value", "la": "listagg",
                      "ld": "listagg", "ba": "bool_and", "bo": "bool_or", "nu": "nested_update",
                      "nn": "nested_update"}
NOT_RETRACTING = ("mx", "mn", "fv", "fn", "la", "ld", "ba", "bo")


def property_options(ignore_retract: bool, remove_on_delete: bool) -> dict:
    options = {f"fields.{c}.aggregate-function": fn for c, fn in PROPERTY_FUNCTIONS.items() if fn}
    options.update({"fields.la.list-agg-delimiter": "|", "fields.ld.distinct": "true", "fields.nu.nested-key": "id"})
    if ignore_retract:
        options.update({f"fields.{c}.ignore-retract": "true" for c in NOT_RETRACTING})
    if remove_on_delete:
        options["aggregation.remove-record-on-delete"] = "true"
    return options


def property_refs(options: dict):
    def make(column):
        function = PROPERTY_FUNCTIONS.get(column) or ("primary-key" if column == "k" else "last_non_null_value")
        return lambda: Ref(function, options.get(f"fields.{column}.ignore-retract") == "true",
                           options.get(f"fields.{column}.list-agg-delimiter", ","),
                           options.get(f"fields.{column}.distinct") == "true",
                           ("id",) if column == "nu" else ())
    return {f.name: make(f.name) for f in PROPERTY_FIELDS}


small_int = st.none() | st.integers(-3, 3)
strings = st.sampled_from([None, "a", "b", "a,b", "b|c", " ", "", "c,,a", "a|a"])
item_lists = st.none() | st.lists(st.none() | st.fixed_dictionaries(
    {"id": st.none() | st.integers(0, 3), "v": st.none() | st.integers(0, 2)}), max_size=3)
row_values = st.fixed_dictionaries({
    "a": small_int, "p": small_int, "d": st.none() | st.integers(-5, 5).map(float), "mx": strings, "mn": small_int,
    "lv": small_int, "ln": small_int, "fv": small_int, "fn": small_int, "la": strings, "ld": strings,
    "ba": st.none() | st.booleans(), "bo": st.none() | st.booleans(), "nu": item_lists, "nn": item_lists,
})


def kv_rows(kinds):
    """Random key-value rows, sorted by key then sequence."""
    return st.lists(st.tuples(st.integers(0, 4), st.sampled_from(kinds), row_values), max_size=24).map(
        lambda rows: sorted(rows, key=lambda r: r[0]))


def outcome(run):
    try:
        return run()
    except (TarnError, RuntimeError, ArithmeticError) as e:
        return type(e) if isinstance(e, TarnError) else TarnError


def same(actual, expected):
    if isinstance(actual, type) or isinstance(expected, type):
        assert actual == expected
        return
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got.keys() == want.keys()
        for c in got:
            if isinstance(want[c], float):
                assert got[c] == pytest.approx(want[c])
            else:
                assert got[c] == want[c], (c, got, want)


def check_against_reference(rows, ignore_retract, remove_on_delete):
    options = property_options(ignore_retract, remove_on_delete)
    table = kv_table(PROPERTY_FIELDS, rows)
    spec = MergeSpec(("k",), "aggregation", False, (), PROPERTY_FIELDS, Options(options))
    columns = [f.name for f in PROPERTY_FIELDS]
    expected = outcome(lambda: reference(table.to_pylist(), columns, property_refs(options), remove_on_delete))
    actual = outcome(lambda: merge_aggregate(table, spec).to_pylist())
    same(actual, expected)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kv_rows(["+I", "+I", "+U", "-U", "-D"]))
def test_property_matches_reference(rows):
    check_against_reference(rows, ignore_retract=True, remove_on_delete=False)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kv_rows(["+I", "+I", "+U", "-D", "-D"]))
def test_property_remove_record_on_delete_matches_reference(rows):
    check_against_reference(rows, ignore_retract=False, remove_on_delete=True)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kv_rows(["+I", "-U"]))
def test_property_retraction_errors_match_reference(rows):
    check_against_reference(rows, ignore_retract=False, remove_on_delete=False)


# ---------------------------------------------------------------------------------------------
# associativity: a key's rows merged in pieces, then merged again, give the same row


def merge_in_pieces(table, spec, cuts):
    bounds = [0, *sorted(set(cuts)), table.num_rows]
    parts = [merge_aggregate(table.slice(a, b - a), spec) for a, b in zip(bounds, bounds[1:]) if b > a]
    combined = pa.concat_tables(parts) if parts else table
    order = np.lexsort([combined.column(SEQUENCE).to_numpy(), combined.column("k").to_numpy()])
    return merge_aggregate(combined.take(pa.array(order)), spec)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kv_rows(["+I", "+U"]), st.lists(st.integers(0, 24), max_size=4))
def test_property_associative_for_adds(rows, cuts):
    options = property_options(ignore_retract=False, remove_on_delete=False)
    options["fields.nn.count-limit"] = "3"
    options["fields.nu.count-limit"] = "2"
    spec = MergeSpec(("k",), "aggregation", False, (), PROPERTY_FIELDS, Options(options))
    table = kv_table(PROPERTY_FIELDS, rows)
    whole = merge_aggregate(table, spec).to_pylist()
    same(merge_in_pieces(table, spec, [c for c in cuts if c < len(rows)]).to_pylist(), whole)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from(["+I", "-U", "+U", "-D"]),
                          st.fixed_dictionaries({"a": small_int, "d": st.none() | st.integers(-5, 5).map(float),
                                                 "lv": small_int})), max_size=20),
       st.lists(st.integers(0, 20), max_size=4))
def test_property_associative_with_retractions(rows, cuts):
    fields = fields_of(a=INT(), d=DOUBLE(), lv=INT())
    options = {**opt("a", "sum"), **opt("d", "sum"), **opt("lv", "last_value")}
    spec = MergeSpec(("k",), "aggregation", False, (), fields, Options(options))
    rows = sorted(rows, key=lambda r: r[0])
    table = kv_table(fields, rows)
    whole = merge_aggregate(table, spec).to_pylist()
    pieces = merge_in_pieces(table, spec, [c for c in cuts if c < len(rows)]).to_pylist()
    same(pieces, whole)
    assert all(not (isinstance(r["d"], float) and math.isnan(r["d"])) for r in pieces)
