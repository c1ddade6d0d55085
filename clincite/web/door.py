"""What comes in over the socket, checked at the door before Chainlit stores or runs any of it.

    install(sio, settings, data_layer)      # at import, in app.py: our handlers take Chainlit's socket events

A question arrives as a Socket.IO `client_message` whose payload the browser (or anyone) writes. Chainlit 2.12 takes
it as it comes: the message id, its parent, its type and author, and the text are stored as sent. At the door:

- the text is cleaned (`core.untrusted.clean_input`: NUL, control and bidi characters, lone surrogates), and a
  question that is empty, or longer than QUESTION_MAX_CHARS, is answered with a Chinese message and never stored;
- the message is a user message of this clinician, at the root of their thread: its type, author and parent are the
  server's, whatever the payload says;
- its id must be a fresh UUID4: an id the app already has (a step of someone else's thread, handed out anywhere) is
  refused — and the data layer would not move such a row across threads anyway (`upsert_steps_sql`);
- `edit_message` is refused (the config turns editing off, but Chainlit's handler does not look at the config:
  editing would delete the answers after the message and rerun it, rewriting the record of what was answered).

The Socket.IO frame limit is raised to SOCKET_MAX_MESSAGE_MB, so that a question far over the length limit still
arrives and gets its message instead of a dropped connection (the browser's own check, public/custom.js, stops such
a question before it is sent at all).
"""

from __future__ import annotations

import logging
import uuid

from clincite.core.settings import Settings
from clincite.core.untrusted import clean_input, has_content
from clincite.web import state
from clincite.web.render import NOTICE_AUTHOR

log = logging.getLogger("clincite.door")

MB = 1024 * 1024
TOO_LONG = "问题太长（{length} 字），请控制在 {limit} 字以内：只保留要问的内容，病历等长文请摘取要点后再问。"
EMPTY = "没有收到问题内容（为空或只有符号），请输入要查询的问题。"
ID_TAKEN = "这条消息的编号已被使用，未处理。请刷新页面后重新提问。"
EDIT_OFF = "本系统不支持修改已发送的问题（为保留问答记录）。请直接发送新的问题。"


class Door:
    """The app's handlers for the socket events a client sends (on the app context of `clincite.web.state`)."""

    async def client_message(self, sid: str, payload) -> None:
        from chainlit.session import WebsocketSession
        from chainlit.socket import message as chainlit_client_message

        session = WebsocketSession.get(sid)
        if session is None:
            return
        incoming = payload.get("message") if isinstance(payload, dict) else None
        if not isinstance(incoming, dict) or not isinstance(incoming.get("output"), str):
            return await self.refuse(session, EMPTY)
        text = clean_input(incoming["output"])
        if not has_content(text):
            return await self.refuse(session, EMPTY)
        limit = state.current().settings.question_max_chars
        if len(text) > limit:
            log.warning("A question of %d characters refused (limit %d)", len(text), limit)
            return await self.refuse(session, TOO_LONG.format(length=len(text), limit=limit))
        message_id = str(incoming.get("id") or "")
        if not _is_uuid4(message_id) or await self._known(message_id):
            log.warning("A client message with a reused or malformed id was refused")
            return await self.refuse(session, ID_TAKEN)
        user = session.user
        clean = {
            "id": message_id,
            "threadId": session.thread_id,
            "type": "user_message",
            "name": user.identifier if user else "User",
            "output": text,
            "createdAt": incoming.get("createdAt") if isinstance(incoming.get("createdAt"), str) else "",
        }
        await chainlit_client_message(sid, {"message": clean, "fileReferences": []})

    async def edit_message(self, sid: str, payload) -> None:
        from chainlit.session import WebsocketSession

        session = WebsocketSession.get(sid)
        if session is not None:
            log.warning("edit_message refused (editing is off)")
            await self.refuse(session, EDIT_OFF)

    async def _known(self, step_id: str) -> bool:
        layer = state.current().data_layer
        if layer.outage:  # the database is down: the data layer's own guard keeps rows in their thread
            return False
        try:
            return await layer.step_exists(step_id)
        except Exception:  # the database is down: the data layer's own guard still keeps rows in their thread
            log.warning("Could not check a message id against the database; the data layer's guard applies")
            return False

    async def refuse(self, session, text: str) -> None:
        """A Chinese message in the chat instead of the question (nothing of the question is stored)."""
        from chainlit.context import init_ws_context
        from chainlit.message import ErrorMessage

        init_ws_context(session)
        await ErrorMessage(content=text, author=NOTICE_AUTHOR).send()


def _is_uuid4(value: str) -> bool:
    try:
        return uuid.UUID(value).version == 4
    except ValueError:
        return False


def install(sio, settings: Settings) -> Door:
    """Our handlers take `client_message` and `edit_message` (python-socketio keeps one handler per event: the
    later registration wins); the frame limit fits a question far over the length limit."""
    door = Door()
    sio.on("client_message", door.client_message)
    sio.on("edit_message", door.edit_message)
    sio.eio.max_http_buffer_size = int(settings.socket_max_message_mb * MB)
    return door
