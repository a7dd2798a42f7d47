"""Running `tarn serve`: uvicorn in the foreground (`serve`, stopped by SIGINT / SIGTERM) or in
a thread of this process (`ServerThread`, for tests and notebooks, stopped by `stop()`)."""

from __future__ import annotations

import socket
import threading
import time

from tarn.errors import TarnError
from tarn.server.app import create_app
from tarn.server.settings import ServerSettings

GRACEFUL_SECONDS = 10  # requests in flight get this long at shutdown


def _config(catalog, settings: ServerSettings, host: str, port: int, log_level: str):
    import uvicorn

    return uvicorn.Config(create_app(catalog, settings), host=host, port=port, log_level=log_level,
                          limit_concurrency=settings.max_concurrency, timeout_keep_alive=settings.keep_alive_seconds,
                          timeout_graceful_shutdown=GRACEFUL_SECONDS, server_header=False, lifespan="off")


def serve(catalog, host: str = "127.0.0.1", port: int = 8181, tokens=(), log_level: str = "info",
          settings: ServerSettings | None = None, **options) -> None:
    """Serve `catalog` as a Paimon REST catalog until SIGINT or SIGTERM (uvicorn stops taking
    connections and lets requests in flight finish). `tokens`: the bearer tokens accepted;
    `options`: the rest of ServerSettings (prefix, max_body_bytes, max_concurrency, ...), or
    `settings` whole."""
    import uvicorn

    settings = settings or ServerSettings(frozenset(tokens), **options)
    uvicorn.Server(_config(catalog, settings, host, port, log_level)).run()


class ServerThread:
    """A server in a daemon thread of this process on a free port (`port=0`): `start()` returns
    once it accepts connections, `url` is its address, `stop()` shuts it down."""

    def __init__(self, catalog, tokens, host: str = "127.0.0.1", port: int = 0, **settings):
        self.settings = ServerSettings(frozenset(tokens), **settings)
        self.host, self.port = host, port or _free_port(host)
        self._catalog = catalog
        self._server = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> "ServerThread":
        import uvicorn

        self._server = uvicorn.Server(_config(self._catalog, self.settings, self.host, self.port, "warning"))
        self._thread = threading.Thread(target=self._server.run, name=f"tarn-serve-{self.port}", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise TarnError(f"tarn serve: the server on {self.url} did not start within {timeout} s")
            time.sleep(0.02)
        return self

    def stop(self, timeout: float = 15.0) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout)
        self._thread = None

    def __enter__(self) -> "ServerThread":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]
