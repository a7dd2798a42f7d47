"""The `--where` filter of the command line: a small SQL-like syntax turned into `tarn.col(...)`
predicates. Nothing is evaluated: the text is tokenised and parsed by hand.

    expression := term ("or" term)*
    term       := factor ("and" factor)*
    factor     := "not" factor | "(" expression ")" | condition
    condition  := column op literal                       op: = == != <> < <= > >=
                | column ["not"] "in" "(" literal ("," literal)* ")"
                | column ["not"] "between" literal "and" literal
                | column "is" ["not"] "null"

A column is a name (letters, digits, `_`) or any text in backquotes. A literal is a quoted
string ('...' or "...", the quote doubled inside), a number, `true` or `false`. Literals are
converted to the column's type: dates, times and timestamps are written as quoted ISO strings
('2026-01-31', '2026-01-31 12:00:00'), decimals as numbers or strings.
"""

from __future__ import annotations

import datetime as dt
import decimal
import re
from dataclasses import dataclass

from tarn.scan.predicate import Compare, Predicate, col
from tarn.types import DataType

KEYWORDS = {"and", "or", "not", "in", "is", "null", "true", "false", "between"}
OPERATORS = {"=": "==", "==": "==", "!=": "!=", "<>": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
INTEGERS = ("TINYINT", "SMALLINT", "INTEGER", "INT", "BIGINT")
FLOATS = ("FLOAT", "DOUBLE")
TEXTS = ("CHAR", "VARCHAR", "STRING")
BINARIES = ("BINARY", "VARBINARY", "BYTES")

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<string>'(?:[^']|'')*'|"(?:[^"]|"")*")
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<number>[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<op><=|>=|<>|!=|==|=|<|>)
  | (?P<punct>[(),])
  | (?P<word>[A-Za-z_][A-Za-z0-9_$]*)
