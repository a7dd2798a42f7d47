"""Every error tarn raises. Each names the table, column, option or file it is about."""


class TarnError(Exception):
    """Base class of all tarn errors."""


class SchemaMismatch(TarnError):
    """Input data does not fit the table schema (missing/extra column, wrong type, null key)."""


class InvalidOption(TarnError):
    """An unknown or invalid table option."""


class TableNotFound(TarnError):
    """No table at the given identifier or path."""


class TableAlreadyExists(TarnError):
    """create_table on an identifier that already has a table."""


class SnapshotNotFound(TarnError):
    """A snapshot id (or tag, or timestamp) that does not resolve to a snapshot."""


class CorruptFile(TarnError):
    """A metadata or data file that cannot be parsed; the message names the file."""


class FileMissing(TarnError, FileNotFoundError):
    """A file the table needs is not there (deleted by expiry, rollback or by hand); the message
    names it. Distinct from CorruptFile: the file is absent, not damaged."""


class CommitConflict(TarnError):
    """A commit that cannot be applied on top of the latest snapshot."""


class DynamicBucketConflict(CommitConflict):
    """Another writer changed a dynamic-bucket partition's key-to-bucket index meanwhile (Paimon's
    single-writer rule); nothing was committed, and writing the rows again can succeed."""


class SchemaEvolutionError(TarnError):
    """An ALTER that Paimon does not allow (e.g. changing a primary key, narrowing a type)."""


class InvalidArgument(TarnError):
    """A bad argument to a table operation (a numeric, blank or taken tag name, ...)."""


class OutcomeUnknown(TarnError):
    """A create-if-absent (a commit) whose outcome the store could not tell: the request timed
    out or failed with a server error and the file could not be read back. The file may exist:
    whoever wrote it must not delete what it references. The message names the file."""


class InvalidFilter(InvalidArgument):
    """A scan filter tarn cannot apply: unparsable SQL-like text, a value that does not fit its
    column's type, an unsupported expression. The message names the table and the column."""


class MissingDependency(TarnError, ImportError):
    """An optional package a method needs is not installed; the message names the extra to
    install (`pip install 'tarn-lake[polars]'`, ...)."""


class UnsupportedFeature(TarnError):
    """A table needs a Paimon feature tarn does not implement (an option, a type, a file format,
    an index): tarn refuses rather than guess. The message names the table, the feature and the
    Paimon version that introduced it; a refused write has written nothing."""


class StorageError(TarnError, OSError):
    """The file system or object store failed a request after its own retries (a dropped
    connection, a 5xx, a refused credential); the message names the file and the store. It is
    an OSError too. A commit raises it only when its snapshot did not land: when the store
    cannot tell, the commit raises OutcomeUnknown instead."""
