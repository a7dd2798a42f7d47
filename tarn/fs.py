"""Storage: a thin FileIO over pyarrow.fs.

Paths are plain strings joined with "/". Every metadata file appears atomically:
- `write_if_absent`, the atomic "create this file only if it does not exist" that commits rest
  on: on a local file system a hidden temp file hard-linked into place (link fails if the target
  exists, so exactly one writer wins); on an object store a conditional PUT
  (`If-None-Match: *`);
- `write_bytes`, create-or-replace: a temp file renamed over the target on a local file system,
  a single PUT (atomic by nature) on an object store.
A reader never sees a half-written file; a killed writer leaves at most a hidden temp file.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs

from tarn.errors import FileMissing


def join(*parts: str) -> str:
    """Join path parts with '/', ignoring empty parts."""
    return "/".join(p.rstrip("/") for p in parts if p)


def parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else ""


def basename(path: str) -> str:
    return path.rsplit("/", 1)[-1]


@dataclass
class FileIO:
    """File operations over one pyarrow FileSystem."""

    fs: pafs.FileSystem

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def read_bytes(self, path: str) -> bytes:
        try:
            with self.fs.open_input_stream(path) as stream:
                return stream.read()
        except FileNotFoundError as exc:
            raise FileMissing(f"file not found: {path}") from exc

    def write_bytes(self, path: str, data: bytes) -> None:
        """Atomically create or replace `path`: readers see the old bytes or the new, never a
        torn file (hints, consumers, manifests, replaced tags)."""
        directory = parent(path)
        self.mkdirs(directory)
        if not self.is_local:
            with self.fs.open_output_stream(path) as out:  # one PUT: atomic on object stores
                out.write(data)
            return
        tmp = self._temp_path(path)
        try:
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            os.replace(tmp, path)
        except BaseException:
            self.delete(tmp)
            raise

    @staticmethod
    def _temp_path(path: str) -> str:
        return join(parent(path), f".{basename(path)}.{uuid.uuid4()}.tmp")

    def write_if_absent(self, path: str, data: bytes) -> bool:
        """Atomically create `path` with `data`; False (and nothing written) if it exists."""
        directory = parent(path)
        self.mkdirs(directory)
        if not self.is_local:
            if self.exists(path):
                return False
            self.write_bytes(path, data)
            return True
        tmp = self._temp_path(path)
        try:
            with self.fs.open_output_stream(tmp) as out:
                out.write(data)
            os.link(tmp, path)
            return True
        except FileExistsError:
            return False
        finally:
            self.delete(tmp)

    def open_input_file(self, path: str):
        return self.fs.open_input_file(path)

    def open_output_stream(self, path: str):
        self.mkdirs(parent(path))
        return self.fs.open_output_stream(path)

    def exists(self, path: str) -> bool:
        return self.fs.get_file_info(path).type != pafs.FileType.NotFound

    def is_dir(self, path: str) -> bool:
        return self.fs.get_file_info(path).type == pafs.FileType.Directory

    def size(self, path: str) -> int:
        info = self.fs.get_file_info(path)
        if info.type == pafs.FileType.NotFound:
            raise FileMissing(f"file not found: {path}")
        return info.size

    def list_dir(self, path: str) -> list[str]:
        """Names (not paths) of the entries directly under `path`; [] if it does not exist."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=False)
        return sorted(basename(info.path) for info in self.fs.get_file_info(selector))

    def list_files(self, path: str, recursive: bool = True) -> list[pafs.FileInfo]:
        """FileInfo of every file under `path` (with size and mtime)."""
        selector = pafs.FileSelector(path, allow_not_found=True, recursive=recursive)
        return [i for i in self.fs.get_file_info(selector) if i.type == pafs.FileType.File]

    def delete(self, path: str) -> None:
        """Delete a file; a missing file is not an error."""
        try:
            self.fs.delete_file(path)
        except FileNotFoundError:
            pass

    def delete_dir(self, path: str) -> None:
        try:
            self.fs.delete_dir(path)
        except FileNotFoundError:
            pass

    def mkdirs(self, path: str) -> None:
        if path:
            self.fs.create_dir(path, recursive=True)


def local_file_io() -> FileIO:
    return FileIO(pafs.LocalFileSystem())


def file_io_for(uri: str) -> tuple[FileIO, str]:
    """FileIO and path inside it for a local path or a URI pyarrow understands (s3://, ...)."""
    if "://" not in uri or uri.startswith("file://"):
        local = uri[len("file://"):] if uri.startswith("file://") else uri
        return local_file_io(), os.path.abspath(local)
    fs, path = pafs.FileSystem.from_uri(uri)
    return FileIO(fs), path
