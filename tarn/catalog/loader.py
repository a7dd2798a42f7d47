"""One way to open a catalog: `tarn.load_catalog(name=None, **options)` with Paimon's catalog
option names (`metastore` = filesystem | jdbc | rest, `warehouse`, `uri`, `token`, ...),
also read from a config file (docs/guide-catalogs.md).

The config file is `$TARN_CONFIG` or `~/.tarn.yaml`:

    default-catalog: local
    catalog:
      local:
        warehouse: /data/warehouse
      prod:
        metastore: rest
        uri: https://paimon.example.com
        warehouse: prod
        token.provider: bear
        token: ${PAIMON_TOKEN}        # ${VAR}: taken from the environment when loaded

A catalog's options are, weakest first: its entry in the file, environment variables
`TARN_CATALOG__<NAME>__<KEY>` (KEY upper-case with `_` for `.` or `-`: `TARN_CATALOG__PROD__TOKEN`,
`TARN_CATALOG__PROD__JDBC_PASSWORD`), then the options passed to `load_catalog`. Unknown options fail
naming the closest known one; a value tarn cannot honour fails naming the option.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

from tarn.errors import InvalidOption, TarnError
from tarn.options import parse_bool

CONFIG_ENV = "TARN_CONFIG"
CATALOG_ENV = "TARN_CATALOG"
DEFAULT_CONFIG = "~/.tarn.yaml"
METASTORES = ("filesystem", "jdbc", "rest")

# Paimon's CatalogOptions (paimon-api options/CatalogOptions.java) every metastore takes;
# those that only tune caches or pools change nothing a reader sees and are accepted as is
GENERIC_OPTIONS = {
    "metastore": "filesystem (default), jdbc or rest",
    "warehouse": "where tables are kept: a directory or s3:// URI (rest: the server's catalog name)",
    "uri": "the catalog's address: a JDBC URL (jdbc) or the server's http(s) URL (rest)",
    "lock.enabled": "jdbc: take the catalog's distributed lock around commits",
    "lock.type": "the lock's kind (jdbc: the catalog database)",
    "lock-check-max-sleep": "jdbc lock: longest wait between tries (Paimon's default 8 s)",
    "lock-acquire-timeout": "jdbc lock: give up after (Paimon's default 8 min)",
    "table.type": "managed (the only kind tarn creates)",
    "case-sensitive": "true: identifiers keep their case (tarn's only behaviour)",
    "client-pool-size": "connections per catalog (accepted; tarn keeps one)",
    "cache-enabled": "catalog caching (accepted; tarn always reads the latest metadata)",
    "cache.expire-after-access": "catalog caching (accepted, no effect)",
    "cache.expire-after-write": "catalog caching (accepted, no effect)",
    "cache.partition.max-num": "catalog caching (accepted, no effect)",
    "cache.manifest.small-file-memory": "catalog caching (accepted, no effect)",
    "cache.manifest.small-file-threshold": "catalog caching (accepted, no effect)",
    "cache.manifest.max-memory": "catalog caching (accepted, no effect)",
    "cache.manifest.soft-values": "catalog caching (accepted, no effect)",
    "cache.snapshot.max-num-per-table": "catalog caching (accepted, no effect)",
    "cache.deletion-vectors.max-num": "catalog caching (accepted, no effect)",
    "sync-all-properties": "accepted (no metastore to sync to)",
    "format-table.enabled": "accepted (tarn opens Paimon tables only)",
    "catalog-options-table.enabled": "accepted (no effect)",
    "resolving-file-io.enabled": "accepted (tarn resolves file systems by scheme)",
    "file-io.allow-cache": "accepted (no effect)",
}
GENERIC_PREFIXES = ("s3.", "fs.")  # storage options of the warehouse (docs/object-stores.md)
ONLY_VALUES = {"table.type": ("managed",), "case-sensitive": ("true",)}  # what tarn honours


def load_catalog(name: str | None = None, **options):
    """The catalog `name` of the config file (`$TARN_CONFIG` or `~/.tarn.yaml`) with `options`
    laid over its entry, or, without a name, the catalog `options` describe (or the file's
    `default-catalog`). `tarn.load_catalog(warehouse="/data/wh")` is `tarn.Catalog("/data/wh")`;
    `tarn.load_catalog("prod")` opens the file's entry `prod`; option names with dots are passed
    as `**{"token.provider": "bear"}`."""
    merged, label = catalog_options(name, options)
    metastore = merged.get("metastore", "filesystem").strip().lower()
    if metastore not in METASTORES:
        hint = " (Hive metastores are not supported: use a jdbc or rest catalog)" if metastore == "hive" else ""
        raise InvalidOption(f"catalog {label}: metastore '{merged['metastore']}' is not one of "
                            f"{', '.join(METASTORES)}{hint}")
    module = _metastore_module(metastore)
    check_options(merged, label, metastore, module)
    if metastore == "filesystem":
        return _filesystem_catalog(merged, label)
    return (module.JdbcCatalog if metastore == "jdbc" else module.RestCatalog)(merged, label)


def load_table(path: str, storage_options: dict | None = None, *, catalog: str | None = None, **options):
    """`tarn.load_table`: the table stored at `path` (tarn/table.py `load_table`: a local path,
    an s3:// or other URI, `filesystem=`, `lock=`, `branch=`), or, with `catalog` (a name of the
    config file), the table `path` names there (`"db.t"`, `"db.t$branch_dev"`)."""
    if catalog is None:
        from tarn.table import load_table as load_stored

        return load_stored(path, storage_options, **options)
    if storage_options is not None or options:
        raise InvalidOption(f"table {path} of catalog {catalog}: storage and other options belong in the "
                            f"catalog's config entry, not in load_table")
    return load_catalog(catalog).load_table(path)


def _metastore_module(metastore: str):
    if metastore == "jdbc":
        from tarn.catalog import jdbc
        return jdbc
    if metastore == "rest":
        from tarn.catalog import rest
        return rest
    return None


def catalog_options(name: str | None, given: dict) -> tuple[dict[str, str], str]:
    """The options of catalog `name` (file entry, environment, then `given`) as strings, and how
    messages name the catalog."""
    explicit = {key: _as_text(key, value) for key, value in given.items()}
    config, path = read_config()
    entries = config.get("catalog") or {}
    if name is None and not explicit:
        name = os.environ.get(CATALOG_ENV) or config.get("default-catalog")
        if name is None:
            raise TarnError(f"no catalog given: pass options (tarn.load_catalog(warehouse=...)) or a name of "
                            f"{path or DEFAULT_CONFIG} (or set {CATALOG_ENV})")
    if name is None:
        metastore = explicit.get("metastore", "filesystem")
        return explicit, explicit.get("warehouse", "(unnamed)") if metastore == "filesystem" else metastore
    if not isinstance(name, str) or not name:
        raise InvalidOption(f"catalog name must be a non-empty string, got {name!r}")
    entry = entries.get(name)
    environment = _environment_options(name)
    if entry is None and not explicit and not environment:
        known = ", ".join(sorted(entries)) or "none"
        raise TarnError(f"catalog '{name}' is not in {path or DEFAULT_CONFIG + ' (no such file)'} "
                        f"(catalogs there: {known})")
    if entry is not None and not isinstance(entry, dict):
        raise InvalidOption(f"catalog '{name}' in {path}: its entry must be a mapping of options")
    merged = {key: _expand(_as_text(key, value), name, key) for key, value in (entry or {}).items()}
    return merged | environment | explicit, name


def read_config() -> tuple[dict, str | None]:
    """The config file's content and path (({}, None) when there is none)."""
    named = os.environ.get(CONFIG_ENV)
    path = Path(named).expanduser() if named else Path(DEFAULT_CONFIG).expanduser()
    if not path.is_file():
        if named:
            raise TarnError(f"{CONFIG_ENV} names {named}, which is not a file")
        return {}, None
    import yaml

    try:
        content = yaml.safe_load(path.read_text()) or {}
    except (yaml.YAMLError, OSError) as exc:
        raise TarnError(f"catalog config {path}: cannot read it ({exc})") from exc
    if not isinstance(content, dict) or not isinstance(content.get("catalog", {}), dict):
        raise TarnError(f"catalog config {path}: expected a mapping with a 'catalog:' mapping of catalogs")
    return content, str(path)


