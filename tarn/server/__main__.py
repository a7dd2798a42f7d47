"""`python -m tarn.server`: serve a tarn catalog as a Paimon REST catalog.

    python -m tarn.server --warehouse /data/wh --token-file tokens.txt --port 8181
    python -m tarn.server -c prod --token-file tokens.txt      # an entry of ~/.tarn.yaml
"""

from __future__ import annotations

import argparse
import os
import sys

from tarn.errors import InvalidArgument, TarnError
from tarn.server.run import serve
from tarn.server.settings import MIB, ServerSettings, read_tokens

TOKEN_ENV = "TARN_SERVE_TOKEN"  # a token from the environment, kept off the command line


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tarn serve", description="Serve a tarn catalog as a Paimon REST catalog.")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--warehouse", help="the warehouse of a directory catalog (a path or s3://bucket/path)")
    where.add_argument("-c", "--catalog", help="a catalog of the config file (~/.tarn.yaml)")
    p.add_argument("-o", "--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a catalog option (s3.endpoint=..., uri=...); repeatable")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=8181, help="port to listen on (default 8181)")
    p.add_argument("--token-file", help="bearer tokens accepted, one per line ('#' starts a comment)")
    p.add_argument("--token", action="append", default=[],
                   help=f"a bearer token accepted (repeatable; ${TOKEN_ENV} too); prefer --token-file")
    p.add_argument("--prefix", default="tarn", help="the catalog prefix of the paths, /v1/<prefix>/ (default tarn)")
    p.add_argument("--max-body-mib", type=int, default=16, help="largest request body in MiB (default 16)")
    p.add_argument("--max-concurrency", type=int, default=64,
                   help="connections served at once; more get 503 (default 64)")
    p.add_argument("--keep-alive", type=int, default=5, help="seconds an idle connection stays open (default 5)")
    p.add_argument("--data-token", action="append", default=[], metavar="KEY=VALUE",
                   help="a file-io option handed to clients by GET .../token (s3.access-key=...); repeatable")
    p.add_argument("--data-token-seconds", type=int, default=3600,
                   help="how long a handed-out data token is valid (default 3600)")
    p.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    return p


def key_values(items: list[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise InvalidArgument(f"tarn serve: {what} {item!r} must be KEY=VALUE")
        out[key.strip()] = value
    return out


def tokens_of(args) -> frozenset[str]:
    tokens = set(args.token)
    if os.environ.get(TOKEN_ENV):
        tokens.add(os.environ[TOKEN_ENV].strip())
    if args.token_file:
        tokens |= read_tokens(args.token_file)
    return frozenset(tokens)


def open_catalog(args):
    from tarn.catalog.loader import load_catalog

    options = key_values(args.option, "--option")
    if args.catalog:
        return load_catalog(args.catalog, **options)
    return load_catalog(warehouse=args.warehouse, **options)


def settings_of(args) -> ServerSettings:
    return ServerSettings(tokens_of(args), prefix=args.prefix, max_body_bytes=args.max_body_mib * MIB,
                          max_concurrency=args.max_concurrency, keep_alive_seconds=args.keep_alive,
                          data_token=key_values(args.data_token, "--data-token"),
                          data_token_seconds=args.data_token_seconds)


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = settings_of(args)
        catalog = open_catalog(args)
        print(f"tarn serve: catalog {catalog.name} on http://{args.host}:{args.port} (prefix '{settings.prefix}', "
              f"{len(settings.tokens)} token(s)); Ctrl-C stops", file=sys.stderr, flush=True)
        serve(catalog, args.host, args.port, log_level=args.log_level, settings=settings)
    except TarnError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
