"""The clinic's administration in the browser, for admins only: the library (upload, replace, delete, passages,
the ingest queue with its progress, the change log), the accounts, the review desk for 👍/👎 and the questions the
library does not cover, and the metrics.

    guard.py        the one check every admin route passes (role from the login token; origin and CSRF on changes)
    routes.py       the router all admin routes live on
    layout.py       the page frame (navigation, CSS/JS, security headers)
    library.py      the 知识库 page and its changes      ingest_jobs.py   staging and the one-at-a-time ingest queue
    users.py        the users page                      review.py        the review desk, read-only threads, gaps
    changes.py      the change log (who, what, when)    static/          admin.css, admin.js

`install(fastapi_app)` (from app.py, before the server starts) adds the handler that turns a refusal into a Chinese
page or JSON; `web/routes.py` places the router's routes in front of Chainlit's catch-all.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse, RedirectResponse, Response

from clincite.web.admin.guard import Refused


async def refused(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    if exc.status == 401 and exc.page:
        return RedirectResponse("/login", status_code=303)
    if not exc.page:
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers={"Cache-Control": "no-store"})
    from clincite.web.admin.layout import notice, page

    return page("无权访问" if exc.status == 403 else "请求被拒绝", notice(exc.message, "warn"), None, "", exc.status)


def install(fastapi_app) -> None:
    """Register the refusal handler. Must run before the server starts (Starlette builds its handlers then)."""
    fastapi_app.add_exception_handler(Refused, refused)
