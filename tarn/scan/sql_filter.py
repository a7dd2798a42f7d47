"""SQL-like filter text -> a tarn Predicate, by a small recursive-descent parser (no eval).

    dt = '2026-11-20' and amount > 10
    (status IN ('new', 'paid') OR note IS NULL) AND NOT id <> 3
    name LIKE 'ab%' AND day BETWEEN DATE '2026-01-01' AND DATE '2026-01-31'
    `order-id` NOT BETWEEN +1 AND 9.5

Grammar (keywords in any case):

    filter     := or
    or         := and (OR and)*
    and        := not (AND not)*
    not        := NOT not | '(' or ')' | condition
    condition  := column op value | value op column
                | column [NOT] IN '(' value (',' value)* ')'
                | column IS [NOT] NULL
                | column [NOT] LIKE 'text'        (only 'prefix%', or no wildcard at all)
                | column [NOT] BETWEEN value AND value
    op         := = | == | != | <> | < | <= | > | >=
    value      := 'text' | [-|+]number | TRUE | FALSE | NULL | DATE 'text' | TIMESTAMP 'text'
    column     := name | "quoted name" | `quoted name`

Strings take single quotes ('it''s'); double quotes and backticks quote column names, as in
SQL (the quote doubled inside). NULL is a value of IN lists only: a comparison or BETWEEN with
NULL is never true, so it is refused with a pointer to IS [NOT] NULL. Values stay as written
(text, int, Decimal, bool, None, date, datetime): binding the predicate to the table
(`predicate.bind`) converts them to the column's type, so `dt = '2026-11-20'` works on a DATE
column. `Table.scan(filter=text)` and the command line's `--where` both read filters here.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass

from tarn.errors import InvalidFilter
from tarn.scan.predicate import And, Compare, In, IsNull, Not, Or, Predicate, StartsWith

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>'(?:[^']|'')*')
  | (?P<quoted>"(?:[^"]|"")*"|`(?:[^`]|``)*`)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),+-])
  | (?P<name>[A-Za-z_][A-Za-z_0-9$]*(?:\.[A-Za-z_][A-Za-z_0-9$]*)*)
""", re.VERBOSE)

_KEYWORDS = {"AND", "OR", "NOT", "IN", "IS", "NULL", "LIKE", "BETWEEN", "TRUE", "FALSE"}
_OPS = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_FLIPPED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True)
class Token:
    kind: str  # string, quoted, number, op, punct, name, end
    text: str
    pos: int

    def keyword(self, *words: str) -> bool:
        return self.kind == "name" and self.text.upper() in words


@dataclass(frozen=True)
class _Column:
    name: str


def parse_filter(text: str, table_name: str = "?") -> Predicate:
    """The predicate `text` describes; InvalidFilter (naming the table and the position) if it
    is not a filter of the grammar above."""
    return _Parser(text, table_name).parse()


