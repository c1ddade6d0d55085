"""Who may use the admin pages: the one guard every admin route passes, and the CSRF check of every change.

`require_admin` is the dependency of the admin router (clincite/web/admin/routes.py): every route on it, page or API,
is refused before its handler runs unless the login token (cookie or bearer, after `web/auth.SessionGuard` has dropped
stale ones) carries `role: admin`. The token's role is the account's current role: a role change bumps the account's
session generation (clincite/users/store.py), which makes older tokens worthless. Without a login: pages redirect to
the login page, APIs answer 401; with a clinician's login: 403 (a page in Chinese, or JSON).

A request that changes something (any method but GET/HEAD) must also come from this origin (Origin, else Referer)
and carry the CSRF token of the session (`csrf_token`: an HMAC of the login's identity and generation under the app's
secret), as the header X-CSRF-Token or the form field `csrf`. The login cookie is SameSite=Lax already; the token
makes the check independent of browser behaviour.

No admin action travels over Chainlit's socket: the admin area is these HTTP routes only, and a clinician's socket
session offers nothing beyond their own chats.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from urllib.parse import urlsplit

from chainlit.auth.cookie import get_token_from_cookies
from chainlit.auth.jwt import get_jwt_secret
from fastapi import Request

from clincite.users.store import ADMIN
from clincite.web.auth import token_claims

ADMIN_PREFIX = "/admin"
CSRF_HEADER = "x-csrf-token"
CSRF_FIELD = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


@dataclass(frozen=True)
class Viewer:
    """The person behind a request, as their login token says."""

    identifier: str
    display_name: str
    role: str
    generation: int

    @property
    def is_admin(self) -> bool:
        return self.role == ADMIN


class Refused(Exception):
    """The request may not proceed: 401 (no login), 403 (not an admin, or a failed CSRF/origin check)."""

    def __init__(self, status: int, message: str, page: bool):
        super().__init__(message)
        self.status, self.message, self.page = status, message, page


def request_token(request: Request) -> str | None:
    token = get_token_from_cookies(request.cookies)
    header = request.headers.get("authorization", "")
    return token or (header[7:].strip() if header.lower().startswith("bearer ") else None)


def viewer_of(request: Request) -> Viewer | None:
    """The logged-in person of this request, or None (no token, a forged or expired one, or a stale one)."""
    claims = token_claims(request_token(request) or "")
    if not claims or not claims.get("identifier"):
        return None
    metadata = claims.get("metadata") or {}
    return Viewer(
        identifier=str(claims["identifier"]),
        display_name=str(claims.get("display_name") or claims["identifier"]),
        role=str(metadata.get("role") or ""),
        generation=int(metadata.get("generation") or 0),
    )


def wants_page(request: Request) -> bool:
    """Pages get a page (or the login screen), APIs and downloads get JSON."""
    path = request.url.path
    return "/api/" not in path and not path.endswith((".json", ".csv")) and request.method in SAFE_METHODS


async def require_admin(request: Request) -> Viewer:
    """The dependency of every admin route: an admin's login, and for changes the same origin and the CSRF token."""
    page = wants_page(request)
    viewer = viewer_of(request)
    if viewer is None:
        raise Refused(401, "需要登录", page)
    if not viewer.is_admin:
        raise Refused(403, "需要管理员权限：此页面仅供本机构的管理员使用。", page)
    if request.method not in SAFE_METHODS:
        if not same_origin(request):
            raise Refused(403, "请求来源不符：管理操作只接受本站页面发出的请求。", page)
        if not hmac.compare_digest(await sent_csrf_token(request), csrf_token(viewer)):
            raise Refused(403, "页面已过期或请求无效（CSRF 校验失败），请刷新页面后重试。", page)
    request.state.viewer = viewer
    return viewer


def csrf_token(viewer: Viewer) -> str:
    """The token of this login (same for all its pages; a new login or logout changes it)."""
    secret = (get_jwt_secret() or "").encode()
    message = f"clincite-admin-csrf\x00{viewer.identifier}\x00{viewer.generation}".encode()
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


async def sent_csrf_token(request: Request) -> str:
    header = request.headers.get(CSRF_HEADER)
    if header:
        return header
    content_type = request.headers.get("content-type", "")
    if content_type.startswith(FORM_TYPES[0]):  # small forms; uploads send the header (their body is checked later)
        form = await request.form()
        value = form.get(CSRF_FIELD)
        return value if isinstance(value, str) else ""
    return ""


def same_origin(request: Request) -> bool:
    """The request names this site as its origin (Origin header, else Referer); browsers send one on every POST."""
    host = request.headers.get("host", "")
    sent = request.headers.get("origin") or request.headers.get("referer")
    if not sent or sent == "null":
        return False
    parts = urlsplit(sent)
    return parts.netloc == host and parts.scheme in ("http", "https")
