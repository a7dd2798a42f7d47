"""tarn.load_catalog: Paimon's catalog options, the config file, environment overrides, and
clear errors for options tarn does not know or cannot honour."""

import pyarrow as pa
import pytest

import tarn
from tarn.catalog.filesystem import FileSystemCatalog

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


@pytest.fixture(autouse=True)
def no_user_config(monkeypatch, tmp_path):
    """Each test sees only the config it writes (never the machine's ~/.tarn.yaml)."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("TARN_CONFIG", raising=False)
    monkeypatch.delenv("TARN_CATALOG", raising=False)


def write_config(tmp_path, monkeypatch, text: str):
    path = tmp_path / "tarn.yaml"
    path.write_text(text)
    monkeypatch.setenv("TARN_CONFIG", str(path))
    return path


def test_options_alone_open_a_directory_catalog(tmp_path):
    catalog = tarn.load_catalog(warehouse=str(tmp_path / "wh"))
    assert isinstance(catalog, FileSystemCatalog)
    catalog.create_table("db.t", SCHEMA).write({"id": [1], "v": ["a"]})
    # the same tables as tarn.Catalog on that directory
    assert tarn.Catalog(str(tmp_path / "wh")).load_table("db.t").scan().to_arrow().to_pylist() == [{"id": 1, "v": "a"}]


def test_a_named_catalog_of_the_config_file(tmp_path, monkeypatch):
    monkeypatch.setenv("WH_ROOT", str(tmp_path))
    write_config(tmp_path, monkeypatch, "catalog:\n  local:\n    warehouse: ${WH_ROOT}/lake\n")
    catalog = tarn.load_catalog("local")
    catalog.create_table("t", SCHEMA)
    assert (tmp_path / "lake" / "default.db" / "t" / "schema" / "schema-0").is_file()


def test_default_catalog_and_the_home_file(tmp_path, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    (home / ".tarn.yaml").write_text(f"default-catalog: mine\ncatalog:\n  mine:\n    warehouse: {tmp_path}/w\n")
    assert tarn.load_catalog().warehouse == str(tmp_path / "w")
    monkeypatch.setenv("TARN_CATALOG", "other")
    with pytest.raises(tarn.TarnError, match="catalog 'other' is not in .*catalogs there: mine"):
        tarn.load_catalog()


def test_given_options_and_environment_override_the_file(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, f"catalog:\n  c:\n    warehouse: {tmp_path}/a\n")
    monkeypatch.setenv("TARN_CATALOG__C__WAREHOUSE", str(tmp_path / "b"))
    assert tarn.load_catalog("c").warehouse == str(tmp_path / "b")
    assert tarn.load_catalog("c", warehouse=str(tmp_path / "d")).warehouse == str(tmp_path / "d")


def test_unknown_option_names_the_closest(tmp_path):
    with pytest.raises(tarn.InvalidOption, match="unknown option 'warehous' .*did you mean 'warehouse'"):
        tarn.load_catalog(warehous=str(tmp_path))
    with pytest.raises(tarn.InvalidOption, match="'metastore'"):
        tarn.load_catalog(**{"metastor": "jdbc", "warehouse": str(tmp_path)})


def test_values_tarn_cannot_honour_are_refused(tmp_path):
    wh = str(tmp_path / "wh")
    with pytest.raises(tarn.InvalidOption, match="metastore 'hive' .*Hive metastores are not supported"):
        tarn.load_catalog(metastore="hive", warehouse=wh)
    with pytest.raises(tarn.InvalidOption, match="table.type=external"):
        tarn.load_catalog(warehouse=wh, **{"table.type": "external"})
    with pytest.raises(tarn.InvalidOption, match="lock.enabled"):
        tarn.load_catalog(warehouse=wh, **{"lock.enabled": True})
    with pytest.raises(tarn.InvalidOption, match="needs the option 'warehouse'"):
        tarn.load_catalog(metastore="filesystem", uri="x")
    assert not (tmp_path / "wh").exists()  # nothing made by a refused catalog


def test_tuning_options_of_paimon_are_accepted(tmp_path):
    catalog = tarn.load_catalog(warehouse=str(tmp_path), **{"cache-enabled": False, "client-pool-size": 4})
    assert catalog.list_databases() == []


def test_missing_names_and_files_are_clear(tmp_path, monkeypatch):
    with pytest.raises(tarn.TarnError, match="no catalog given"):
        tarn.load_catalog()
    with pytest.raises(tarn.TarnError, match="catalog 'prod' is not in"):
        tarn.load_catalog("prod")
    monkeypatch.setenv("TARN_CONFIG", str(tmp_path / "nope.yaml"))
    with pytest.raises(tarn.TarnError, match="TARN_CONFIG names .*nope.yaml, which is not a file"):
        tarn.load_catalog("prod")
    write_config(tmp_path, monkeypatch, "catalog: [1, 2]\n")
    with pytest.raises(tarn.TarnError, match="'catalog:' mapping"):
        tarn.load_catalog("prod")
    write_config(tmp_path, monkeypatch, "catalog:\n  p:\n    token: ${UNSET_TOKEN_VAR}\n    warehouse: x\n")
    with pytest.raises(tarn.TarnError, match="UNSET_TOKEN_VAR"):
        tarn.load_catalog("p")


def test_storage_options_reach_the_warehouse(tmp_path):
    with pytest.raises(tarn.InvalidOption, match="unknown storage option.*s3.endpont"):
        tarn.load_catalog(warehouse="s3://bucket/wh", **{"s3.endpont": "http://127.0.0.1:1"})


def test_load_table_by_catalog_name(tmp_path, monkeypatch):
    write_config(tmp_path, monkeypatch, f"catalog:\n  lake:\n    warehouse: {tmp_path}/wh\n")
    tarn.load_catalog("lake").create_table("db.t", SCHEMA).write({"id": [7], "v": ["x"]})
    assert tarn.load_table("db.t", catalog="lake").scan().to_arrow().to_pylist() == [{"id": 7, "v": "x"}]
    assert tarn.load_table(str(tmp_path / "wh" / "db.db" / "t")).name.endswith("t")  # paths as before
    with pytest.raises(tarn.InvalidOption, match="belong in the catalog's config entry"):
        tarn.load_table("db.t", {"s3.region": "x"}, catalog="lake")
