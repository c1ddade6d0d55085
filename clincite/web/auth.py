"""Who may act in the app: login throttling, session generations, the request guard, and logout.

- Login (`login_route`, in front of Chainlit's POST /login): failed attempts are counted per account and per client
  address in a moving window (the maintained `limits` library: a lock-out that lifts by itself as the window moves,
  no hand-written bookkeeping). Past either limit the password is not even checked: 429 with a Chinese message and
  Retry-After, and one log line when the lock-out starts. Password checks run one at a time in a worker thread, so a
  flood of logins neither blocks the event loop nor eats every core the questions need.
- Sessions: every login cookie carries the account's `generation` (clincite/users.py). `SessionGuard`, an ASGI
  middleware in front of everything (REST, our routes, the Socket.IO handshake), drops a cookie or bearer token whose
  generation is no longer the account's (logout, password reset, account removed): to Chainlit the request then has
  no login at all. Live sockets of such a session are disconnected at once (logout) or within a second
  (`watch_accounts`, for changes made with `python -m clincite.users.store` in another process).
- Origins: the Socket.IO handshake is refused from a foreign Origin (python-socketio is configured by Chainlit with
  no origin check); HTTP CORS is Chainlit's own middleware, driven by the same `allow_origins` of config.toml.
- Cookies get the `Secure` flag over HTTPS (COOKIE_SECURE).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Annotated, Any

import jwt as pyjwt
import limits
from chainlit.auth.cookie import get_token_from_cookies
from chainlit.auth.jwt import get_jwt_secret
from chainlit.config import APP_ROOT, config
from fastapi import Depends, HTTPException, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import OAuth2PasswordRequestForm
from limits.storage import MemoryStorage, Storage, storage_from_string
from limits.strategies import MovingWindowRateLimiter
from starlette.requests import cookie_parser

from clincite.core import bus
from clincite.core.settings import Settings
from clincite.users.store import DEV_USER, UserStore, dev_login_allowed

log = logging.getLogger("clincite.auth")

AUTH_COOKIE = os.environ.get("CHAINLIT_AUTH_COOKIE_NAME", "access_token")  # the name Chainlit uses
# Password checks at once: bcrypt holds a core for ~0.25 s each; one at a time leaves the others to the questions.
HASHING_CONCURRENCY = 1
LOCKED_KEY = "toomanyattempts"  # the login page translates auth.login.errors.<detail>
LOCKED_MESSAGE = "登录失败次数过多，已暂时锁定。请约 {minutes} 分钟后再试；如忘记密码请联系管理员。"
STALE_MESSAGE = "登录已失效，请重新登录。"
ACCOUNT_WATCH_SECONDS = 1.0

# The demo account (CLINCITE_DEV_LOGIN) has no record to keep a generation in: its generation lives here.
_dev_generation = 0


# --- session generations ---
_accounts: tuple[Settings, UserStore] | None = None


def bind(settings: Settings, users: UserStore) -> None:
    """The settings and accounts this module checks against (the app context hands them over when it is built)."""
    global _accounts, _throttle
    _accounts, _throttle = (settings, users), None


def accounts() -> tuple[Settings, UserStore]:
    if _accounts is None:
        raise RuntimeError("clincite.web.auth.bind() has not been called: the app context is not built yet")
    return _accounts


def current_generation(settings: Settings, users: UserStore, name: str) -> int | None:
    """The generation a cookie of this account must carry now; None when the account does not exist (any more)."""
    generation = users.generation(name)
    if generation is None and name == DEV_USER[0] and dev_login_allowed(settings, users):
        return _dev_generation
    return generation


def token_claims(token: str) -> dict | None:
    """The claims of a token signed by this installation, else None."""
    secret = get_jwt_secret()
    if not token or not secret:
        return None
    try:
        return pyjwt.decode(token, secret, algorithms=["HS256"])
    except pyjwt.PyJWTError:
        return None


def token_is_stale(token: str) -> bool:
    """A genuine token whose account was logged out, reset or removed since it was issued.

    Tokens that do not verify at all are left to Chainlit, which refuses them anyway.
    """
    claims = token_claims(token)
    if claims is None:
        return False
    settings, users = accounts()
    issued = (claims.get("metadata") or {}).get("generation")
    return issued is None or issued != current_generation(settings, users, str(claims.get("identifier")))


async def end_sessions(name: str) -> None:
    """Logout: every cookie and socket of this clinician stops working now (all their devices: one generation)."""
    global _dev_generation
    if await asyncio.to_thread(accounts()[1].bump_generation, name) is None and name == DEV_USER[0]:
        _dev_generation += 1
    await disconnect_stale_sockets()


async def disconnect_stale_sockets() -> int:
    """Disconnect every live socket whose login is no longer valid; returns how many."""
    from chainlit.server import sio
    from chainlit.session import ws_sessions_id

    stale = [s for s in list(ws_sessions_id.values()) if s.user is not None and token_is_stale(s.token or "")]
    for session in stale:
        log.warning("Disconnecting a socket of %r: its login was ended", session.user.identifier)
        await sio.disconnect(session.socket_id)
    return len(stale)


async def watch_accounts(users: UserStore) -> None:
    """Accounts changed by the CLI (another process): end the sockets of removed or reset accounts within a second."""
    seen = users._stamp()
    while True:
        await asyncio.sleep(ACCOUNT_WATCH_SECONDS)
        stamp = users._stamp()
        if stamp != seen:
            seen = stamp
            try:
                await disconnect_stale_sockets()
            except Exception:
                log.exception("Could not check the open sessions against the changed accounts")


async def logout_hook(request: Request) -> dict:
    """Chainlit's on_logout: Chainlit has already cleared the cookie; this makes the token itself worthless."""
    claims = token_claims(_request_token(request) or "")
    if claims and claims.get("identifier"):
        await end_sessions(str(claims["identifier"]))
    return {"success": True}


