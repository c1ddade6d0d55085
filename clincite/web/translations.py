"""ClinCite's wording over Chainlit's zh-CN translation: the login asks for a user name, and the line under the
composer says what the answers really are (no "大语言模型可能会犯错" when no language model is used).

Chainlit's own English that no translation key reaches is handled where it is made: the server's "Task manually
stopped." by our `stop` socket handler (`install_stop_message`), the front end's hard-coded toasts ("Couldn't resume
chat", …) by public/custom.js.

Chainlit reads `APP_ROOT/.chainlit/translations/<language>.json` on every request and only creates it when it is
missing (git-ignored, generated). We regenerate zh-CN.json at start-up from the installed Chainlit's own zh-CN
translation plus the small overlay below, so an upgrade of Chainlit brings its new keys and ours stay on top.
"""

from __future__ import annotations

import copy
import json
import logging
from pathlib import Path

log = logging.getLogger("clincite.app")

LANGUAGE = "zh-CN"
OVERLAY = {
    "auth": {
        "login": {
            "title": "登录 ClinCite 临床循证问答",
            "form": {"email": {"label": "用户名", "required": "请输入用户名", "placeholder": "用户名"}},
            # Chainlit's /login answers "credentialssignin", its translations only know "credentialsSignin".
            "errors": {"credentialssignin": "用户名或密码不正确。", "credentialsSignin": "用户名或密码不正确。"},
        }
    },
}
STOPPED = "已停止生成。"
WATERMARK_LLM = "回答由大语言模型依据本机构知识库生成，可能有误；请点击【n】核对原文后再用于临床决策。"
WATERMARK_OFFLINE = "离线演示模式：回答由规则从知识库原文摘录拼接（未使用大语言模型），请点击【n】核对原文。"


def merged(base: dict, overlay: dict) -> dict:
    result = copy.deepcopy(base)
    for key, value in overlay.items():
        result[key] = merged(result.get(key) or {}, value) if isinstance(value, dict) else value
    return result


def clincite_translation(offline: bool) -> dict:
    import chainlit.config as chainlit_config

    base = json.loads((Path(chainlit_config.TRANSLATIONS_DIR) / f"{LANGUAGE}.json").read_text(encoding="utf-8"))
    return merged(base, {**OVERLAY, "chat": {"watermark": WATERMARK_OFFLINE if offline else WATERMARK_LLM}})


def write_translations(offline: bool) -> Path | None:
    """Regenerate zh-CN.json; a failure is logged and Chainlit's own wording stays (the app still starts)."""
    try:
        return _write(offline)
    except (OSError, ValueError, KeyError) as exc:
        log.warning(
            "Could not write the zh-CN translation (%s: %s); Chainlit's default wording is used",
            type(exc).__name__,
            exc,
        )
        return None


def _write(offline: bool) -> Path:
    import chainlit.config as chainlit_config

    target = Path(chainlit_config.config_translation_dir) / f"{LANGUAGE}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    translation = clincite_translation(offline)
    try:  # login error texts other parts of the app merged into the file (auth.add_login_messages) are kept
        errors = json.loads(target.read_text(encoding="utf-8"))["auth"]["login"]["errors"]
        translation["auth"]["login"]["errors"] = {**translation["auth"]["login"].get("errors", {}), **errors}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    target.write_text(json.dumps(translation, ensure_ascii=False, indent=2), encoding="utf-8")
    return target


def install_stop_message() -> None:
    """Chainlit's `stop` socket event, with its notice in Chinese ("Task manually stopped." is hard-coded there)."""
    from chainlit.config import config
    from chainlit.context import init_ws_context
    from chainlit.message import Message
    from chainlit.server import sio
    from chainlit.session import WebsocketSession

    from clincite.web.render import NOTICE_AUTHOR

    async def stop(sid):
        if session := WebsocketSession.get(sid):
            init_ws_context(session)
            await Message(content=STOPPED, author=NOTICE_AUTHOR).send()
            if session.current_task:
                session.current_task.cancel()
            if config.code.on_stop:
                await config.code.on_stop()

    sio.on("stop", stop)  # replaces Chainlit's handler of the same event
