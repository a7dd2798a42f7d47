"""`tarn serve`: a Paimon REST catalog server over any tarn catalog.

`serve(catalog, host, port, tokens, ...)` runs it until SIGINT / SIGTERM; `ServerThread` runs
it inside this process (tests); `create_app` is the ASGI app for any ASGI server. Starlette and
uvicorn (the `server` extra) are imported only when a server is built."""

from tarn.server.app import create_app
from tarn.server.run import ServerThread, serve
from tarn.server.settings import ServerSettings, read_tokens

__all__ = ["ServerSettings", "ServerThread", "create_app", "read_tokens", "serve"]