def _request_token(request: Request) -> str | None:
    token = get_token_from_cookies(request.cookies)
    header = request.headers.get("authorization", "")
    return token or (header[7:] if header.lower().startswith("bearer ") else None)


# --- password checks ---
def _yield_the_cpu() -> None:
    # On Linux niceness is per thread: the password checks give way to the event loop and to the questions.
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)


_password_checks = ThreadPoolExecutor(
    max_workers=HASHING_CONCURRENCY, thread_name_prefix="password-check", initializer=_yield_the_cpu
)


async def off_the_loop(function, *args):
    """Run a password check (bcrypt, ~0.25 s of CPU) in its own low-priority thread, never on the event loop."""
    return await asyncio.get_running_loop().run_in_executor(_password_checks, function, *args)


# --- login throttling ---
LoginForm = Annotated[OAuth2PasswordRequestForm, Depends()]


class LoginThrottle:
    """Failed logins per account and per client address in a moving window (limits' in-memory storage, or its Redis
    storage when several workers share the installation: throttle_storage)."""

    def __init__(self, settings: Settings):
        self.limiter = MovingWindowRateLimiter(throttle_storage(settings))
        self.limits = {
            "account": limits.parse(settings.login_account_limit),
            "address": limits.parse(settings.login_address_limit),
        }
        self.hashing = asyncio.Semaphore(HASHING_CONCURRENCY)

    def retry_after(self, account: str, address: str) -> int:
        """Seconds until a login for this account from this address may be tried again; 0 = now."""
        wait = 0.0
        for kind, key in (("account", account), ("address", address)):
            limit = self.limits[kind]
            if not self.limiter.test(limit, kind, key):
                reset = self.limiter.get_window_stats(limit, kind, key).reset_time
                wait = max(wait, reset - time.time(), 1)
        return math.ceil(wait)

    def failed(self, account: str, address: str) -> None:
        for kind, key in (("account", account), ("address", address)):
            limit = self.limits[kind]
            self.limiter.hit(limit, kind, key)
            if not self.limiter.test(limit, kind, key):  # this failure used up the window: the lock-out starts now
                log.warning(
                    "Login locked out for %s %r after %s failed attempts (limit %s)",
                    kind,
                    key[:80],
                    limit.amount,
                    limit,
                )

    def succeeded(self, account: str) -> None:
        # Only the account's count: clearing the address would let one valid account reset a guessing address.
        self.limiter.clear(self.limits["account"], "account", account)


_throttle: LoginThrottle | None = None


