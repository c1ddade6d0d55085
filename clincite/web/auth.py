"""Who may act in the app: login throttling, session generations, the request guard, and logout.

- Login (`login_route`, in front of Chainlit's POST /login): failed attempts are counted per client address, per
  account and address, and per account (`LoginThrottle`: the maintained `limits` library's moving windows, lock-outs
  that lift by themselves). An address is locked out first; guessing spread over many addresses only slows the
  account down for addresses it never logged in from (a doubling back-off of seconds), so nobody can lock a clinician
  out with five wrong passwords. Past a limit the password is not even checked: 429 with a Chinese message and
  Retry-After, and one log line when a lock-out starts. Password checks run one at a time in a worker thread, so a
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
from clincite.users.store import DEV_USER, UserStore, dev_login_allowed, next_generation
from clincite.web.headers import with_security_headers

log = logging.getLogger("clincite.auth")

AUTH_COOKIE = os.environ.get("CHAINLIT_AUTH_COOKIE_NAME", "access_token")  # the name Chainlit uses
# Password checks at once: bcrypt holds a core for ~0.25 s each; one at a time leaves the others to the questions.
HASHING_CONCURRENCY = 1
LOCKED_KEY = "toomanyattempts"  # the login page translates auth.login.errors.<detail>
LOCKED_MESSAGE = "登录失败次数过多，已暂时锁定。请约 {minutes} 分钟后再试；如忘记密码请联系管理员。"
BACKOFF_MESSAGE = "这个账号最近有多次登录失败，请 {seconds} 秒后再试；如忘记密码请联系管理员。"
COUNTER_CEILING = 1_000_000  # the "limit" of a counter: it only counts
KNOWN_FOR = "30 days"  # an address the account logged in from is known (not slowed by the back-off) this long
STALE_MESSAGE = "登录已失效，请重新登录。"
ACCOUNT_WATCH_SECONDS = 1.0

# The demo account (CLINCITE_DEV_LOGIN) has no record to keep a generation in: its generation lives here.
_dev_generation = 0
# Logouts that could not be written to the accounts store (a full disk): in force in this process at once, written
# by `watch_accounts` as soon as the store takes writes again. name -> the generation now in force.
_unsaved_generations: dict[str, int] = {}
LOGOUT_NOT_SAVED = (
    "已退出登录，本机上的登录凭证已失效；但服务器未能把这次退出写入账号文件（可能磁盘已满），"
    "服务器会持续重试。请告知管理员。"
)
NOTICE_COOKIE = "clincite_notice"  # read once by public/custom.js on the login page


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
    unsaved = _unsaved_generations.get(name)
    if generation is not None and unsaved is not None and unsaved > generation:
        return unsaved  # a logout this process could not write yet: the old cookies are dead all the same
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


async def end_sessions(name: str) -> bool:
    """Logout: every cookie and socket of this clinician stops working now (all their devices: one generation).

    Returns whether the end was written to the accounts store. When it cannot be (a full disk, a read-only mount),
    the new generation is in force in this process anyway, and is written as soon as the store takes writes."""
    global _dev_generation
    settings, users = accounts()
    try:
        if await asyncio.to_thread(users.bump_generation, name) is None and name == DEV_USER[0]:
            _dev_generation += 1
        saved = True
    except Exception as exc:
        in_force = current_generation(settings, users, name)
        if in_force is not None:
            _unsaved_generations[name] = next_generation(in_force)
            # The other workers (several workers share the store this could not write) hold it in memory too.
            message = {"name": name, "ended_generation": _unsaved_generations[name]}
            await asyncio.to_thread(bus.publish, settings, bus.ACCOUNTS, message)
        log.error("Logout of %r could not be written (%s: %s); in force in memory", name, type(exc).__name__, exc)
        saved = False
    await disconnect_stale_sockets()
    return saved


async def save_unsaved_logouts() -> None:
    """Write the logouts that could not be written before; each stays in force in memory until it is."""
    users = accounts()[1]
    for name, generation in list(_unsaved_generations.items()):
        try:
            await asyncio.to_thread(users.bump_generation, name, generation)
        except Exception:
            return  # still failing: try again at the next tick
        if _unsaved_generations.get(name) == generation:
            del _unsaved_generations[name]
        log.warning("The logout of %r, kept in memory, is now written to the accounts store", name)


async def disconnect_stale_sockets() -> int:
    """Disconnect every live socket whose login is no longer valid; returns how many."""
    from chainlit.server import sio
    from chainlit.session import ws_sessions_id

    with accounts()[1].records.one_read():
        stale = [s for s in list(ws_sessions_id.values()) if s.user is not None and token_is_stale(s.token or "")]
    for session in stale:
        log.warning("Disconnecting a socket of %r: its login was ended", session.user.identifier)
        await sio.disconnect(session.socket_id)
    return len(stale)


async def watch_accounts(users: UserStore) -> None:
    """Accounts changed by the CLI (another process): end the sockets of removed or reset accounts within a second;
    and write the logouts that could not be written (a full disk) once the store takes writes again."""
    seen = users.version()
    while True:
        await asyncio.sleep(ACCOUNT_WATCH_SECONDS)
        if _unsaved_generations:
            await save_unsaved_logouts()
        stamp = users.version()
        if stamp != seen:
            seen = stamp
            try:
                await disconnect_stale_sockets()
            except Exception:
                log.exception("Could not check the open sessions against the changed accounts")


async def logout_hook(request: Request, response: Response) -> dict:
    """Chainlit's on_logout: Chainlit has already cleared the cookie; this makes the token itself worthless.

    A logout that could not be written still ends the session here and now; the answer says so, and the login
    page the browser goes to next shows it (a one-time notice cookie read by public/custom.js)."""
    claims = token_claims(_request_token(request) or "")
    if not claims or not claims.get("identifier"):
        return {"success": True}
    if await end_sessions(str(claims["identifier"])):
        return {"success": True, "saved": True}
    response.set_cookie(NOTICE_COOKIE, "logout_not_saved", max_age=300, path="/", samesite="strict")
    return {"success": True, "saved": False, "message": LOGOUT_NOT_SAVED}


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
    """Failed logins, counted so that guessing is slowed without locking the clinician out (limits' moving windows:
    a limit lifts by itself as the window moves on; in memory, or in Redis when workers share the installation:
    throttle_storage — every count below is kept there, so N workers do not give an attacker N times the tries).

    - per client address, over all accounts (LOGIN_ADDRESS_LIMIT): a guessing machine is stopped first;
    - per account *and* address (LOGIN_ACCOUNT_LIMIT): five wrong passwords for 张医生 from one address lock that
      address out of that account — not 张医生 herself at her own workstation;
    - per account over all addresses: once LOGIN_ACCOUNT_LIMIT failures came from anywhere (guessing spread over many
      addresses), an attempt on the account from an address it never logged in from must wait a back-off after the
      last failure that doubles with each failure (1, 2, 4 … s, at most LOGIN_BACKOFF_MAX_SECONDS) — a few seconds for
      the clinician, hopeless for a dictionary; addresses the account logged in from (within KNOWN_FOR) are not slowed.
    """

    def __init__(self, settings: Settings):
        self.limiter = MovingWindowRateLimiter(throttle_storage(settings))
        self.address_limit = limits.parse(settings.login_address_limit)
        self.pair_limit = limits.parse(settings.login_account_limit)
        # Counters, never limits (a ceiling nobody reaches): failures per account in the same window, and the
        # addresses each account logged in from.
        window = f"{self.pair_limit.multiples} {self.pair_limit.GRANULARITY.name}"
        self.account_count = limits.parse(f"{COUNTER_CEILING}/{window}")
        self.known = limits.parse(f"{COUNTER_CEILING}/{KNOWN_FOR}")
        self.backoff_max = settings.login_backoff_max_seconds
        self.hashing = asyncio.Semaphore(HASHING_CONCURRENCY)

    def _account_failures(self, account: str) -> int:
        stats = self.limiter.get_window_stats(self.account_count, "account", account)
        return self.account_count.amount - stats.remaining

    def _known(self, account: str, address: str) -> bool:
        return self.limiter.get_window_stats(self.known, "known", account, address).remaining < self.known.amount

    def _delay(self, failures: int) -> int:
        return math.ceil(min(2.0 ** (failures - self.pair_limit.amount), self.backoff_max))

    def backoff(self, account: str, address: str) -> float:
        """Seconds this address must still wait before trying this account (0: now)."""
        failures = self._account_failures(account)
        if failures < self.pair_limit.amount or self._known(account, address):
            return 0.0
        delay = self._delay(failures)
        pace = limits.RateLimitItemPerSecond(1, delay)  # one failure per `delay` seconds, counted at each failure
        if self.limiter.test(pace, "backoff", account, str(delay)):
            return 0.0
        return max(0.0, self.limiter.get_window_stats(pace, "backoff", account, str(delay)).reset_time - time.time())

    def retry_after(self, account: str, address: str) -> int:
        """Seconds until a login for this account from this address may be tried again; 0 = now."""
        wait = self.backoff(account, address)
        for limit, keys in ((self.address_limit, ("address", address)), (self.pair_limit, ("pair", account, address))):
            if not self.limiter.test(limit, *keys):
                reset = self.limiter.get_window_stats(limit, *keys).reset_time
                wait = max(wait, reset - time.time(), 1)
        return math.ceil(wait)

    def failed(self, account: str, address: str) -> None:
        self.limiter.hit(self.account_count, "account", account)
        for kind, limit, keys in (
            ("address", self.address_limit, ("address", address)),
            ("account", self.pair_limit, ("pair", account, address)),
        ):
            self.limiter.hit(limit, *keys)
            if not self.limiter.test(limit, *keys):  # this failure used up the window: the lock-out starts now
                log.warning(
                    "Login locked out for %s %r after %s failed attempts (limit %s)",
                    kind,
                    (account[:80] + " from " + address) if kind == "account" else address,
                    limit.amount,
                    limit,
                )
        failures = self._account_failures(account)
        if failures >= self.pair_limit.amount:  # the back-off starts (or doubles) from this failure
            delay = self._delay(failures)
            self.limiter.hit(limits.RateLimitItemPerSecond(1, delay), "backoff", account, str(delay))
            log.warning(
                "Login back-off for account %r from new addresses: %d failed attempts from anywhere in the window",
                account[:80],
                failures,
            )

    def succeeded(self, account: str, address: str) -> None:
        # Only this pair's count: clearing the address would let one valid account reset a guessing address, and
        # clearing the account's count would let the clinician's own login reset a guesser's back-off.
        self.limiter.clear(self.pair_limit, "pair", account, address)
        self.limiter.hit(self.known, "known", account, address)


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
    worker's stale sockets now (the account store publishes every change: UserStore.for_settings). A logout another
    worker could not write (`ended_generation`) is in force here too, in memory, until the store has it."""
    ended = message.get("ended_generation")
    if isinstance(ended, int) and message.get("name"):
        name = str(message["name"])
        _unsaved_generations[name] = max(ended, _unsaved_generations.get(name, 0))
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
            message = (
                BACKOFF_MESSAGE.format(seconds=wait)
                if wait <= 60
                else LOCKED_MESSAGE.format(minutes=math.ceil(wait / 60))
            )
            return JSONResponse(
                {"detail": LOCKED_KEY, "message": message}, status_code=429, headers={"Retry-After": str(wait)}
            )
        try:
            result = await chainlit_login(request, response, form_data)
        except HTTPException as exc:
            if exc.status_code == 401:
                throttle.failed(account, address)
            raise
    throttle.succeeded(account, address)
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
UNSAFE_METHODS = {"POST", "PUT", "PATCH", "DELETE"}
SAME_SITE_FETCH = {"same-origin", "none"}  # Sec-Fetch-Site values of the app's own page (or a typed URL)
CROSS_SITE_REFUSED = "跨站请求已拒绝：请在 ClinCite 自己的页面上操作 (cross-site request refused)"
BODY_TOO_LARGE = "请求内容过大 (request body too large)"
REQUEST_BODY_MAX = 1024 * 1024  # bytes: the app's requests are small JSON (a rating, a thread page)…
ADMIN_PREFIX = "/admin/"  # …but for the admins' library uploads (body_limit)


