"""ClinCite web app (Chainlit): renders the query service's event stream; holds no pipeline logic.

    make run                                    # offline demo on the sample KB: http://localhost:8000
    chainlit run app.py -h --port 8000          # the same, directly

Each stage becomes a collapsible step, the report streams into one message, every 【n】 in it opens the verbatim
source passage in the side panel, 👍/👎 go to the database, and /metrics shows the satisfaction figures.
Everything the app needs (settings, service, data layer) is built in the start-up hook; `clincite.web.state`
holds it, and tests configure it with `state.configure(settings)` before the hook runs.
"""

from __future__ import annotations

import logging

from clincite.core.logs import switch_off_library_telemetry

switch_off_library_telemetry()  # before Chainlit and what it imports (literalai → traceloop-sdk, OpenTelemetry)

import chainlit as cl
from chainlit.server import app as fastapi_app
from chainlit.server import sio
from chainlit.types import ThreadDict
from fastapi import Request, Response

from clincite.core.settings import load_settings
from clincite.core.shapes import ChatTurn
from clincite.core.untrusted import clean_input, has_content
from clincite.web import state
from clincite.web.admin import install as install_admin_area
from clincite.web.auth import install as install_session_guard
from clincite.web.auth import install_shared_store_handler, logout_hook
from clincite.web.door import install as install_door
from clincite.web.fairness import announce_queued
from clincite.web.instance import use_private_app_root
from clincite.web.render import NOTICE_AUTHOR, REANSWER_ACTION, REANSWER_LABEL, ChainlitRenderer, notices_in
from clincite.web.startup import STARTERS, prepare_auth_secret, refuse_to_run_as_root, start_app, stop_app
from clincite.web.timestamps import install as install_step_timestamps

log = logging.getLogger("clincite.app")

# Not as root (unless ALLOW_ROOT=true): every file this process opens would reach the whole machine.
refuse_to_run_as_root()
# Chainlit's session files in a folder of this process's own (DATA_DIR/chainlit/…): another instance stopping cannot
# delete them. Restarts this process once when `chainlit run` was started without one.
use_private_app_root(load_settings())
# Chainlit checks for CHAINLIT_AUTH_SECRET right after importing this file and before any start-up hook runs, so
# this is the one thing done at import: read the installation's secret (creating it, 0600, on the very first run).
prepare_auth_secret()
# Also before the server starts (Starlette freezes its middleware then): every request passes the session guard.
install_session_guard(fastapi_app)
install_shared_store_handler(fastapi_app)  # several workers: a Redis outage answers a login in Chinese, not with a 500
install_admin_area(fastapi_app)  # a refused admin request gets a Chinese page (or JSON), not a stack trace
# Questions are checked at the door before Chainlit stores them (ids, text, length); message editing is refused.
install_door(sio, load_settings())
# Steps and messages get strictly increasing timestamps instead of Chainlit's 1 ms sleep on the event loop.
install_step_timestamps()


@cl.data_layer
def data_layer():
    return state.current().data_layer


@cl.on_app_startup
async def on_startup() -> None:
    await start_app(state.current())


@cl.on_app_shutdown
async def on_shutdown() -> None:
    await stop_app(state.current())


@cl.password_auth_callback
async def login(username: str, password: str) -> cl.User | None:
    return await state.current().login(username, password)


@cl.on_logout
async def on_logout(request: Request, response: Response) -> dict:
    return await logout_hook(
        request, response
    )  # ends the session everywhere: the old cookie and open sockets stop working


@cl.set_starters
async def starters(user=None, language=None) -> list[cl.Starter]:
    return [cl.Starter(label=label, message=message) for label, message in STARTERS]


@cl.on_chat_start
async def on_chat_start() -> None:
    cl.user_session.set("history", [])
    cl.user_session.set("notices_shown", set())  # the mode notice comes with the first answer, once per chat


@cl.on_chat_resume
async def on_chat_resume(thread: ThreadDict) -> None:
    app = state.current()
    cl.user_session.set("history", app.history_of(thread))
    cl.user_session.set("notices_shown", notices_in(thread))


@cl.on_message
async def on_message(message: cl.Message) -> None:
    await answer_in_turn(message.content)


@cl.action_callback(REANSWER_ACTION)
async def on_reanswer(action: cl.Action) -> None:
    """重新回答 under a cached answer: the same question answered anew from the knowledge base, not from the cache."""
    # The payload comes back from the browser: the door's rules apply to it as to a typed question.
    question = clean_input(str((action.payload or {}).get("question", "")))
    if not has_content(question) or len(question) > state.current().settings.question_max_chars:
        log.warning("A re-answer action with an empty or over-long question was refused")
        return
    await action.remove()
    async with cl.Step(name=REANSWER_LABEL, type="run"):
        await answer_in_turn(question, use_cache=False)


async def answer_in_turn(question: str, use_cache: bool = True) -> None:
    """One clinician's questions are answered one after another (their later ones wait, told how many are ahead)."""
    app = state.current()
    user = cl.user_session.get("user")
    notices = []

    async def queued(ahead: int) -> None:  # this clinician's earlier questions still run: say how many are ahead
        notices.append(await announce_queued(ahead))

    async with app.queues.turn(getattr(user, "identifier", "") or cl.context.session.id, on_queued=queued):
        for notice in notices:
            await notice.remove()
        await answer(app, question, use_cache)


async def answer(app: state.AppContext, question: str, use_cache: bool) -> None:
    history: list[ChatTurn] = cl.user_session.get("history") or []
    renderer = ChainlitRenderer(
        run_step_id=cl.context.current_step.id if cl.context.current_step else None,
        chunks=app.service.kb.catalogue.get_chunks,
    )
    try:
        async for event in app.service.run(question, history, use_cache=use_cache):
            await renderer.handle(event)
    except Exception as exc:  # Chainlit would swallow it: the clinician must see that something went wrong
        log.exception("Question failed")
        await renderer.close_open_steps()
        await cl.ErrorMessage(
            content=f"抱歉，处理这个问题时出错了：{type(exc).__name__}。请稍后重试或联系管理员。", author=NOTICE_AUTHOR
        ).send()
        saved = await app.record_failure(
            question, exc, renderer.run_step_id, cl.context.session.thread_id, cl.user_session.get("user")
        )
        await tell_if_not_saved(saved)
        return
    result = renderer.result
    if result is None:
        return
    history.extend([ChatTurn(role="user", content=question), ChatTurn(role="assistant", content=result.answer)])
    cl.user_session.set("history", history[-2 * app.settings.history_turns :])
    saved = await app.record(result, renderer.run_step_id, cl.context.session.thread_id, cl.user_session.get("user"))
    await tell_if_not_saved(saved)


async def tell_if_not_saved(saved) -> None:
    if notice := state.saving_notice(saved):  # a toast: the answer stays the last message (its 👍/👎 buttons)
        await cl.context.emitter.send_toast(notice, "warning")
