"""Security headers on every response of the app (installed in the request guard, web/auth.py).

- `X-Content-Type-Options: nosniff` everywhere; `X-Frame-Options: DENY` and CSP `frame-ancestors 'none'`: no other
  site can frame the app (clickjacking the 👍/👎 or the logout).
- Chainlit's page (the single-page app) gets a Content-Security-Policy that lets the UI work and nothing else:
  scripts only from the app itself plus its own two inline scripts (allowed by their sha256, computed from the page
  as served, so a theme change keeps working), styles from the app (inline styles are how React and Chainlit style
  things), images, fonts, media and connections (the Socket.IO websocket included) only to the app itself, `data:`
  and `blob:`. So even a Markdown image that got past the inert renderer could not be fetched from another host.
- A response that already has a CSP (the passage page, an original in a sandbox) keeps its own.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import re
from typing import Any

_INLINE_SCRIPT = re.compile(rb"<script(?![^>]*\bsrc=)[^>]*>(.*?)</script>", re.S | re.I)
BASE_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
]
FRAME_ONLY_CSP = b"frame-ancestors 'none'"
APP_CSP = (
    "default-src 'self'; script-src 'self' {scripts}; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; media-src 'self' data: blob:; "
    "worker-src 'self' blob:; frame-src 'self'; object-src 'none'; base-uri 'self'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_policies: dict[bytes, bytes] = {}  # page digest -> its policy (the page changes only with the theme or config)


def page_policy(html: bytes) -> bytes:
    """The CSP of one HTML page: its inline scripts allowed by hash, everything else same-origin only."""
    key = hashlib.sha256(html).digest()
    if key not in _policies:
        hashes = sorted(
            {
                "'sha256-" + base64.b64encode(hashlib.sha256(body).digest()).decode() + "'"
                for body in _INLINE_SCRIPT.findall(html)
            }
        )
        _policies[key] = APP_CSP.format(scripts=" ".join(hashes)).encode()
    return _policies[key]


def _header(headers: list, name: bytes) -> bytes | None:
    return next((value for key, value in headers if key.lower() == name), None)


def with_security_headers(send):
    """Wrap an ASGI `send`: base headers on every response; an HTML page without a policy of its own is held until
    its body is complete (a few KB) and gets its CSP."""
    held: dict[str, Any] = {}

    async def wrapped(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() not in dict(BASE_HEADERS)]
            headers += BASE_HEADERS
            has_policy = _header(headers, b"content-security-policy") is not None
            html = (_header(headers, b"content-type") or b"").startswith(b"text/html")
            if html and not has_policy:
                held["start"] = {**message, "headers": headers}
                held["body"] = []
                return
            if not has_policy:
                headers.append((b"content-security-policy", FRAME_ONLY_CSP))
            await send({**message, "headers": headers})
            return
        if message["type"] == "http.response.body" and "start" in held:
            held["body"].append(message.get("body", b""))
            if message.get("more_body"):
                return
            body = b"".join(held["body"])
            start = held.pop("start")
            page = gzip.decompress(body) if _header(start["headers"], b"content-encoding") == b"gzip" else body
            start["headers"].append((b"content-security-policy", page_policy(page)))
            await send(start)
            await send({"type": "http.response.body", "body": body})
            return
        await send(message)

    return wrapped