def _environment_options(name: str) -> dict[str, str]:
    """`TARN_CATALOG__PROD__URI=...` -> {"uri": ...} for catalog `prod`."""
    prefix = f"TARN_CATALOG__{name.upper()}__"
    found = {}
    for variable, value in os.environ.items():
        if variable.startswith(prefix) and len(variable) > len(prefix):
            found[_environment_key(variable[len(prefix):])] = value
    return found


def _environment_key(text: str) -> str:
    """KEY lower-cased, each `_` a `.`, or a `-` where a known option has one there
    (`LOCK_ACQUIRE_TIMEOUT` -> `lock-acquire-timeout`, `JDBC_USER` -> `jdbc.user`)."""
    dotted = text.lower().replace("_", ".")
    for known in GENERIC_OPTIONS:
        if re.sub(r"[.-]", ".", known) == dotted:
            return known
    return dotted


def _expand(value: str, name: str, key: str) -> str:
    """`${VAR}` in a config value, from the environment (a missing variable is an error)."""
    def variable(match: re.Match) -> str:
        found = os.environ.get(match.group(1))
        if found is None:
            raise TarnError(f"catalog '{name}': option {key} uses ${{{match.group(1)}}}, which is not set")
        return found
    return re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", variable, value)


def _as_text(key, value) -> str:
    if not isinstance(key, str):
        raise InvalidOption(f"catalog option names are strings, got {key!r}")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float, os.PathLike)):
        return os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    raise InvalidOption(f"catalog option {key}: expected a string, number or boolean, got {type(value).__name__}")