""", re.VERBOSE)


class WhereError(ValueError):
    """A filter the parser does not accept (the message says where and why)."""


@dataclass(frozen=True)
class Token:
    kind: str  # string, quoted, number, op, punct, word, end
    text: str
    position: int

    def is_word(self, *words: str) -> bool:
        return self.kind == "word" and self.text.lower() in words


@dataclass(frozen=True)
class Literal:
    """A literal as written: its Python value before conversion, and its kind."""

    kind: str  # string, number, bool
    value: object
    text: str


def tokenize(text: str) -> list[Token]:
    tokens, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise WhereError(f"cannot read the filter at position {position + 1}: {text[position:position + 20]!r}")
        kind = match.lastgroup
        if kind != "space":
            tokens.append(Token(kind, match.group(), position))
        position = match.end()
    tokens.append(Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str, types: dict[str, DataType]):
        self.text = text
        self.tokens = tokenize(text)
        self.index = 0
        self.types = types

    # ------------------------------------------------------------------ cursor

    @property
    def current(self) -> Token:
        return self.tokens[self.index]

    def advance(self) -> Token:
        token = self.tokens[self.index]
        if token.kind != "end":
            self.index += 1
        return token

    def fail(self, expected: str) -> WhereError:
        token = self.current
        found = "the end of the filter" if token.kind == "end" else repr(token.text)
        return WhereError(f"expected {expected} at position {token.position + 1}, found {found}")

    def expect_punct(self, char: str) -> None:
        if self.current.kind != "punct" or self.current.text != char:
            raise self.fail(f"'{char}'")
        self.advance()

    def expect_word(self, word: str) -> None:
        if not self.current.is_word(word):
            raise self.fail(f"'{word}'")
        self.advance()

    # ------------------------------------------------------------------ grammar

    def parse(self) -> Predicate:
        predicate = self.expression()
        if self.current.kind != "end":
            raise self.fail("'and', 'or' or the end of the filter")
        return predicate

    def expression(self) -> Predicate:
        predicate = self.term()
        while self.current.is_word("or"):
            self.advance()
            predicate = predicate | self.term()
        return predicate

    def term(self) -> Predicate:
        predicate = self.factor()
        while self.current.is_word("and"):
            self.advance()
            predicate = predicate & self.factor()
        return predicate

    def factor(self) -> Predicate:
        if self.current.is_word("not"):
            self.advance()
            return ~self.factor()
        if self.current.kind == "punct" and self.current.text == "(":
            self.advance()
            predicate = self.expression()
            self.expect_punct(")")
            return predicate
        return self.condition()

    def column(self) -> str:
        token = self.current
        if token.kind == "quoted":
            name = token.text[1:-1].replace("``", "`")
        elif token.kind == "word" and token.text.lower() not in KEYWORDS:
            name = token.text
        else:
            raise self.fail("a column name")
        if name not in self.types:
            raise WhereError(f"unknown column {name!r} at position {token.position + 1} "
                             f"(columns: {', '.join(self.types)})")
        self.advance()
        return name

    def condition(self) -> Predicate:
        name = self.column()
        column, dtype = col(name), self.types[name]
        token = self.current
        if token.kind == "op":
            self.advance()
            value = self.value(dtype, name)
            return Compare(name, OPERATORS[token.text], value)
        if token.is_word("is"):
            self.advance()
            negated = self.current.is_word("not")
            if negated:
                self.advance()
            self.expect_word("null")
            return column.is_not_null() if negated else column.is_null()
        negated = token.is_word("not")
        if negated:
            self.advance()
        if self.current.is_word("in"):
            self.advance()
            self.expect_punct("(")
            values = [self.value(dtype, name)]
            while self.current.kind == "punct" and self.current.text == ",":
                self.advance()
                values.append(self.value(dtype, name))
            self.expect_punct(")")
            return column.not_in(values) if negated else column.isin(values)
        if self.current.is_word("between"):
            self.advance()
            low = self.value(dtype, name)
            self.expect_word("and")
            high = self.value(dtype, name)
            inside = (column >= low) & (column <= high)
            return ~inside if negated else inside
        raise self.fail(f"an operator after column {name!r} (= != < <= > >= in between is)")

    def value(self, dtype: DataType, name: str):
        token = self.current
        if token.kind == "string":
            literal = Literal("string", token.text[1:-1].replace(token.text[0] * 2, token.text[0]), token.text)
        elif token.kind == "number":
            literal = Literal("number", token.text, token.text)
        elif token.is_word("true", "false"):
            literal = Literal("bool", token.text.lower() == "true", token.text)
        elif token.is_word("null"):
            raise WhereError(f"comparing {name!r} with null is never true: write '{name} is null' "
                             f"(position {token.position + 1})")
        else:
            raise self.fail("a value (a quoted string, a number, true or false)")
        self.advance()
        try:
            return convert(literal, dtype)
        except (ValueError, ArithmeticError) as e:
            raise WhereError(f"{literal.text} at position {token.position + 1} is not a value of column "
                             f"{name!r} ({dtype}): {e}") from None


def convert(literal: Literal, dtype: DataType):
    """The literal as a Python value of the column's type (ValueError when it is not one)."""
    root, value = dtype.root, literal.value
    if literal.kind == "bool":
        if root != "BOOLEAN":
            raise ValueError("true/false compare with BOOLEAN columns only")
        return value
    text = str(value).strip()
    if root == "BOOLEAN":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError("expected true or false")
    if root in INTEGERS:
        number = decimal.Decimal(text)
        if number != number.to_integral_value():
            return float(number)  # a fraction compares with an integer column as a number
        return int(number)
    if root in FLOATS:
        return float(text)
    if root == "DECIMAL":
        return decimal.Decimal(text)
    if root in TEXTS:
        return str(value)
    if root in BINARIES:
        return str(value).encode()
    if root == "DATE":
        return dt.date.fromisoformat(text)
    if root == "TIME":
        return dt.time.fromisoformat(text)
    if root == "TIMESTAMP":
        return dt.datetime.fromisoformat(text)
    if root == "TIMESTAMP_LTZ":
        moment = dt.datetime.fromisoformat(text)
        return moment if moment.tzinfo is not None else moment.astimezone()  # naive: local time
    raise ValueError(f"filters on {root} columns are not supported")


def parse_where(text: str, types: dict[str, DataType]) -> Predicate:
    """The predicate of a `--where` text; `types` maps each column name to its Paimon type."""
    if not text or not text.strip():
        raise WhereError("the filter is empty")
    return _Parser(text, types).parse()


def parse_value(text: str, dtype: DataType):
    """A value given on the command line (a partition value, ...) in the column's type."""
    return convert(Literal("string", text, text), dtype)
