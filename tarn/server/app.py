"""The ASGI application of `tarn serve` (Starlette): bearer-token auth on every endpoint of the
spec, bodies bounded before they are read, JSON in and out, errors as the spec's
ErrorResponse. The catalog work runs in worker threads (it is blocking file I/O).

Starlette is imported when an app is built, never when `tarn` is imported."""

from __future__ import annotations

import hmac
import json
import logging
import uuid

from tarn.catalog import rest_wire as wire
from tarn.errors import InvalidArgument, TarnError
from tarn.server.routes import route, segments
from tarn.server.service import CatalogService, HttpError
from tarn.server.settings import ServerSettings

log = logging.getLogger(__name__)

HEALTH_PATH = "/health"
REQUEST_ID = "x-request-id"


def create_app(catalog, settings: ServerSettings):
    """The Starlette app serving `catalog` (any tarn catalog: the directory catalog, a JDBC
    catalog) as a Paimon REST catalog."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    service = CatalogService(catalog, settings)

    def answer(status: int, body, request_id: str):
        headers = {REQUEST_ID: request_id}
        if status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        if body is None:
            return Response(status_code=status, headers=headers)
        return JSONResponse(body, status_code=status, headers=headers)

    async def health(request):
        return JSONResponse({"status": "ok", "catalog": str(catalog.name)})

    async def endpoint(request):
        request_id = request.headers.get(REQUEST_ID) or uuid.uuid4().hex
        try:
            if not authorized(request.headers.get("authorization"), settings.tokens):
                raise HttpError(401, "a valid bearer token is needed (Authorization: Bearer <token>)")
            handler, args = _handler(service, request.method, request.scope.get("raw_path") or b"",
                                     request.url.path, settings.prefix)
            body = await read_json(request, settings.max_body_bytes) if request.method == "POST" else None
            result = await run_in_threadpool(handler, *args, dict(request.query_params), body)
            return answer(200, result, request_id)
        except HttpError as exc:
            return answer(exc.error.code, exc.error.body(), request_id)
        except TarnError as exc:
            error = wire.error_for(exc)
            if error.code >= 500:
                log.error("%s %s failed: %s", request.method, request.url.path, exc)
            return answer(error.code, error.body(), request_id)
        except Exception:  # noqa: BLE001 - the client gets a 500, the log the trace
            log.exception("%s %s failed", request.method, request.url.path)
            return answer(500, wire.ErrorBody(500, f"internal error of catalog {catalog.name} (request "
                                                   f"{request_id}; see the server log)").body(), request_id)

    methods = ["GET", "POST", "DELETE", "PUT", "PATCH", "HEAD"]
    return Starlette(routes=[Route(HEALTH_PATH, health, methods=["GET"]),
                             Route("/{path:path}", endpoint, methods=methods)])


def _handler(service: CatalogService, method: str, raw_path: bytes, path: str, prefix: str):
    """The bound endpoint and its path arguments; HttpError 404 / 405 when there is none."""
    if path == wire.RestPaths.config():
        if method != "GET":
            raise HttpError(405, f"{method} {path} is not allowed")
        return service.config, []
    parts = segments(raw_path or path.encode(), prefix)
    if parts is None:
        raise HttpError(404, f"no endpoint {path} (this server's prefix is '{prefix}': /v1/{prefix}/...)")
    name, args, known = route(method, parts)
    if name is None:
        raise HttpError(405 if known else 404, f"{'method ' + method + ' not allowed on' if known else 'no endpoint'} "
                                               f"{path}")
    return getattr(service, name), args


def authorized(header: str | None, tokens: frozenset[str]) -> bool:
    """Does the Authorization header carry one of `tokens` (compared in constant time)?"""
    if not header or not header.startswith(wire.BEARER):
        return False
    given = header[len(wire.BEARER):].strip().encode()
    found = False
    for token in tokens:
        found |= hmac.compare_digest(given, token.encode())
    return found


async def read_json(request, limit: int):
    """The request's JSON body (None when empty); 413 as soon as it is known to exceed `limit`
    bytes (by its Content-Length, else while it streams in), 400 when it is not JSON."""
    declared = request.headers.get("content-length")
    if declared is not None:
        if not declared.isdigit():
            raise HttpError(400, f"Content-Length {declared!r} is not a number")
        if int(declared) > limit:
            raise HttpError(413, f"request body of {declared} bytes exceeds the limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HttpError(413, f"request body exceeds the limit of {limit} bytes")
        chunks.append(chunk)
    data = b"".join(chunks)
    if not data.strip():
        return None
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidArgument(f"the request body is not valid JSON: {exc}") from None
