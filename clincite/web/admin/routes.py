"""The admin area's routes: one router, and on it one guard (`require_admin`) that every route passes.

Everything on `router` — the library, users and review pages, their APIs, /metrics and /metrics.json — is for
admins only (the pages' stylesheet and script are not: `layout.static_file`, public, so that the 403 page a clinician
gets is styled too); `web/routes.py` puts these routes in front of Chainlit's catch-all. A route added
here is guarded without saying so; tests/test_admin.py walks the app's routes and sends a clinician's cookie to every
one of them.
"""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from clincite.web import state
from clincite.web.admin import library, review, users
from clincite.web.admin.guard import Viewer, require_admin
from clincite.web.admin.layout import page
from clincite.web.looplag import summary as loop_lag
from clincite.web.metrics import compute_metrics, render_body, system_status

Admin = Annotated[Viewer, Depends(require_admin)]  # the same call as the router's (FastAPI caches it per request)
router = APIRouter(dependencies=[Depends(require_admin)])


async def metrics_figures() -> dict:
    status = await asyncio.to_thread(system_status)  # catalogue reads: off the event loop
    return await compute_metrics(state.current().data_layer, status)


@router.get("/metrics")
async def metrics_page(viewer: Admin) -> Response:
    return page("满意度与运行指标", render_body(await metrics_figures()), viewer, active="metrics")


@router.get("/metrics.json")
async def metrics_json(viewer: Admin) -> Response:
    return JSONResponse({**await metrics_figures(), "event_loop_lag": loop_lag()})


@router.get("/admin")
async def admin_home(viewer: Admin) -> Response:
    return RedirectResponse("/admin/library", status_code=303)


@router.get("/admin/library")
async def library_page(request: Request, viewer: Admin) -> Response:
    return await library.library_page(request, viewer)


@router.get("/admin/library/queue")
async def library_queue(request: Request, viewer: Admin) -> Response:
    return await library.queue_fragment(request, viewer)


@router.get("/admin/library/document")
async def library_document(request: Request, viewer: Admin) -> Response:
    return await library.document_page(request, viewer)


@router.post(library.UPLOAD_ROUTE)
async def library_upload(request: Request, viewer: Admin) -> Response:
    return await library.upload(request, viewer)


@router.post("/admin/library/delete")
async def library_delete(request: Request, viewer: Admin) -> Response:
    return await library.delete(request, viewer)


@router.get("/admin/users")
async def users_page(request: Request, viewer: Admin) -> Response:
    return await users.users_page(request, viewer)


@router.post("/admin/users/add")
async def users_add(request: Request, viewer: Admin) -> Response:
    return await users.add_user(request, viewer)


@router.post("/admin/users/password")
async def users_password(request: Request, viewer: Admin) -> Response:
    return await users.reset_password(request, viewer)


@router.post("/admin/users/role")
async def users_role(request: Request, viewer: Admin) -> Response:
    return await users.change_role(request, viewer)


@router.post("/admin/users/remove")
async def users_remove(request: Request, viewer: Admin) -> Response:
    return await users.remove_user(request, viewer)


@router.get("/admin/review")
async def review_page(request: Request, viewer: Admin) -> Response:
    return await review.review_page(request, viewer)


@router.post("/admin/review/handled")
async def review_handled(request: Request, viewer: Admin) -> Response:
    return await review.set_handled(request, viewer)


@router.get("/admin/review/thread/{thread_id}")
async def review_thread(thread_id: str, request: Request, viewer: Admin) -> Response:
    return await review.thread_page(thread_id, request, viewer)


@router.get("/admin/review/gaps")
async def review_gaps(request: Request, viewer: Admin) -> Response:
    return await review.gaps_page(request, viewer)


@router.get("/admin/review/gaps.csv")
async def review_gaps_csv(request: Request, viewer: Admin) -> Response:
    return await review.gaps_csv(request, viewer)