# --- shared by several workers (REDIS_URL; docs/deploy.md) ---
def throttle_storage(settings: Settings) -> Storage:
    """Where failed logins are counted: limits' Redis storage when workers share the installation, so that N workers
    do not give an attacker N times the tries; else this process's memory."""
    if settings.redis_url:
        return storage_from_string(
            settings.redis_url, socket_timeout=bus.SOCKET_TIMEOUT, socket_connect_timeout=bus.SOCKET_TIMEOUT
        )
    return MemoryStorage()


SHARED_DOWN_KEY = "sharedstoredown"  # the login page translates auth.login.errors.<detail>
SHARED_DOWN_MESSAGE = "暂时无法登录：共享的 Redis 服务器无法连接（登录失败次数在其中计数）。请稍后再试，或联系管理员。"


async def shared_store_down(request: Request, exc: Exception) -> JSONResponse:
    """Redis is unreachable: failed logins cannot be counted, so no password is checked — a clear 503, not a 500.
    Questions of logged-in clinicians do not need Redis and go on."""
    log.error("Redis unreachable during %s %s (%s: %s)", request.method, request.url.path, type(exc).__name__, exc)
    return JSONResponse({"detail": SHARED_DOWN_KEY, "message": SHARED_DOWN_MESSAGE}, status_code=503)


def install_shared_store_handler(fastapi_app) -> None:
    """Answer a Redis outage with SHARED_DOWN_MESSAGE. Before the server starts (Starlette freezes its handlers)."""
    from redis.exceptions import RedisError

    fastapi_app.add_exception_handler(RedisError, shared_store_down)


def add_shared_store_message(app_root: str = APP_ROOT) -> None:
    """The login page's Chinese and English text for a Redis outage (translations are generated at start-up)."""
    texts = {"zh-CN.json": SHARED_DOWN_MESSAGE, "en-US.json": "Login is unavailable: the shared Redis server is down."}
    for name, text in texts.items():
        path = Path(app_root) / ".chainlit" / "translations" / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            errors = data.setdefault("auth", {}).setdefault("login", {}).setdefault("errors", {})
            if errors.get(SHARED_DOWN_KEY) != text:
                errors[SHARED_DOWN_KEY] = text
                path.write_text(json.dumps(data, ensure_ascii=False, indent=4), encoding="utf-8")
        except (OSError, ValueError):
            log.warning("Could not add the Redis outage message to %s", path)


async def on_account_message(message: dict) -> None:
    """An account changed in another process (a logout on another worker, the accounts command line): end this
    worker's stale sockets now (the account store publishes every change: UserStore.for_settings)."""
    await disconnect_stale_sockets()


def login_throttle() -> LoginThrottle:
    global _throttle
    if _throttle is None:
        _throttle = LoginThrottle(accounts()[0])
    return _throttle


def client_address(request: Request) -> str:
    # uvicorn puts the forwarded address here only for trusted proxies (--forwarded-allow-ips), so it is not spoofable.
    return request.client.host if request.client else "unknown"


async def login_route(request: Request, response: Response, form_data: LoginForm):
    """POST /login: Chainlit's own login, behind the throttle."""
    from chainlit.server import login as chainlit_login

    throttle, account, address = login_throttle(), form_data.username, client_address(request)
    async with throttle.hashing:  # checked again after the wait: the attempts queued before may have locked it
        wait = throttle.retry_after(account, address)
        if wait:
            return JSONResponse(
                {"detail": LOCKED_KEY, "message": LOCKED_MESSAGE.format(minutes=math.ceil(wait / 60))},
                status_code=429,
                headers={"Retry-After": str(wait)},
            )
        try:
            result = await chainlit_login(request, response, form_data)
        except HTTPException as exc:
            if exc.status_code == 401:
                throttle.failed(account, address)
            raise
    throttle.succeeded(account)
    return result


