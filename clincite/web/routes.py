"""The app's own HTTP routes: stored source passages (owner only), the passage page and originals (login), who is
logged in (/clincite/me, for the chat's admin link), owner-checked replacements for Chainlit's /feedback and /login,
and the admin area (clincite/web/admin: /admin/…, /metrics, /metrics.json — admins only)."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from pathlib import Path
from typing import Annotated, Any

import jwt
from chainlit.auth import get_current_user
from chainlit.auth.cookie import get_token_from_cookies
from chainlit.auth.jwt import decode_jwt
from chainlit.config import config
from chainlit.context import init_ws_context
from chainlit.data import get_data_layer
from chainlit.server import app as fastapi_app
from chainlit.session import WebsocketSession
from chainlit.types import DeleteFeedbackRequest, UpdateFeedbackRequest
from fastapi import Depends, Request
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    RedirectResponse,
    Response,
)

from clincite.core.untrusted import clean_input
from clincite.kb.catalogue import Catalogue
from clincite.web import state
from clincite.web.admin.guard import viewer_of
from clincite.web.admin.layout import STATIC_ROUTE, static_file
from clincite.web.admin.routes import router as admin_router
from clincite.web.auth import login_route
from clincite.web.datalayer import FILES_ROUTE, ClinCiteDataLayer, DatabaseStorageClient
from clincite.web.originals import original_response
from clincite.web.sources import (
    AVATAR,
    ORIGINAL_ROUTE,
    PASSAGE_ROUTE,
    VIEW_ROUTE,
    render_document_view,
    render_passage_page,
)

log = logging.getLogger("clincite.app")
HEALTH_ROUTE = "/clincite/health"
CurrentUser = Annotated[Any, Depends(get_current_user)]  # Chainlit's login check (401 without a valid login)


def request_user(request: Request):
    token = get_token_from_cookies(request.cookies)
    header = request.headers.get("authorization", "")
    token = token or (header[7:] if header.lower().startswith("bearer ") else None)
    if not token:
        return None
    try:
        return decode_jwt(token)
    except (jwt.PyJWTError, TypeError, ValueError):  # forged, expired, or not a login token
        return None


def kb_catalogue() -> Catalogue:
    return state.current().service.kb.catalogue


def metrics_layer() -> ClinCiteDataLayer:
    layer = get_data_layer()
    assert isinstance(layer, ClinCiteDataLayer)
    return layer


async def me(request: Request) -> Response:
    """Who is logged in and whether they are an admin: the chat shows the admin link only to admins."""
    viewer = viewer_of(request)
    if viewer is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    return JSONResponse(
        {"identifier": viewer.identifier, "role": viewer.role, "admin": viewer.is_admin},
        headers={"Cache-Control": "no-store"},
    )


def owned_file(root: Path, owner_folder: str, object_key: str) -> Path | None:
    """The stored file named by this key if, once resolved (`..`, `%2F`, symlinks), it lies inside the owner's own
    folder; None for anything else. The key's raw first segment proves nothing: `bob/../alice/…` starts with bob."""
    if not owner_folder or "/" in owner_folder or owner_folder in (".", ".."):
        return None
    try:
        folder = (root / owner_folder).resolve()
        path = (root / object_key).resolve()
        return path if path.is_relative_to(folder) and path != folder and path.is_file() else None
    except (OSError, ValueError):  # e.g. a NUL byte in the key
        return None


NOT_FOUND = {"error": "文件不存在或无权访问 (not found)"}