def tokenize(text: str, table_name: str = "?") -> list[Token]:
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            snippet = text[pos:pos + 10]
            hint = " (strings need a closing quote)" if text[pos] in "'\"`" else ""
            raise InvalidFilter(f"table {table_name}: cannot parse the filter {text!r}: unexpected "
                                f"{snippet!r} at position {pos}{hint}")
        if m.lastgroup != "space":
            tokens.append(Token(m.lastgroup, m.group(), pos))
        pos = m.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str, table_name: str):
        if not isinstance(text, str):
            raise InvalidFilter(f"table {table_name}: a filter string must be a str, got {text!r}")
        self.text = text
        self.table_name = table_name
        self.tokens = tokenize(text, table_name)
        self.i = 0

    # ---------------------------------------------------------------- helpers

    @property
    def token(self) -> Token:
        return self.tokens[self.i]

    def advance(self) -> Token:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def fail(self, what: str, token: Token | None = None):
        token = token or self.token
        found = "the end" if token.kind == "end" else repr(token.text)
        raise InvalidFilter(f"table {self.table_name}: cannot parse the filter {self.text!r}: {what}, "
                            f"found {found} at position {token.pos}")

    def expect_keyword(self, word: str) -> None:
        if not self.token.keyword(word):
            self.fail(f"expected {word}")
        self.advance()

    def expect_punct(self, char: str) -> None:
        if not (self.token.kind == "punct" and self.token.text == char):
            self.fail(f"expected {char!r}")
        self.advance()

    # ---------------------------------------------------------------- grammar

    def parse(self) -> Predicate:
        if self.token.kind == "end":
            self.fail("the filter is empty")
        out = self.parse_or()
        if self.token.kind != "end":
            self.fail("expected AND, OR or the end of the filter")
        return out

    def parse_or(self) -> Predicate:
        parts = [self.parse_and()]
        while self.token.keyword("OR"):
            self.advance()
            parts.append(self.parse_and())
        return parts[0] if len(parts) == 1 else Or(tuple(parts))

    def parse_and(self) -> Predicate:
        parts = [self.parse_not()]
        while self.token.keyword("AND"):
            self.advance()
            parts.append(self.parse_not())
        return parts[0] if len(parts) == 1 else And(tuple(parts))

    def parse_not(self) -> Predicate:
        if self.token.keyword("NOT"):
            self.advance()
            return Not(self.parse_not())
        if self.token.kind == "punct" and self.token.text == "(":
            self.advance()
            inner = self.parse_or()
            self.expect_punct(")")
            return inner
        return self.parse_condition()

    def parse_condition(self) -> Predicate:
        start = self.token
        left = self.parse_operand()
        if isinstance(left, _Column):
            return self.parse_column_condition(left.name)
        # value op column
        if self.token.kind != "op":
            self.fail("expected a comparison (=, <>, <, <=, >, >=) after a value")
        op = _OPS[self.advance().text]
        right = self.parse_operand()
        if not isinstance(right, _Column):
            self.fail("a comparison needs a column on one side", start)
        if left is None:
            self.refuse_null(right.name, start)
        return Compare(right.name, _FLIPPED[op], left)

    def parse_column_condition(self, column: str) -> Predicate:
        token = self.token
        if token.kind == "op":
            op = _OPS[self.advance().text]
            value = self.parse_not_null(f"a value to compare '{column}' with", column)
            return Compare(column, op, value)
        if token.keyword("IS"):
            self.advance()
            negated = False
            if self.token.keyword("NOT"):
                self.advance()
                negated = True
            self.expect_keyword("NULL")
            return IsNull(column, negated)
        negated = False
        if token.keyword("NOT"):
            self.advance()
            negated = True
        if self.token.keyword("IN"):
            self.advance()
            return In(column, self.parse_list(column), negated)
        if self.token.keyword("LIKE"):
            self.advance()
            like = self.parse_like(column)
            return Not(like) if negated else like
        if self.token.keyword("BETWEEN"):
            self.advance()
            low = self.parse_not_null(f"the low end of '{column}' BETWEEN", column)
            self.expect_keyword("AND")
            high = self.parse_not_null(f"the high end of '{column}' BETWEEN", column)
            between = And((Compare(column, ">=", low), Compare(column, "<=", high)))
            return Not(between) if negated else between
        self.fail(f"expected a comparison, IN, IS [NOT] NULL, LIKE or BETWEEN after column '{column}'")

    def parse_list(self, column: str) -> tuple:
        self.expect_punct("(")
        values = [self.parse_value(f"a value in the IN list of '{column}'")]
        while self.token.kind == "punct" and self.token.text == ",":
            self.advance()
            values.append(self.parse_value(f"a value in the IN list of '{column}'"))
        self.expect_punct(")")
        return tuple(values)

    def parse_like(self, column: str) -> Predicate:
        token = self.token
        if token.kind != "string":
            self.fail(f"LIKE on '{column}' takes a quoted pattern")
        self.advance()
        pattern = _unquote(token.text)
        text, wildcard_at = [], None
        i = 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "\\" and i + 1 < len(pattern) and pattern[i + 1] in "%_\\":
                text.append(pattern[i + 1])
                i += 2
                continue
            if ch in "%_":
                wildcard_at = i
                break
            text.append(ch)
            i += 1
        prefix = "".join(text)
        if wildcard_at is None:
            return Compare(column, "==", prefix)
        if pattern[wildcard_at] == "%" and wildcard_at == len(pattern) - 1:
            return StartsWith(column, prefix)
        self.fail(f"LIKE on '{column}' supports only 'prefix%' (or no wildcard): "
                  f"the pattern {pattern!r} has a wildcard elsewhere", token)

    def parse_operand(self):
        """A column or a value, at the start of a condition."""
        token = self.token
        if token.kind == "quoted":
            self.advance()
            return _Column(_unquote(token.text))
        if token.kind == "name" and not token.keyword(*_KEYWORDS) and not self._typed_literal_ahead():
            self.advance()
            return _Column(token.text)
        return self.parse_value("a column or a value")

    def _typed_literal_ahead(self) -> bool:
        return self.token.keyword("DATE", "TIMESTAMP") and self.tokens[self.i + 1].kind == "string"

    def parse_not_null(self, what: str, column: str):
        """A value other than NULL: a comparison or BETWEEN with NULL is never true."""
        token = self.token
        value = self.parse_value(what)
        if value is None:
            self.refuse_null(column, token)
        return value

    def refuse_null(self, column: str, token: Token):
        self.fail(f"comparing '{column}' with NULL is never true (not even under NOT): write "
                  f"'{column} IS NULL' or '{column} IS NOT NULL'", token)

    def parse_value(self, what: str):
        token = self.token
        if token.kind == "string":
            self.advance()
            return _unquote(token.text)
        if token.kind == "number" or (token.kind == "punct" and token.text in ("-", "+")):
            return self.parse_number()
        if token.keyword("TRUE", "FALSE"):
            self.advance()
            return token.text.upper() == "TRUE"
        if token.keyword("NULL"):
            self.advance()
            return None
        if self._typed_literal_ahead():
            self.advance()
            literal = self.advance()
            return self.typed_literal(token.text.upper(), _unquote(literal.text), literal)
        if token.kind in ("name", "quoted") and not token.keyword(*_KEYWORDS):
            name = _unquote(token.text) if token.kind == "quoted" else token.text
            self.fail(f"expected {what}, not a column (text values take single quotes: '{name}')")
        self.fail(f"expected {what}")

    def parse_number(self):
        sign = 1
        if self.token.kind == "punct":
            written = self.advance().text
            sign = -1 if written == "-" else 1
            if self.token.kind != "number":
                self.fail(f"expected a number after {written!r}")
        text = self.advance().text
        if re.fullmatch(r"\d+", text):
            return sign * int(text)
        return sign * decimal.Decimal(text)

    def typed_literal(self, kind: str, text: str, token: Token):
        try:
            if kind == "DATE":
                return dt.date.fromisoformat(text.strip())
            return dt.datetime.fromisoformat(text.strip())
        except ValueError:
            example = "'2026-11-20'" if kind == "DATE" else "'2026-11-20 10:30:00'"
            self.fail(f"{kind} {text!r} is not an ISO {kind.lower()} (e.g. {kind} {example})", token)


def _unquote(text: str) -> str:
    quote = text[0]
    return text[1:-1].replace(quote * 2, quote)
