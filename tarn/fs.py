"""Storage: a thin FileIO over pyarrow.fs.

Paths are plain strings joined with "/". Every metadata file appears atomically:
- `write_if_absent`, the atomic "create this file only if it does not exist" that commits rest
  on: on a local file system a hidden temp file hard-linked into place (link fails if the target
  exists, so exactly one writer wins); on S3 a conditional PUT (`If-None-Match: *`, tarn/s3.py);
  on any other store check-then-write under the `lock` the user configures (without one it
  fails: a plain check-then-write would lose commits);
- `write_bytes`, create-or-replace: a temp file renamed over the target on a local file system,
  a single PUT (atomic by nature) on an object store.
A reader never sees a half-written file; a killed writer leaves at most a hidden temp file.

Errors: a missing file is `FileMissing`; any other failure of the store (an OSError from
pyarrow after its retries: a dropped connection, a 5xx, a refused credential) is a
`StorageError` naming the operation, the file and the store, also on writes into a stream
from `open_output_stream` and on its close (the upload). `write_if_absent` alone may raise
`OutcomeUnknown`: the create may have happened.

The warehouse may be a local path, `s3://bucket/path` (settings from `storage_options` and the
environment, tarn/s3.py), any URI pyarrow understands, or a path inside a ready
`pyarrow.fs.FileSystem` or fsspec filesystem (`filesystem=`). A FileIO pickles (Spark ships
tables to executors); the S3 client is rebuilt lazily in each process.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import uuid
from dataclasses import dataclass
from typing import Callable, ContextManager

import pyarrow.fs as pafs

from tarn import s3
from tarn.errors import FileMissing, InvalidOption, OutcomeUnknown, StorageError, TarnError

Lock = Callable[[str], ContextManager]  # lock(path) -> a context manager held around a create


def join(*parts: str) -> str:
    """Join path parts with '/', ignoring empty parts."""
    return "/".join(p.rstrip("/") for p in parts if p)


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def is_temp_file(name: str) -> bool:
    """A temporary file of an atomic write (`.<name>.<uuid>.tmp`), never a table file."""
    return name.startswith(".") and name.endswith(".tmp")


@contextlib.contextmanager
def storage_errors(what: str, path: str, store: str, missing_ok: bool = False):
    """Map an OSError of the store into a TarnError naming the file: FileMissing for a missing
    file (ignored with `missing_ok`), StorageError for anything else. TarnErrors pass."""
    try:
        yield
    except TarnError:
        raise
    except FileNotFoundError as exc:
        if not missing_ok:
            raise FileMissing(f"file not found: {path}") from exc
    except OSError as exc:
        if any(sign in str(exc) for sign in GONE):  # S3: deleted between pyarrow's HEAD and GET
            if not missing_ok:
                raise FileMissing(f"file not found: {path} ({exc})") from exc
            return
        raise StorageError(f"{what} {path} failed on the {store} store: {exc}") from exc


# how pyarrow words an S3 404 that it does not raise as FileNotFoundError
GONE = ("RESOURCE_NOT_FOUND", "NO_SUCH_KEY", "HTTP status 404")


class _OutputStream:
    """`with file_io.open_output_stream(path) as out:` gives the store's own stream (fast for
    pyarrow writers); a storage error while writing into it or closing it (the upload, on an
    object store) leaves the `with` block as a StorageError naming the file."""

    def __init__(self, stream, path: str, store: str):
        self._stream, self._path, self._store = stream, path, store

    def __enter__(self):
        return self._stream

    def __exit__(self, exc_type, exc, tb):
        try:
            self._stream.close()
        except OSError as closing:
            if exc is None:
                raise StorageError(f"writing {self._path} failed on the {self._store} store "
                                   f"(closing it): {closing}") from closing
        if isinstance(exc, OSError) and not isinstance(exc, TarnError):
            raise StorageError(f"writing {self._path} failed on the {self._store} store: {exc}") from exc
        return False

    def __getattr__(self, name):
        return getattr(self._stream, name)


@dataclass
class FileIO:
    """File operations over one pyarrow FileSystem.

    `conditional` creates objects only if absent (S3); `lock` (a callable `lock(path)` returning
    a context manager, which must span every process writing the table) makes check-then-write
    safe on stores that have neither an atomic link nor a conditional PUT."""

    fs: pafs.FileSystem
    conditional: s3.ConditionalPut | None = None
    lock: Lock | None = None

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    @property
    def is_s3(self) -> bool:
        return isinstance(self.fs, pafs.S3FileSystem)

    def uri(self, path: str) -> str:
        """`path` as a URI that `file_io_for` opens again (on another process or a Spark
        executor): `s3://bucket/key` on S3, the path itself on a local disk."""
        if self.is_s3 and "://" not in path:
            return "s3://" + path.lstrip("/")
        return path

    def native(self, path: str) -> str:
        """A path as this file system names it: `file:` URIs on a local disk and `s3://`
        (`s3a://`, `s3n://`) URIs on S3 lose their scheme (other engines record external data
        files as URIs); anything else is returned as it is."""
        if self.is_local and path.startswith("file:"):
            rest = path[len("file:"):]
            return "/" + rest.lstrip("/") if rest.startswith("/") else rest
        if self.is_s3:
            for scheme in ("s3://", "s3a://", "s3n://"):
                if path.startswith(scheme):
                    return path[len(scheme):]
        return path

    @property
    def store(self) -> str:
        """The store's name for messages: local, s3, py::fsspec+memory, ..."""
        return self.fs.type_name

    def _errors(self, what: str, path: str, missing_ok: bool = False):
        return storage_errors(what, path, self.store, missing_ok)

    def read_bytes(self, path: str) -> bytes:
        with self._errors("reading", path):
            with self.fs.open_input_stream(path) as stream:
                return stream.read()

    def write_bytes(self, path: str, data: bytes) -> None:
        """Atomically create or replace `path`: readers see the old bytes or the new, never a
        torn file (hints, consumers, manifests, replaced tags)."""
        if not self.is_local:
            self._mkdirs_for(path)
            with self._errors("writing", path):
                with self.fs.open_output_stream(path) as out:  # one PUT: atomic on object stores
                    out.write(data)
            return
        self.mkdirs(parent(path))
        tmp = self._temp_path(path)
        try:
            with self._errors("writing", path):
                with self.fs.open_output_stream(tmp) as out:
                    out.write(data)
                os.replace(tmp, path)
        except BaseException:
            self._discard(tmp)
            raise

    def _discard(self, path: str) -> None:
        """Delete a temp file of a failed write; a failure here leaves a hidden orphan, and
        the write's own error is the one to report."""
        try:
            self.delete(path)
        except Exception:  # noqa: BLE001
            pass

    @staticmethod
    def _temp_path(path: str) -> str:
        return join(parent(path), f".{basename(path)}.{uuid.uuid4()}.tmp")

    def _mkdirs_for(self, path: str) -> None:
        """Directories a file needs (none on S3: keys need no parents, and markers cost requests)."""
        if not self.is_s3:
            self.mkdirs(parent(path))

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically create `path` with `data`; False (and nothing written) if it exists.

        Exactly one of racing writers gets True. Any other error (StorageError, ...) means the
        file was not created by this call. On S3, and under a lock, an answer lost to a timeout,
        a dropped connection or a server error is settled by reading the file back (our bytes:
        True); if even that cannot tell, `OutcomeUnknown` is raised: the file may exist."""
        if self.is_local:
            return self._link_if_absent(path, data)
        if self.conditional is not None:
            return self.conditional.put_if_absent(path, data)
        if self.lock is None:
            raise TarnError(f"cannot create {path} atomically on the '{self.store}' store: it has no "
                            "conditional create; configure a lock shared by every writer "
                            "(Catalog(..., lock=...) / load_table(..., lock=...)), see docs/object-stores.md")
        with self.lock(path):
            if self.exists(path):
                return False
            try:
                self.write_bytes(path, data)
            except StorageError as exc:  # the write may have happened before it failed
                return self._settle_create(path, data, exc)
            return True

    def _settle_create(self, path: str, data: bytes, cause: StorageError) -> bool:
        try:
            return self.read_bytes(path) == data
        except FileMissing:
            raise cause
        except Exception as exc:
            raise OutcomeUnknown(f"creating {path} on the {self.store} store failed ({cause}) and the file "
                                 f"could not be read back ({exc}): it may or may not exist") from exc

    def _link_if_absent(self, path: str, data: bytes) -> bool:
        """A finished temp file hard-linked into place: the link is the create, one system
        call that either happened or not (an error other than "exists" means it did not)."""
        self.mkdirs(parent(path))
        tmp = self._temp_path(path)
        try:
            with self._errors("creating", path):
                with self.fs.open_output_stream(tmp) as out:
                    out.write(data)
                try:
                    os.link(tmp, path)
                except FileExistsError:
                    return False
            return True
        finally:
            self._discard(tmp)

    def open_input_file(self, path: str):
        with self._errors("opening", path):
            return self.fs.open_input_file(path)

    def open_output_stream(self, path: str) -> _OutputStream:
        """A stream creating or replacing `path`; use it in a `with` block (storage errors
        while writing or closing become StorageErrors naming the file)."""
        self._mkdirs_for(path)
        with self._errors("writing", path):
            return _OutputStream(self.fs.open_output_stream(path), path, self.store)

    def exists(self, path: str) -> bool:
        with self._errors("looking up", path):
            return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        with self._errors("looking up", path):
            return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def size(self, path: str) -> int:
        with self._errors("looking up", path):
            info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileMissing(f"file not found: {path}")
        return info.size

    def list_dir(self, path: str) -> list[str]:
        """Names (not paths) of the entries directly under `path`; [] if it does not exist.
        On a local disk by `os.scandir` (names only: Arrow's listing stats every entry, 20x
        slower on a snapshot directory of hundreds of files, which every commit lists)."""
        if self.is_local:
            with self._errors("listing", path):
                try:
                    with os.scandir(path) as found:
                        return sorted(entry.name for entry in found)
                except FileNotFoundError:
                    return []
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        with self._errors("listing", path):
            return sorted(basename(info.path) for info in self.fs.get_file_info(selector))

    def list_files(self, path: str, recursive: bool = True) -> list[pafs.FileInfo]:
        """FileInfo of every file under `path` (with size and mtime)."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=recursive)
        with self._errors("listing", path):
            return [i for i in self.fs.get_file_info(selector) if i.type == pafs.FileType.File]

    def entries(self, path: str) -> list[pafs.FileInfo]:
        """FileInfo of every entry (files and directories) directly under `path`; [] if it
        does not exist."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        with self._errors("listing", path):
            return self.fs.get_file_info(selector)

    def info(self, path: str) -> pafs.FileInfo:
        """The FileInfo of `path` (type NotFound when absent: no error)."""
        with self._errors("looking up", path):
            return self.fs.get_file_info(path)

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        with self._errors("deleting", path, missing_ok=True):
            self.fs.delete_file(path)

    def delete_dir(self, path: str) -> None:
        with self._errors("deleting directory", path, missing_ok=True):
            self.fs.delete_dir(path)

    def mkdirs(self, path: str) -> None:
        if path:
            with self._errors("creating directory", path):
                self.fs.create_dir(path, recursive=True)


@dataclass(frozen=True)
class FileLock:
    """A `lock` for writers on one machine: `lock(path)` holds an exclusive flock on a file
    under `directory` named by the path's hash (picklable, so it reaches Spark executors of a
    local master; writers on several machines need a lock service instead)."""

    directory: str

    @contextlib.contextmanager
    def __call__(self, path: str):
        os.makedirs(self.directory, exist_ok=True)
        name = hashlib.sha1(path.encode()).hexdigest() + ".lock"
        with open(os.path.join(self.directory, name), "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)


def local_file_io() -> FileIO:
    return FileIO(pafs.LocalFileSystem())


def file_io_for(uri: str, storage_options: dict | None = None, filesystem=None,
                lock: Lock | None = None) -> tuple[FileIO, str]:
    """FileIO and path inside it for `uri`: a local path, `s3://bucket/path` (s3a://, s3n://),
    another URI pyarrow understands, or a path inside `filesystem` (a pyarrow FileSystem or an
    fsspec filesystem). `storage_options` are the S3 settings of tarn/s3.py."""
    if filesystem is not None:
        return _given(uri, filesystem, storage_options, lock)
    scheme = uri.split("://", 1)[0].lower() if "://" in uri else "file"
    if scheme in s3.SCHEMES:
        config = s3.S3Config.resolve(storage_options)
        return FileIO(config.filesystem(), s3.ConditionalPut(config), lock), s3.split_uri(uri)
    if s3.check_options(storage_options) and scheme != "file":
        raise InvalidOption(f"storage options {sorted(storage_options)} apply to s3:// paths, not '{uri}' "
                            "(pass a ready filesystem= for other stores)")
    if scheme == "file":
        local = uri[len("file://"):] if uri.startswith("file://") else uri
        return FileIO(pafs.LocalFileSystem(), lock=lock), os.path.abspath(local)
    try:
        fs, path = pafs.FileSystem.from_uri(uri)
    except (ValueError, OSError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise TarnError(f"cannot open '{uri}': {exc} (local paths, s3://, pyarrow URIs, or "
                        "filesystem= with a pyarrow or fsspec filesystem)") from exc
    return FileIO(fs, lock=lock), path


def _given(uri: str, filesystem, storage_options: dict | None, lock: Lock | None) -> tuple[FileIO, str]:
    """A FileIO over a ready filesystem; `uri` is a path inside it (a scheme is dropped)."""
    if not isinstance(filesystem, pafs.FileSystem):
        if not hasattr(filesystem, "protocol"):
            raise TarnError(f"filesystem= for '{uri}' must be a pyarrow.fs.FileSystem or an fsspec "
                            f"filesystem, got {type(filesystem).__name__}")
        filesystem = pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))
    path = uri.split("://", 1)[1] if "://" in uri else uri
    if isinstance(filesystem, pafs.LocalFileSystem):
        return FileIO(filesystem, lock=lock), os.path.abspath(path)
    if isinstance(filesystem, pafs.S3FileSystem):
        conditional = s3.ConditionalPut(s3.S3Config.of_filesystem(filesystem, storage_options))
        return FileIO(filesystem, conditional, lock), path.rstrip("/")
    return FileIO(filesystem, lock=lock), path.rstrip("/")