async def stored_file(object_key: str, request: Request) -> Response:
    user = request_user(request)
    layer = metrics_layer()
    if user is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    storage = layer.storage_provider
    if isinstance(storage, DatabaseStorageClient):  # shared by every worker: the elements table says whose it is
        data = await storage.read(object_key) if await layer.element_owned_by(object_key, user.identifier) else None
        if data is None:
            return JSONResponse(NOT_FOUND, status_code=404)
        return Response(data, media_type="text/plain; charset=utf-8")
    persisted = await layer.get_user(user.identifier)
    path = owned_file(layer.storage_provider.root, persisted.id, object_key) if persisted else None
    if path is None and persisted and await layer.element_owned_by(object_key, user.identifier):
        # Filed elsewhere by Chainlit (e.g. "unknown/…" before the thread had its user): the elements table says
        # whose thread it belongs to; the file must still lie inside the folder its key names.
        path = owned_file(layer.storage_provider.root, object_key.split("/", 1)[0], object_key)
    if path is None:  # someone else's file and a missing file look the same: nothing to probe
        return JSONResponse(NOT_FOUND, status_code=404)
    return FileResponse(path, media_type="text/plain; charset=utf-8")


async def put_feedback(request: Request, update: UpdateFeedbackRequest, user: CurrentUser) -> Response:
    """PUT /feedback in place of Chainlit's, which writes whatever it is sent: only the owner of the thread may rate
    one of its answers, and only their own rating of it is changed."""
    refused = checked_comment(update.feedback)
    if refused is not None:
        return refused
    feedback_id = await metrics_layer().upsert_user_feedback(user.identifier, update.feedback)
    if feedback_id is None:
        return JSONResponse({"detail": "无权评价这条回答 (forbidden)"}, status_code=403)
    if config.code.on_feedback:
        try:
            init_ws_context(WebsocketSession.get_by_id(update.sessionId))
            await config.code.on_feedback(update.feedback)
        except Exception:
            log.exception("on_feedback failed")
    return JSONResponse({"success": True, "feedbackId": feedback_id})


COMMENT_TOO_LONG = "反馈意见太长（{length} 字），请控制在 {limit} 字以内。"


def checked_comment(feedback) -> Response | None:
    """A rating's comment cleaned at the door (NUL, control and bidi characters); None when it may be stored, else
    the refusal (413, in Chinese) for a comment over FEEDBACK_COMMENT_MAX_CHARS."""
    if feedback.comment is None:
        return None
    feedback.comment = clean_input(feedback.comment)
    limit = state.current().settings.feedback_comment_max_chars
    if len(feedback.comment) > limit:
        return JSONResponse(
            {"detail": COMMENT_TOO_LONG.format(length=len(feedback.comment), limit=limit)}, status_code=413
        )
    return None


SHARING_OFF = {"detail": "本系统不提供对话分享（对话含患者信息） (thread sharing is off)"}


async def share_thread_refused(request: Request) -> Response:
    """PUT /project/thread/share: Chainlit's handler shares a thread whatever the config says; here it is refused."""
    return JSONResponse(SHARING_OFF, status_code=403)


async def shared_thread_refused(thread_id: str) -> Response:
    """GET /project/share/{id}: no thread is readable by anyone but its owner (even one shared before)."""
    return JSONResponse({"detail": "Thread not found"}, status_code=404)


async def limits(request: Request) -> Response:
    """What the page checks before it sends (public/custom.js): a question over the limit is not even sent."""
    settings = state.current().settings
    return JSONResponse(
        {
            "question_max_chars": settings.question_max_chars,
            "feedback_comment_max_chars": settings.feedback_comment_max_chars,
        }
    )


async def delete_feedback(request: Request, payload: DeleteFeedbackRequest, user: CurrentUser) -> Response:
    if not await metrics_layer().delete_user_feedback(user.identifier, payload.feedbackId):
        return JSONResponse({"detail": "无权删除这条评价 (forbidden)"}, status_code=403)
    return JSONResponse({"success": True})


async def original_file(source: str, request: Request) -> Response:
    """ "打开原文": the original of a KB document, to whoever is logged in; streamed from the KB's original store
    (what was ingested), never from a path on disk (web/originals.py)."""
    if request_user(request) is None:
        return JSONResponse({"error": "需要登录 (login required)"}, status_code=401)
    return await original_response(state.current().service.kb, source)


async def passage_page(chunk_id: str, request: Request) -> Response:
    """A passage in its document: the neighbouring passages before and after it, one click from the side panel."""
    if request_user(request) is None:
        return RedirectResponse("/login", status_code=303)
    quote = request.query_params.get("quote", "")
    page = await asyncio.to_thread(render_passage_page, kb_catalogue(), chunk_id, quote)  # catalogue reads
    if page is None:
        return HTMLResponse("<p>片段不存在（知识库可能已更新）。</p>", status_code=404)
    return HTMLResponse(
        page, headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"}
    )


async def document_view(chunk_id: str, request: Request) -> Response:
    """ "打开原文" of a Markdown or text document: rendered as a page, scrolled to the passage (#passage)."""
    if request_user(request) is None:
        return RedirectResponse("/login", status_code=303)
    kb = state.current().service.kb
    page = await asyncio.to_thread(render_document_view, kb, chunk_id)  # the stored original and catalogue reads
    if page is None:
        return HTMLResponse("<p>无法显示这个文档（知识库可能已更新）。</p>", status_code=404)
    return HTMLResponse(
        page, headers={"Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'"}
    )


async def worker_health(request: Request) -> Response:
    """This worker's health (no login: nothing private): its name, the KB version it serves, its mode. Behind
    nginx it answers for the worker the routing cookie leads to (docs/deploy.md)."""
    app = state.current()
    searcher = app.service.searcher
    return JSONResponse(
        {
            "status": "ok",
            "worker": app.settings.worker_name or f"{socket.gethostname()}:{os.getpid()}",
            "kb_version": await asyncio.to_thread(lambda: searcher.serving_version),
            "bm25_version": await asyncio.to_thread(lambda: searcher.keyword_index_version),
            "mode": app.service.mode,
        },
        headers={"Cache-Control": "no-store"},
    )


async def avatar(avatar_id: str) -> Response:
    """Chainlit answers 400 for a non-ASCII author ("系统提示") and 404-probes others: every author gets the logo."""
    return FileResponse(AVATAR, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})


ME_ROUTE = "/clincite/me"


def add_routes_before_the_spa(app=fastapi_app) -> None:
    """Chainlit's catch-all GET route (the single-page app) would shadow routes added after it."""
    before = len(app.router.routes)
    app.include_router(admin_router)  # /admin/…, /metrics, /metrics.json: admins only (one guard on the router)
    app.add_api_route(ME_ROUTE, me, methods=["GET"])
    app.add_api_route(STATIC_ROUTE + "/{name}", static_file, methods=["GET"])
    app.add_api_route(FILES_ROUTE + "/{object_key:path}", stored_file, methods=["GET"])
    app.add_api_route(ORIGINAL_ROUTE + "/{source:path}", original_file, methods=["GET"])
    app.add_api_route(PASSAGE_ROUTE + "/{chunk_id}", passage_page, methods=["GET"])
    app.add_api_route(VIEW_ROUTE + "/{chunk_id}", document_view, methods=["GET"])
    app.add_api_route("/avatars/{avatar_id}", avatar, methods=["GET"])
    app.add_api_route(HEALTH_ROUTE, worker_health, methods=["GET"])
    # Same paths as Chainlit's own routes: placed first, these answer instead (owner checks, login throttle).
    app.add_api_route("/feedback", put_feedback, methods=["PUT"])
    app.add_api_route("/feedback", delete_feedback, methods=["DELETE"])
    app.add_api_route("/login", login_route, methods=["POST"])
    app.add_api_route("/project/thread/share", share_thread_refused, methods=["PUT"])
    app.add_api_route("/project/share/{thread_id}", shared_thread_refused, methods=["GET"])
    app.add_api_route("/clincite/limits", limits, methods=["GET"])
    ours = app.router.routes[before:]
    del app.router.routes[before:]
    app.router.routes[0:0] = ours
