"""A fault-injecting HTTP proxy in front of an S3 server (moto's, tests/s3server.py).

Point tarn at `proxy.endpoint` instead of the server's: every request goes through the proxy,
which, while `faults` are on, decides per request (seeded) to

- refuse it: answer `503 SlowDown` without forwarding (nothing happened on the server);
- fail it after the fact: forward it, then answer `500 InternalError` (it took effect);
- drop it: forward it, then close the connection without any answer (it took effect);
- delay it: wait a moment, then forward it and pass the answer on;
- or pass it through untouched.

Besides these independent faults, an outage (started by a request with probability
`outage_rate`) fails every request, of any client, for up to `max_outage_s` seconds with one
of the three failures above: long enough to outlast a client's retries. Conditional PUTs
(`If-None-Match`, the commit point of every tarn commit) can be given higher rates
(`conditional_scale`), so that the settling of an uncertain commit is exercised often.

The first two kinds are what S3 itself answers under load, the third is a connection that dies
between the store and the client after the store acted; only a client that reads back what it
could not see can tell whether a request it saw fail took effect.

    proxy = FaultProxy(server.endpoint, seed=7).start()
    proxy.faults = True          # off at first: set up tables through a quiet proxy
    ... run clients against proxy.endpoint ...
    proxy.faults = False
    proxy.counts                 # Counter: requests, refused, failed, dropped, delayed, by method
    proxy.stop()

The proxy keeps client connections alive (HTTP/1.1), reads chunked request bodies, drops
`Expect: 100-continue` towards the server (it answers the client's itself) and opens one
server connection per request. It runs in threads of the process that starts it; the clients
may be other processes.
"""

from __future__ import annotations

import http.client
import random
import socket
import struct
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailers",
              "transfer-encoding", "upgrade", "expect", "content-length"}

REFUSED = "refused"      # 503 without forwarding
FAILED = "failed"        # forwarded, then 500
DROPPED = "dropped"      # forwarded, then the connection closed without an answer
DELAYED = "delayed"      # a pause, then forwarded normally
PASSED = "passed"


def s3_error(code: str, message: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{message}</Message>'
            f'<RequestId>fault-proxy</RequestId></Error>').encode()


class FaultProxy:
    """A threaded HTTP proxy injecting S3-like faults; rates are fractions of all requests."""

    def __init__(self, upstream: str, seed: int = 0, refuse: float = 0.03, fail: float = 0.02,
                 drop: float = 0.02, delay: float = 0.05, max_delay_s: float = 0.3,
                 outage_rate: float = 0.0, max_outage_s: float = 2.0, conditional_scale: float = 1.0):
        url = urlparse(upstream)
        self.upstream = (url.hostname, url.port or 80)
        self.rates = ((REFUSED, refuse), (FAILED, fail), (DROPPED, drop), (DELAYED, delay))
        self.max_delay_s = max_delay_s
        self.outage_rate, self.max_outage_s = outage_rate, max_outage_s
        self.conditional_scale = conditional_scale
        self._outage_until = 0.0
        self.faults = False
        self.counts: Counter = Counter()
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ life cycle

    def start(self) -> "FaultProxy":
        proxy = self

        class Handler(_Handler):
            owner = proxy

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fault-proxy", daemon=True)
        self._thread.start()
        return self

    @property
    def endpoint(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    # ------------------------------------------------------------------ decisions

    def decide(self, method: str, conditional: bool = False) -> tuple[str, float]:
        """The fate of the next request (and its delay), counted."""
        with self._lock:
            self.counts["requests"] += 1
            self.counts[f"requests {method}"] += 1
            if conditional:
                self.counts["requests conditional"] += 1
            if not self.faults:
                return PASSED, 0.0
            now = time.monotonic()
            if now >= self._outage_until and self._rng.random() < self.outage_rate:
                self._outage_until = now + self._rng.uniform(0.3, self.max_outage_s)
                self.counts["outages"] += 1
            if now < self._outage_until:
                fate = self._rng.choice((REFUSED, FAILED, DROPPED))
                self.counts["in outage"] += 1
            else:
                scale = self.conditional_scale if conditional else 1.0
                draw, fate = self._rng.random(), PASSED
                for name, rate in self.rates:
                    if draw < rate * scale:
                        fate = name
                        break
                    draw -= rate * scale
            delay = self._rng.uniform(0.02, self.max_delay_s) if fate == DELAYED else 0.0
            if fate != PASSED:
                self.counts[fate] += 1
                self.counts[f"{fate} {method}"] += 1
                if conditional:
                    self.counts[f"{fate} conditional"] += 1
            return fate, delay

    def summary(self) -> str:
        c = self.counts
        conditional = sum(c[f"{f} conditional"] for f in (REFUSED, FAILED, DROPPED))
        return (f"{c['requests']} requests: {c[REFUSED]} refused (503), {c[FAILED]} failed after forwarding (500), "
                f"{c[DROPPED]} dropped after forwarding, {c[DELAYED]} delayed; {c['outages']} outages "
                f"({c['in outage']} requests failed in them); {c['requests conditional']} conditional PUTs, "
                f"{conditional} of them failed; by method "
                + ", ".join(f"{m} {c['requests ' + m]}" for m in ("GET", "HEAD", "PUT", "POST", "DELETE")
                            if c["requests " + m]))


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out at once, no 40 ms delayed-ACK stalls
    owner: FaultProxy

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def do_GET(self):
        self._relay()

    do_PUT = do_POST = do_DELETE = do_HEAD = do_GET

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _relay(self) -> None:
        body = self._body()
        fate, delay = self.owner.decide(self.command, self.headers.get("If-None-Match") is not None)
        if fate == REFUSED:
            return self._answer(503, "Slow Down", {"Content-Type": "application/xml"},
                                s3_error("SlowDown", "Please reduce your request rate (fault proxy)"))
        if delay:
            time.sleep(delay)
        try:
            status, reason, headers, payload = self._forward(body)
        except OSError as exc:
            return self._answer(502, "Bad Gateway", {"Content-Type": "application/xml"},
                                s3_error("InternalError", f"upstream: {exc}"))
        if fate == DROPPED:
            self._drop()
            return
        if fate == FAILED:
            return self._answer(500, "Internal Server Error", {"Content-Type": "application/xml"},
                                s3_error("InternalError", "We encountered an internal error (fault proxy)"))
        self._answer(status, reason, headers, payload)

    def _forward(self, body: bytes):
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        if body or self.command in ("PUT", "POST"):
            headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(*self.owner.upstream, timeout=60)
        try:
            conn.request(self.command, self.path, body=body or None, headers=headers)
            response = conn.getresponse()
            payload = response.read()
            kept = [(k, v) for k, v in response.getheaders() if k.lower() not in HOP_BY_HOP]
            if self.command == "HEAD":  # the size of the object, not of this (empty) answer
                length = response.getheader("Content-Length")
                if length is not None:
                    kept.append(("Content-Length", length))
            return response.status, response.reason, kept, payload
        finally:
            conn.close()

    def _answer(self, status: int, reason: str, headers, payload: bytes) -> None:
        self.send_response_only(status, reason)
        items = headers.items() if isinstance(headers, dict) else headers
        for key, value in items:
            self.send_header(key, value)
        if self.command != "HEAD":
            self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD" and payload:
            self.wfile.write(payload)
        self.wfile.flush()

    def finish(self) -> None:
        try:
            super().finish()
        except OSError:  # a dropped connection
            pass

    def _drop(self) -> None:
        """Close the connection with no answer (a reset, so the client sees it at once)."""
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass
