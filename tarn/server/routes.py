"""Which endpoint of `CatalogService` answers a method and path: the spec's paths under
`/v1/{prefix}/`, matched on the raw path's segments (each decoded as Java's URLEncoder wrote
it, so a name may hold '/', '+' or '%')."""

from __future__ import annotations

from tarn.catalog.rest_wire import decode_name

# (method, path under /v1/{prefix}/, CatalogService method); {names} are the arguments
ROUTES = (
    ("GET", "databases", "list_databases"),
    ("POST", "databases", "create_database"),
    ("GET", "databases/{database}", "get_database"),
    ("DELETE", "databases/{database}", "drop_database"),
    ("POST", "databases/{database}", "alter_database"),
    ("GET", "databases/{database}/tables", "list_tables"),
    ("POST", "databases/{database}/tables", "create_table"),
    ("GET", "databases/{database}/table-details", "list_table_details"),
    ("POST", "tables/rename", "rename_table"),
    ("GET", "databases/{database}/tables/{table}", "get_table"),
    ("POST", "databases/{database}/tables/{table}", "alter_table"),
    ("DELETE", "databases/{database}/tables/{table}", "drop_table"),
    ("POST", "databases/{database}/tables/{table}/commit", "commit"),
    ("POST", "databases/{database}/tables/{table}/rollback", "rollback"),
    ("GET", "databases/{database}/tables/{table}/snapshot", "snapshot"),
    ("GET", "databases/{database}/tables/{table}/token", "token"),
    ("GET", "databases/{database}/tables/{table}/partitions", "partitions"),
    ("GET", "databases/{database}/tables/{table}/branches", "list_branches"),
    ("POST", "databases/{database}/tables/{table}/branches", "create_branch"),
    ("DELETE", "databases/{database}/tables/{table}/branches/{branch}", "drop_branch"),
    ("POST", "databases/{database}/tables/{table}/branches/{branch}/forward", "forward_branch"),
    ("GET", "databases/{database}/tables/{table}/tags", "list_tags"),
    ("POST", "databases/{database}/tables/{table}/tags", "create_tag"),
    ("GET", "databases/{database}/tables/{table}/tags/{tag}", "get_tag"),
    ("DELETE", "databases/{database}/tables/{table}/tags/{tag}", "delete_tag"),
)

_PATTERNS = [(method, tuple(pattern.split("/")), handler) for method, pattern, handler in ROUTES]


def segments(raw_path: bytes | str, prefix: str) -> list[str] | None:
    """The decoded segments after `/v1/<prefix>/`, or None when the path is not under it."""
    text = raw_path.decode("latin-1") if isinstance(raw_path, bytes) else raw_path
    parts = text.split("?", 1)[0].split("/")
    if len(parts) < 3 or parts[0] != "" or parts[1] != "v1" or decode_name(parts[2]) != prefix:
        return None
    return [decode_name(p) for p in parts[3:]]


def route(method: str, parts: list[str]) -> tuple[str | None, list[str], bool]:
    """(handler name, its path arguments, whether the path exists under another method)."""
    path_known = False
    for wanted_method, pattern, handler in _PATTERNS:
        if len(pattern) != len(parts):
            continue
        args = []
        for want, got in zip(pattern, parts):
            if want.startswith("{"):
                if not got:
                    break
                args.append(got)
            elif want != got:
                break
        else:
            if wanted_method == method:
                return handler, args, True
            path_known = True
    return None, [], path_known
