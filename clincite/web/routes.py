"""The app's own HTTP routes: /metrics and /metrics.json (login required), stored source passages (owner only)."""

from __future__ import annotations

from chainlit.auth.cookie import get_token_from_cookies
from chainlit.auth.jwt import decode_jwt
from chainlit.data import get_data_layer
from chainlit.server import app as fastapi_app
from fastapi import Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)

from clincite.web.datalayer import FILES_ROUTE, ClinCiteDataLayer
from clincite.web.metrics import compute_metrics, render_page


def request_user(request: Request):
    token = get_token_from_cookies(request.cookies)
    header = request.headers.get("authorization", "")
    token = token or (header[7:] if header.lower().startswith("bearer ") else None)
    if not token:
        return None
    try:
        return decode_jwt(token)
    except Exception:
        return None


def metrics_layer() -> ClinCiteDataLayer:
    layer = get_data_layer()
    assert isinstance(layer, ClinCiteDataLayer)
    return layer


async def metrics_json(request: Request) -> Response:
    if request_user(request) is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    return JSONResponse(await compute_metrics(metrics_layer()))


async def metrics_page(request: Request) -> Response:
    if request_user(request) is None:
        return RedirectResponse("/login", status_code=303)
    return HTMLResponse(render_page(await compute_metrics(metrics_layer())))


async def stored_file(object_key: str, request: Request) -> Response:
    user = request_user(request)
    layer = metrics_layer()
    if user is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    persisted = await layer.get_user(user.identifier)
    if persisted is None or object_key.split("/", 1)[0] != persisted.id:
        return JSONResponse({"error": "无权访问 (forbidden)"}, status_code=403)
    path = layer.storage_provider.path(object_key)
    if not path.exists():
        return JSONResponse({"error": "not found"}, status_code=404)
    return FileResponse(path, media_type="text/plain; charset=utf-8")


def add_routes_before_the_spa() -> None:
    """Chainlit's catch-all GET route (the single-page app) would shadow routes added after it."""
    before = len(fastapi_app.router.routes)
    fastapi_app.add_api_route("/metrics.json", metrics_json, methods=["GET"])
    fastapi_app.add_api_route("/metrics", metrics_page, methods=["GET"])
    fastapi_app.add_api_route(FILES_ROUTE + "/{object_key:path}", stored_file, methods=["GET"])
    ours = fastapi_app.router.routes[before:]
    del fastapi_app.router.routes[before:]
    fastapi_app.router.routes[0:0] = ours