def check_options(options: dict[str, str], label: str, metastore: str, module) -> None:
    """Unknown options fail naming the closest known one; values tarn cannot honour fail."""
    known = dict(GENERIC_OPTIONS) | dict(getattr(module, "CATALOG_OPTIONS", {}))
    prefixes = GENERIC_PREFIXES + tuple(getattr(module, "OPTION_PREFIXES", ()))
    for key, value in options.items():
        if key in known or key.startswith(prefixes):
            continue
        closest = difflib.get_close_matches(key, list(known), n=1, cutoff=0.0)
        raise InvalidOption(f"catalog {label}: unknown option '{key}' (did you mean '{closest[0]}'?)")
    for key, allowed in ONLY_VALUES.items():
        if key in options and options[key].strip().lower() not in allowed:
            raise InvalidOption(f"catalog {label}: option {key}={options[key]} is not supported by tarn "
                                f"(only {', '.join(allowed)})")
    if metastore == "filesystem" and parse_bool(options.get("lock.enabled", "false")):
        raise InvalidOption(f"catalog {label}: lock.enabled=true is not needed by tarn's directory catalog "
                            "(commits are atomic creates: a local rename or an S3 conditional write); for a "
                            "store without them pass lock= to tarn.Catalog (docs/object-stores.md)")


def _filesystem_catalog(options: dict[str, str], label: str):
    from tarn.catalog.filesystem import FileSystemCatalog

    warehouse = options.get("warehouse")
    if not warehouse:
        raise InvalidOption(f"catalog {label}: a filesystem catalog needs the option 'warehouse' (a directory "
                            "or s3:// URI)")
    storage = {key: value for key, value in options.items() if key.startswith(GENERIC_PREFIXES)}
    return FileSystemCatalog(warehouse, storage or None)