def add_login_messages(app_root: str = APP_ROOT) -> None:
    """The login page shows `auth.login.errors.<detail>`: give the lock-out its Chinese (and English) text.

    The translation files are generated by Chainlit in .chainlit/translations (not in git), so the key is merged in
    at start-up.
    """
    texts = {
        "zh-CN.json": LOCKED_MESSAGE.replace("约 {minutes} 分钟后", "稍后"),
        "en-US.json": "Too many failed logins: temporarily locked. Please try again later.",
    }
    for name, text in texts.items():
        path = Path(app_root) / ".chainlit" / "translations" / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            errors = data.setdefault("auth", {}).setdefault("login", {}).setdefault("errors", {})
            if errors.get(LOCKED_KEY) != text:
                errors[LOCKED_KEY] = text
                path.write_text(json.dumps(data, ensure_ascii=False, indent=4), encoding="utf-8")
        except (OSError, ValueError):
            log.warning("Could not add the lock-out message to %s", path)


# --- the request guard ---
class SessionGuard:
    """ASGI middleware: stale tokens are removed from the request, foreign origins cannot open a socket, and cookies
    set over HTTPS are Secure."""

    def __init__(self, app, socket_path: str = "/ws/socket.io"):
        self.app = app
        self.socket_path = socket_path

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if scope["path"].startswith(self.socket_path) and not origin_allowed(scope):
            log.warning("Socket refused from origin %r", _header(scope, b"origin"))
            return await _refuse(scope, send)
        headers, stale = _without_stale_tokens(scope["headers"])
        if stale:
            scope = {**scope, "headers": headers}
        if scope["type"] == "http":
            send = _with_cookie_flags(send, secure=secure_cookies(scope), expire_stale=stale)
        await self.app(scope, receive, send)


def _header(scope: dict, name: bytes) -> str | None:
    for key, value in scope["headers"]:
        if key == name:
            return value.decode("latin-1")
    return None


def _public_origin(scope: dict) -> str:
    scheme = "https" if scope.get("scheme") in ("https", "wss") else "http"
    return f"{scheme}://{_header(scope, b'host') or ''}"


def origin_allowed(scope: dict) -> bool:
    """Same origin, or listed in config.toml's allow_origins. No Origin header = not a browser: nothing to forge."""
    origin = _header(scope, b"origin")
    if origin is None or origin == _public_origin(scope):
        return True
    allowed = config.project.allow_origins or []
    return "*" in allowed or origin in allowed


async def _refuse(scope: dict, send) -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})  # before accept: the handshake gets 403
        return
    body = json.dumps({"detail": "origin not allowed"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 403,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _without_stale_tokens(headers: list) -> tuple[list, bool]:
    """The request headers without a stale login (cookie or bearer), and whether there was one."""
    stale = False
    kept = []
    for key, value in headers:
        if key == b"cookie":
            cookies = cookie_parser(value.decode("latin-1"))
            token = get_token_from_cookies(cookies)
            if token and token_is_stale(token):
                stale = True
                rest = "; ".join(f"{k}={v}" for k, v in cookies.items() if not k.startswith(AUTH_COOKIE))
                if rest:
                    kept.append((key, rest.encode("latin-1")))
                continue
        elif key == b"authorization":
            text = value.decode("latin-1")
            if text.lower().startswith("bearer ") and token_is_stale(text[7:].strip()):
                stale = True
                continue
        kept.append((key, value))
    return kept, stale


def secure_cookies(scope: dict) -> bool:
    mode = accounts()[0].cookie_secure
    return mode == "true" or (mode == "auto" and scope.get("scheme") == "https")


def _with_cookie_flags(send, secure: bool, expire_stale: bool):
    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            if secure:
                headers = [
                    (k, v + b"; Secure") if k == b"set-cookie" and b"secure" not in v.lower() else (k, v)
                    for k, v in headers
                ]
            if expire_stale and not any(k == b"set-cookie" and v.startswith(AUTH_COOKIE.encode()) for k, v in headers):
                # Tell the browser to drop the dead cookie, so it stops sending it.
                headers.append(
                    (
                        b"set-cookie",
                        f"{AUTH_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=lax".encode()
                        + (b"; Secure" if secure else b""),
                    )
                )
            message = {**message, "headers": headers}
        await send(message)

    return wrapped


def install(fastapi_app) -> None:
    """Put the guard in front of the whole app. Must run before the server starts (Starlette freezes middleware)."""
    from chainlit.server import SOCKET_IO_PATH

    if not any(m.cls is SessionGuard for m in fastapi_app.user_middleware):
        fastapi_app.add_middleware(SessionGuard, socket_path=SOCKET_IO_PATH)
