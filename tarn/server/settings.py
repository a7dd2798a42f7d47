"""What `tarn serve` is configured with: the bearer tokens it accepts, the catalog prefix, the
bounds on requests, and the data token it hands to clients."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tarn.errors import InvalidArgument

MIB = 1024 * 1024


@dataclass(frozen=True)
class ServerSettings:
    """`tokens`: the bearer tokens accepted (at least one); `prefix`: the path segment after
    `/v1/` the config endpoint announces; `max_body_bytes`: a larger request body is refused
    with 413; `max_concurrency`: connections and tasks uvicorn serves at once (more get 503);
    `keep_alive_seconds`: idle connections are closed after it; `data_token`: the file-io
    options (`s3.access-key`, ...) GET .../token returns, valid `data_token_seconds`;
    `page_size` / `max_page_size`: list pages without / with a `maxResults`."""

    tokens: frozenset[str]
    prefix: str = "tarn"
    max_body_bytes: int = 16 * MIB
    max_concurrency: int = 64
    keep_alive_seconds: int = 5
    data_token: dict[str, str] = field(default_factory=dict)
    data_token_seconds: int = 3600
    page_size: int = 100
    max_page_size: int = 1000

    def __post_init__(self):
        object.__setattr__(self, "tokens", frozenset(self.tokens))
        if not self.tokens or not all(isinstance(t, str) and t.strip() == t and t for t in self.tokens):
            raise InvalidArgument("tarn serve: at least one bearer token is needed, each a non-empty string "
                                  "without blanks (--token-file or --token)")
        if not isinstance(self.prefix, str) or not self.prefix or "/" in self.prefix:
            raise InvalidArgument(f"tarn serve: prefix must be one non-empty path segment, got {self.prefix!r}")
        for name in ("max_body_bytes", "max_concurrency", "keep_alive_seconds", "data_token_seconds", "page_size",
                     "max_page_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise InvalidArgument(f"tarn serve: {name} must be a positive integer, got {value!r}")


def read_tokens(path: str | Path) -> frozenset[str]:
    """The tokens of a token file: one per line; blank lines and lines starting with '#' are
    skipped. InvalidArgument naming the file when it cannot be read or holds none."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise InvalidArgument(f"tarn serve: cannot read token file {path}: {exc}") from None
    tokens = frozenset(line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))
    if not tokens:
        raise InvalidArgument(f"tarn serve: token file {path} holds no token")
    return tokens
