"""What every worker must learn at once, over Redis publish/subscribe (REDIS_URL); nothing without Redis.

    publish(settings, ACCOUNTS, {"name": "张医生"})     # a logout, a removed account, a reset password
    publish(settings, KB, {"version": 12})              # ingest published a new KB version
    await listen(settings, {ACCOUNTS: on_account, KB: on_kb})   # a worker's background task, for its lifetime

Messages are hints, never the truth: the receiver re-reads the shared store (PostgreSQL) it concerns, and every
worker also polls that store (KB_RELOAD_INTERVAL, the account watch), so a message lost while Redis was down only
delays what a poll then finds. redis-py (MIT) does the protocol; a publish that fails is logged, never raised.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable

from clincite.core.settings import Settings

log = logging.getLogger("clincite.bus")

ACCOUNTS = "clincite:accounts"
KB = "clincite:kb"
RECONNECT_SECONDS = 2.0
SOCKET_TIMEOUT = 2.0  # seconds a Redis call may take before it counts as failed

Handler = Callable[[dict], Awaitable[None]]


def publish(settings: Settings, channel: str, message: dict) -> int:
    """Tell every worker (returns how many listened; 0 without Redis or when Redis is down)."""
    if not settings.redis_url:
        return 0
    import redis

    try:
        client = redis.Redis.from_url(
            settings.redis_url, socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT
        )
        try:
            return int(client.publish(channel, json.dumps(message, ensure_ascii=False)))
        finally:
            client.close()
    except Exception as exc:  # the workers' polls will find the change instead, a few seconds later
        log.warning("Could not publish to %s (%s: %s)", channel, type(exc).__name__, exc)
        return 0


async def listen(settings: Settings, handlers: dict[str, Handler]) -> None:
    """Run the handlers for every message on their channels until cancelled; reconnects when Redis goes away."""
    if not settings.redis_url:
        return
    import redis.asyncio as aioredis

    while True:
        client = aioredis.Redis.from_url(settings.redis_url, socket_connect_timeout=SOCKET_TIMEOUT)
        try:
            async with client.pubsub(ignore_subscribe_messages=True) as pubsub:
                await pubsub.subscribe(*handlers)
                log.info("Listening on %s", ", ".join(handlers))
                async for message in pubsub.listen():
                    channel = (
                        message["channel"].decode() if isinstance(message["channel"], bytes) else message["channel"]
                    )
                    try:
                        await handlers[channel](json.loads(message["data"]))
                    except Exception:
                        log.exception("Handling a message on %s failed", channel)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning(
                "Redis subscription lost (%s: %s); retrying in %.0f s", type(exc).__name__, exc, RECONNECT_SECONDS
            )
            await asyncio.sleep(RECONNECT_SECONDS)
        finally:
            await client.aclose()