class SessionGuard:
    """ASGI middleware: stale tokens are removed from the request; requests that change something (login, logout,
    ratings …) and sockets are refused from other origins (CSRF); request bodies are bounded; every response gets
    the security headers (web/headers.py), and cookies set over HTTPS are Secure."""

    def __init__(self, app, socket_path: str = "/ws/socket.io"):
        self.app = app
        self.socket_path = socket_path

    async def __call__(self, scope: dict, receive, send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        if scope["path"].startswith(self.socket_path) and not origin_allowed(scope):
            log.warning("Socket refused from origin %r", _header(scope, b"origin"))
            return await _refuse(scope, send)
        if scope["type"] == "http" and scope["method"] in UNSAFE_METHODS:
            if not same_site_request(scope):
                log.warning(
                    "Cross-site %s %s refused (Origin %r, Sec-Fetch-Site %r)",
                    scope["method"],
                    scope["path"],
                    _header(scope, b"origin"),
                    _header(scope, b"sec-fetch-site"),
                )
                return await _refuse(scope, send, 403, CROSS_SITE_REFUSED)
            limit = body_limit(scope["path"])
            length = _header(scope, b"content-length")
            if length is not None and (not length.isdigit() or int(length) > limit):
                return await _refuse(scope, send, 413, BODY_TOO_LARGE)
            receive = _bounded(receive, limit)
        headers, stale = _without_stale_tokens(scope["headers"])
        if stale:
            scope = {**scope, "headers": headers}
        if scope["type"] == "http":
            send = with_security_headers(_with_cookie_flags(send, secure=secure_cookies(scope), expire_stale=stale))
        await self.app(scope, receive, send)


def body_limit(path: str) -> int:
    """The largest request body accepted: small JSON everywhere, except the admins' uploads (a library page upload of
    UPLOAD_MAX_FILES files of INGEST_MAX_FILE_MB each; the admin router checks the role before reading it)."""
    if path.startswith(ADMIN_PREFIX):
        settings = accounts()[0]
        return int(settings.upload_max_files * settings.ingest_max_file_mb * 1024 * 1024) + REQUEST_BODY_MAX
    return REQUEST_BODY_MAX


def same_site_request(scope: dict) -> bool:
    """Whether a state-changing request comes from the app's own page (not a form or script on another site, port
    or subdomain: login CSRF, a logout forced from elsewhere).

    The browser's Sec-Fetch-Site says it exactly and cannot be set by a page; without it (an older browser) the
    Origin must be the app's own or one listed in allow_origins. A request with neither header is no browser's
    cross-site request (curl, the tests' HTTP client): there is no victim's cookie to ride on."""
    fetch_site = _header(scope, b"sec-fetch-site")
    origin = _header(scope, b"origin")
    if fetch_site in SAME_SITE_FETCH:
        return True
    if origin is not None and (origin == _public_origin(scope) or origin in _listed_origins()):
        return True
    return fetch_site is None and origin is None


def _listed_origins() -> list[str]:
    return [o for o in (config.project.allow_origins or []) if o != "*"]  # "*" never vouches for a login


def _bounded(receive, limit: int):
    """A request body (also one sent chunked, without Content-Length) ends the request once it exceeds `limit`."""
    received = 0

    async def wrapped():
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                log.warning("A request body over %d bytes was cut off", limit)
                return {"type": "http.disconnect"}
        return message

    return wrapped


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


async def _refuse(scope: dict, send, status: int = 403, detail: str = "origin not allowed") -> None:
    if scope["type"] == "websocket":
        await send({"type": "websocket.close", "code": 1008})  # before accept: the handshake gets 403
        return
    body = json.dumps({"detail": detail}, ensure_ascii=False).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
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
