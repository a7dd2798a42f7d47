"""S3 (and S3-compatible stores): configuration, the pyarrow filesystem, and the conditional PUT.

Settings come from `storage_options` (keys below, Paimon/pyiceberg-style) laid over the
environment of the process that opens the table (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION / AWS_DEFAULT_REGION). Data and listing go
through pyarrow's S3FileSystem; the one operation it lacks, "create this object only if it does
not exist", is a boto3 `put_object(IfNoneMatch="*")` (S3 answers 412 to every writer but the
first). The boto3 client is made lazily, once per process: a `ConditionalPut` pickles as its
settings, so it crosses to Spark executors.

Retries are bounded: pyarrow retries a failed request (5xx, throttling, a dropped connection)
with AWS's default strategy, 25 ms doubling per attempt, at most `PYARROW_RETRIES` times (about
1.6 s in all; AWS's "standard" strategy that pyarrow defaults to waits up to 1 s doubling, ~15 s
for five attempts, and stops retrying at all once its shared retry budget is spent). Small
files go up in one PUT (`allow_delayed_open`: no multipart upload of three requests). boto3,
which sends only the conditional PUT and reads its object back, does not retry by itself:
`put_if_absent` decides what a failed attempt means. (botocore's `max_attempts` counts retries,
not attempts: `{"max_attempts": 1}` would re-send a conditional PUT that took effect but lost its
answer, and its 412 would read as a lost race. `total_max_attempts: 1` means one attempt.)
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from urllib.parse import urlparse

import pyarrow.fs as pafs

from tarn.errors import FileMissing, InvalidOption, OutcomeUnknown, StorageError, TarnError

SCHEMES = ("s3", "s3a", "s3n")
OPTIONS = {
    "s3.endpoint": "endpoint URL of an S3-compatible store, e.g. http://127.0.0.1:9000 (env AWS_ENDPOINT_URL)",
    "s3.access-key": "access key id (env AWS_ACCESS_KEY_ID)",
    "s3.secret-key": "secret access key (env AWS_SECRET_ACCESS_KEY)",
    "s3.session-token": "session token of temporary credentials (env AWS_SESSION_TOKEN)",
    "s3.region": "region (env AWS_REGION, AWS_DEFAULT_REGION; default us-east-1)",
    "s3.path-style-access": "true: bucket in the path, not the host name (default: true with an endpoint)",
}
ENV = {"s3.endpoint": ("AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"),
       "s3.access-key": ("AWS_ACCESS_KEY_ID",),
       "s3.secret-key": ("AWS_SECRET_ACCESS_KEY",),
       "s3.session-token": ("AWS_SESSION_TOKEN",),
       "s3.region": ("AWS_REGION", "AWS_DEFAULT_REGION")}
CONFLICT_RETRIES = 5  # 409 ConditionalRequestConflict: another conditional write of the key is in flight
UNCERTAIN_RETRIES = 4  # timeouts, 5xx, dropped connections: the PUT may or may not have landed
READ_ATTEMPTS = 8  # reading an object back to settle an uncertain PUT (~6 s of backoff in all)
PYARROW_RETRIES = 6  # per request of pyarrow's S3FileSystem (AWS default strategy: 25 ms doubling)


ALIASES = {"s3.path.style.access": "s3.path-style-access"}  # Paimon's (Hadoop's) spelling


def check_options(options: dict) -> dict[str, str]:
    """`storage_options` as plain strings; unknown keys fail, listing the known ones."""
    plain = {ALIASES.get(str(k).lower(), str(k).lower()): str(v) for k, v in (options or {}).items() if v is not None}
    unknown = sorted(k for k in plain if k not in OPTIONS)
    if unknown:
        raise InvalidOption(f"unknown storage option(s) {unknown}; known: {sorted(OPTIONS)}")
    return plain


def options_among(options: dict[str, str]) -> dict[str, str] | None:
    """The storage options among other options (Spark data source options): every `s3.` key,
    checked, so that a misspelt one fails instead of passing as a table option."""
    found = {k: v for k, v in options.items() if str(k).lower().startswith("s3.")}
    return check_options(found) or None


@dataclass(frozen=True)
class S3Config:
    """Resolved settings of one S3 store (explicit options over the environment)."""

    endpoint: str | None = None
    access_key: str | None = None
    secret_key: str | None = field(default=None, repr=False)
    session_token: str | None = field(default=None, repr=False)
    region: str = "us-east-1"
    path_style: bool = False

    @classmethod
    def resolve(cls, options: dict | None = None) -> "S3Config":
        given = check_options(options or {})
        value = {key: given.get(key) or next((os.environ[e] for e in ENV[key] if os.environ.get(e)), None)
                 for key in ENV}
        style = given.get("s3.path-style-access")
        path_style = value["s3.endpoint"] is not None if style is None else style.lower() == "true"
        return cls(value["s3.endpoint"], value["s3.access-key"], value["s3.secret-key"],
                   value["s3.session-token"], value["s3.region"] or "us-east-1", path_style)

    @classmethod
    def of_filesystem(cls, fs: pafs.S3FileSystem, options: dict | None = None) -> "S3Config":
        """Settings of a ready S3FileSystem: `options` first, then the filesystem's own (where
        pyarrow exposes them), then the environment."""
        try:
            kwargs = fs.__reduce__()[1][0]
        except (AttributeError, IndexError, TypeError):  # pragma: no cover - pyarrow internals moved
            kwargs = {}
        endpoint = kwargs.get("endpoint_override") or None
        if endpoint and "://" not in endpoint:
            endpoint = f"{kwargs.get('scheme') or 'https'}://{endpoint}"
        own = {"s3.endpoint": endpoint, "s3.access-key": kwargs.get("access_key"),
               "s3.secret-key": kwargs.get("secret_key"), "s3.session-token": kwargs.get("session_token"),
               "s3.region": fs.region}
        if endpoint and not kwargs.get("force_virtual_addressing"):
            own["s3.path-style-access"] = "true"
        return cls.resolve({**{k: v for k, v in own.items() if v}, **check_options(options or {})})

    def filesystem(self) -> pafs.S3FileSystem:
        kwargs = {"region": self.region, "access_key": self.access_key, "secret_key": self.secret_key,
                  "session_token": self.session_token, "force_virtual_addressing": not self.path_style,
                  # generous limits: a busy store answering late is not a failed read
                  "request_timeout": 30, "connect_timeout": 10, "allow_delayed_open": True,
                  "retry_strategy": pafs.AwsDefaultS3RetryStrategy(max_attempts=PYARROW_RETRIES)}
        if self.endpoint:
            url = urlparse(self.endpoint if "://" in self.endpoint else f"https://{self.endpoint}")
            kwargs.update(endpoint_override=url.netloc + url.path.rstrip("/"), scheme=url.scheme)
        return pafs.S3FileSystem(**{k: v for k, v in kwargs.items() if v is not None})


def split_uri(uri: str) -> str:
    """`s3://bucket/key` (or s3a://, s3n://) -> `bucket/key`, the path pyarrow's S3FileSystem takes."""
    url = urlparse(uri)
    if url.scheme not in SCHEMES or not url.netloc:
        raise TarnError(f"'{uri}' is not an s3://bucket/path URI")
    return (url.netloc + url.path).rstrip("/")


@dataclass
class ConditionalPut:
    """`put_if_absent(path, data)` on S3 with `If-None-Match: *`; pickles without its client."""

    config: S3Config
    _client: object = field(default=None, repr=False, compare=False)
    _pid: int = field(default=0, repr=False, compare=False)

    def __getstate__(self):
        return {"config": self.config, "_client": None, "_pid": 0}

    def client(self):
        if self._client is None or self._pid != os.getpid():
            self._client, self._pid = make_client(self.config), os.getpid()
        return self._client

    def put_if_absent(self, path: str, data: bytes) -> bool:
        """Create object `path` (bucket/key) with `data`; False if it exists. Exactly one of
        racing writers gets True.

        409s are retried. After a timeout, a dropped connection, a 5xx or a throttle the object
        is read back: our bytes, True; other bytes, False; absent, the PUT is sent again
        (If-None-Match keeps it single). `OutcomeUnknown` when S3 cannot tell at all (the read
        back fails, or the last attempt timed out and may still land); a StorageError only when
        the object was not created by this call."""
        bucket, _, key = path.partition("/")
        conflicts = failures = 0
        timed_out = False
        while True:
            try:
                self.client().put_object(Bucket=bucket, Key=key, Body=data, IfNoneMatch="*")
                return True
            except Exception as exc:  # noqa: BLE001 - classified below, re-raised if unknown
                kind = classify(exc)
                if kind == "conflict" and conflicts < CONFLICT_RETRIES:
                    conflicts += 1
                    time.sleep(0.05 * 2 ** conflicts)
                    continue
                if kind in ("exists", "conflict"):  # lost, unless an earlier uncertain try was ours
                    return failures > 0 and self._same(bucket, key, data, path, exc)
                if kind == "uncertain":
                    failures += 1
                    timed_out = timed_out or is_timeout(exc)
                    landed = self._settle(bucket, key, data)
                    if landed is not None:
                        return landed
                    if failures <= UNCERTAIN_RETRIES:
                        time.sleep(0.05 * 2 ** failures)
                        continue
                    if timed_out:  # a request that timed out may still be applied later
                        raise OutcomeUnknown(f"conditional PUT of s3://{path}: no answer after {failures} "
                                             f"attempts, one timed out ({exc}); the file may or may not "
                                             "exist") from exc
                    raise StorageError(f"conditional PUT of s3://{path} failed {failures} times ({exc}); "
                                       "the object was not created") from exc
                if failures > 0:  # an earlier uncertain attempt may have landed meanwhile
                    landed = self._settle(bucket, key, data)
                    if landed is not None:
                        return landed
                raise StorageError(f"conditional PUT of s3://{path} failed: {exc}") from exc

    def _settle(self, bucket: str, key: str, data: bytes) -> bool | None:
        """After an uncertain PUT: True if the object holds our bytes, False if other bytes,
        None if it is absent (then the PUT may be retried: If-None-Match keeps it single)."""
        try:
            return self._read(bucket, key) == data
        except FileMissing:
            return None

    def _same(self, bucket: str, key: str, data: bytes, path: str, cause: Exception) -> bool:
        try:
            return self._read(bucket, key) == data
        except FileMissing:
            raise OutcomeUnknown(f"conditional PUT of s3://{path}: refused ({cause}) yet the "
                                 "object is absent") from cause

    def _read(self, bucket: str, key: str) -> bytes:
        """The object's bytes, FileMissing if absent; failures are retried a few times, then
        `OutcomeUnknown` (the caller is settling a write it could not see)."""
        for attempt in range(1, READ_ATTEMPTS + 1):
            try:
                return self.client().get_object(Bucket=bucket, Key=key)["Body"].read()
            except Exception as exc:  # noqa: BLE001
                kind = classify(exc)
                if kind == "missing":
                    raise FileMissing(f"file not found: s3://{bucket}/{key}") from exc
                if kind != "uncertain" or attempt == READ_ATTEMPTS:
                    raise OutcomeUnknown(f"conditional PUT of s3://{bucket}/{key}: could not read the object "
                                         f"back to settle an uncertain write ({exc}); it may or may not "
                                         "exist") from exc
                time.sleep(min(0.05 * 2 ** attempt, 1.6))
        raise AssertionError("unreachable")  # pragma: no cover


def make_client(config: S3Config):
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:
        raise TarnError("atomic commits on S3 need boto3 (conditional PUT): pip install 'tarn-lake[s3]'") from exc
    style = "path" if config.path_style else "auto"
    settings = Config(s3={"addressing_style": style}, retries={"total_max_attempts": 1, "mode": "standard"},
                      connect_timeout=10, read_timeout=30)
    return boto3.session.Session().client(
        "s3", endpoint_url=config.endpoint, region_name=config.region, aws_access_key_id=config.access_key,
        aws_secret_access_key=config.secret_key, aws_session_token=config.session_token, config=settings)


def classify(exc: Exception) -> str:
    """'exists' (412), 'conflict' (409), 'missing' (404), 'uncertain' (timeouts, connection
    errors, 5xx, throttling) or 'error' (anything else: credentials, no bucket, ...)."""
    from botocore import exceptions as bx

    if isinstance(exc, bx.ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0)
        code = exc.response.get("Error", {}).get("Code", "")
        if status == 412 or code == "PreconditionFailed":
            return "exists"
        if status == 409 or code == "ConditionalRequestConflict":
            return "conflict"
        if status == 404 or code in ("NoSuchKey", "404"):
            return "missing"
        if status >= 500 or status == 429 or code in ("SlowDown", "RequestTimeout", "Throttling"):
            return "uncertain"
        return "error"
    if isinstance(exc, bx.EndpointConnectionError):
        return "error"  # never connected: nothing was sent
    if isinstance(exc, (bx.ConnectionError, bx.HTTPClientError, bx.IncompleteReadError)):
        return "uncertain"  # ReadTimeout, ConnectionClosedError, ResponseStreamingError, ...
    return "error"


def is_timeout(exc: Exception) -> bool:
    """A request that timed out waiting for its answer (S3 may still be working on it)."""
    from botocore import exceptions as bx

    return isinstance(exc, bx.ReadTimeoutError)
