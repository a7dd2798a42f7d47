"""The HTTP side of the REST catalog client: one pool of keep-alive connections per catalog
(httpx's transport), bearer auth and extra headers, timeouts and retries as Paimon's
HttpClient has them, and every failure turned into a TarnError that names the catalog (its
uri) and what was asked for.

Requests go to the transport directly, not through `httpx.Client`: a catalog needs none of
the client's cookies, redirects or auth flows, and on a local server they cost over a quarter of a
commit's round trip. What the client would take from the environment is kept: the proxy of
HTTP(S)_PROXY / ALL_PROXY unless NO_PROXY names the host, and SSL_CERT_FILE / SSL_CERT_DIR.

httpx is imported when the first request is made, never by `import tarn`. A session pickles
without its connection pool (Spark ships tables to executors): the pool is made again there.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from tarn.catalog.rest_wire import ErrorBody, exception_for
from tarn.errors import OutcomeUnknown, TarnError

log = logging.getLogger(__name__)

CONNECT_SECONDS = 10.0
RESPONSE_SECONDS = 180.0  # Paimon's HttpClient waits 3 minutes for a response
RETRIES = 4  # of a request that never reached the server, or a 429 / 503 answer (Paimon retries 5 times)
RETRY_STATUSES = (429, 503)
TIMEOUTS = {"connect": CONNECT_SECONDS, "read": RESPONSE_SECONDS, "write": RESPONSE_SECONDS, "pool": RESPONSE_SECONDS}
MAX_URLS = 256  # parsed URLs kept per session
_MAKING = threading.Lock()  # one connection pool per session, however many threads ask at once


class Unanswered(TarnError):
    """A request the server may have received but did not answer (a timeout, a dropped
    connection, a 5xx answer to a request that changes something)."""


@dataclass
class Answer:
    """A response: its status and its JSON body (None when empty)."""

    status: int
    body: dict | None


@dataclass
class RestSession:
    """Requests to one REST catalog server at `uri`, with `headers` on every request (the
    Authorization header among them). `catalog` names the catalog in messages."""

    catalog: str
    uri: str
    headers: dict[str, str] = field(default_factory=dict)
    _pool: object = field(default=None, repr=False, compare=False)
    _pid: int = field(default=0, repr=False, compare=False)
    _urls: dict = field(default_factory=dict, repr=False, compare=False)  # path -> its parsed URL

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_pool"] = None  # a connection pool stays with its process
        state["_urls"] = {}
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def close(self) -> None:
        """Close the connection pool (a later request opens a new one)."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @property
    def pool(self):
        """The keep-alive connections (an httpx.HTTPTransport), made on first use in each
        process (a forked child does not share its parent's connections)."""
        if self._pool is None or self._pid != os.getpid():
            with _MAKING:
                if self._pool is None or self._pid != os.getpid():
                    import httpx

                    # no Nagle delay: httpx writes a request's headers and body apart
                    self._pool = httpx.HTTPTransport(proxy=environment_proxy(self.uri),
                                                     socket_options=[(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)])
                    self._pid = os.getpid()
        return self._pool

    def _exchange(self, method: str, path: str, params: dict | None, content: bytes | None):
        """One request and its whole response (read, the connection back in the pool)."""
        import httpx

        headers = dict(self.headers)
        if content is not None:
            headers["Content-Type"] = "application/json"
        request = httpx.Request(method, self._url(path, params), headers=headers, content=content,
                                extensions={"timeout": TIMEOUTS})
        response = self.pool.handle_request(request)
        try:
            response.read()
        finally:
            response.close()
        return response

    def _url(self, path: str, params: dict | None):
        """The URL of `path` (parsed once per path: a commit posts to the same one each time)."""
        import httpx

        if params:
            return httpx.URL(self.uri + path, params=params)
        url = self._urls.get(path)
        if url is None:
            if len(self._urls) >= MAX_URLS:
                self._urls.clear()
            url = self._urls[path] = httpx.URL(self.uri + path)
        return url

    def send(self, method: str, path: str, about: str, *, params: dict | None = None,
             body: dict | None = None, retry_unanswered: bool = False) -> Answer:
        """Send a request and return the answer, whatever its status (`failure` turns an error
        answer into an exception). A request that never reached the server, or that was answered
        429 or 503, is sent again (with backoff); one the server may have received but did not
        answer raises Unanswered, or is sent again when `retry_unanswered` (reads)."""
        import httpx

        content = None if body is None else json.dumps(body).encode()
        for attempt in range(RETRIES + 1):
            last = attempt == RETRIES
            try:
                response = self._exchange(method, path, params, content)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                if last:
                    raise TarnError(f"catalog {self.catalog}: cannot reach the REST server at {self.uri} "
                                    f"({about}): {_reason(exc)}") from exc
            except httpx.TransportError as exc:  # sent, perhaps received, not answered
                if last or not retry_unanswered:
                    raise Unanswered(f"catalog {self.catalog}: the REST server at {self.uri} did not answer "
                                     f"({about}): {_reason(exc)}") from exc
            else:
                if response.status_code not in RETRY_STATUSES or last:
                    return Answer(response.status_code, _json_body(response))
            log.info("catalog %s: %s %s: trying again (attempt %d)", self.catalog, method, path, attempt + 2)
            time.sleep(min(0.05 * 2 ** attempt, 2.0))
        raise AssertionError("unreachable")

    def call(self, method: str, path: str, about: str, *, params: dict | None = None,
             body: dict | None = None, failure=None) -> dict:
        """Send a request and return its JSON body ({} when empty); an error answer raises what
        `failure(answer, about)` returns (default: `error_of`). Reads are retried when
        unanswered; a change the server may have applied raises Unanswered."""
        answer = self.send(method, path, about, params=params, body=body, retry_unanswered=method == "GET")
        if answer.status >= 400:
            raise (failure or self.error_of)(answer, about)
        return answer.body or {}

    def error_of(self, answer: Answer, about: str) -> TarnError:
        """The TarnError for an error answer: the class the wire format gives its ErrorResponse,
        the message naming the catalog, its server and what was asked for."""
        error = ErrorBody.of(answer.body, answer.status)
        exc = exception_for(error, f"{self.catalog} ({self.uri})")
        if error.code in (401, 403):
            return type(exc)(f"catalog {self.catalog} ({self.uri}): {about}: the server refused the credentials "
                             f"(HTTP {error.code}: {error.message}); check the catalog's token (option 'token', "
                             "with token.provider=bear): it may be wrong or expired")
        return type(exc)(f"{exc} [{about}]")


def environment_proxy(uri: str) -> str | None:
    """The proxy the environment names for `uri` (None: connect directly), as httpx.Client
    would take it."""
    import urllib.request

    parts = urlsplit(uri)
    proxies = urllib.request.getproxies_environment()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or urllib.request.proxy_bypass_environment(parts.hostname or "", proxies):
        return None
    return proxy


def unknown_outcome(exc: Unanswered, about: str) -> OutcomeUnknown:
    """A commit the server may have applied: its outcome is unknown."""
    return OutcomeUnknown(f"{exc}; {about} may or may not have landed")


def _json_body(response) -> dict | None:
    if not response.content:
        return None
    try:
        body = response.json()
    except ValueError:
        return {"message": response.text[:500]}
    return body if isinstance(body, dict) else {"value": body}


def _reason(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
