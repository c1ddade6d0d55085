"""The change log of the admin pages: every change to the library, the accounts and the review state — who did
what, to which document or account, when, and how it ended — in the app database (`admin_changes`), listed on the
library and users pages."""

from __future__ import annotations

import logging
import uuid

from clincite.report.inert import html_text
from clincite.web.admin.layout import when
from clincite.web.datalayer import ClinCiteDataLayer

log = logging.getLogger("clincite.admin")

ACTIONS = {
    "upload": "上传",
    "replace": "替换",
    "delete": "删除",
    "upload_refused": "上传被拒",
    "user_add": "添加用户",
    "user_remove": "删除用户",
    "password_reset": "重置密码",
    "role_change": "更改角色",
    "feedback_handled": "标记为已处理",
    "feedback_unhandled": "标记为未处理",
}
LIBRARY_ACTIONS = ("upload", "replace", "delete", "upload_refused")
USER_ACTIONS = ("user_add", "user_remove", "password_reset", "role_change")


async def record(layer: ClinCiteDataLayer, actor: str, action: str, target: str, detail: str = "") -> None:
    """Write one change; a database that refuses it is logged (the change itself has happened)."""
    row = {
        "id": str(uuid.uuid4()),
        "createdAt": await layer.get_current_timestamp(),
        "actor": actor,
        "action": action,
        "target": target,
        "detail": detail,
    }
    log.info("Admin change: %s %s %r (%s)", actor, action, target, detail)
    try:
        await layer.execute(
            'INSERT INTO admin_changes (id, "createdAt", actor, action, target, detail) '
            "VALUES (:id, :createdAt, :actor, :action, :target, :detail)",
            row,
        )
    except Exception:
        log.exception("Admin change not recorded: %s", row)


async def recent(layer: ClinCiteDataLayer, actions: tuple[str, ...], limit: int = 50) -> list[dict]:
    marks = ", ".join(f":a{i}" for i in range(len(actions)))
    return await layer.query(
        f'SELECT "createdAt", actor, action, target, detail FROM admin_changes WHERE action IN ({marks}) '
        'ORDER BY "createdAt" DESC LIMIT :limit',
        {**{f"a{i}": action for i, action in enumerate(actions)}, "limit": limit},
    )


def table(rows: list[dict]) -> str:
    if not rows:
        return '<p class="empty">暂无变更记录。</p>'
    body = "".join(
        f"<tr><td data-label=时间>{when(r['createdAt'])}</td><td data-label=操作人>{html_text(r['actor'])}</td>"
        f"<td data-label=操作>{html_text(ACTIONS.get(r['action'], r['action']))}</td>"
        f"<td data-label=对象>{html_text(r['target'])}</td><td data-label=结果>{html_text(r['detail'])}</td></tr>"
        for r in rows
    )
    return (
        '<table class="list changes"><thead><tr><th>时间</th><th>操作人</th><th>操作</th><th>对象</th><th>结果</th>'
        f"</tr></thead><tbody>{body}</tbody></table>"
    )
