"""The users page: add an account, reset a password, change a role, remove an account.

    GET  /admin/users
    POST /admin/users/add        name, display_name, password, password2, role
    POST /admin/users/password   name, password, password2
    POST /admin/users/role       name, role
    POST /admin/users/remove     name

Effects on sessions are the store's (clincite/users/store.py): a reset, a role change or a removal ends every
session of that account at once (its open sockets are disconnected here and now). The last admin cannot be removed
or demoted, and nobody removes their own account from here. Password hashing (bcrypt) runs off the event loop.
"""

from __future__ import annotations

import asyncio
from urllib.parse import quote

from fastapi import Request
from fastapi.responses import RedirectResponse, Response

from clincite.report.inert import html_text
from clincite.users.store import ADMIN, DEV_USER, MIN_PASSWORD_CHARS, ROLE_LABELS, ROLES, Account, UserStore
from clincite.web import state
from clincite.web.admin import changes
from clincite.web.admin.guard import Viewer
from clincite.web.admin.layout import csrf_field, notice, page
from clincite.web.auth import disconnect_stale_sockets, off_the_loop

DONE = {
    "added": "已添加账号 {name}。",
    "password": "已重置 {name} 的密码；其所有登录已失效。",
    "role": "已更改 {name} 的角色；其所有登录已失效，重新登录后生效。",
    "removed": "已删除账号 {name}；其所有登录已失效。",
}


def store() -> UserStore:
    return state.current().users


async def users_page(request: Request, viewer: Viewer, problem: str = "", status_code: int = 200) -> Response:
    accounts = await asyncio.to_thread(store().accounts)
    done = request.query_params.get("done", "")
    name = request.query_params.get("name", "")
    messages = notice(DONE[done].format(name=name)) if done in DONE else ""
    if problem:
        messages += notice(problem, "warn")
    if not accounts:
        messages += notice(
            "还没有任何账号，当前是演示账号 demo。添加的第一个账号将自动成为管理员，之后演示账号停用，"
            "请用新账号重新登录。",
            "warn",
        )
    rows = "".join(account_row(a, viewer) for a in accounts)
    table = (
        '<table class="list users"><thead><tr><th>用户名</th><th>显示名</th><th>角色</th><th>更改角色</th>'
        f"<th>重置密码</th><th>删除</th></tr></thead><tbody>{rows}</tbody></table>"
        if accounts
        else '<p class="empty">暂无账号。</p>'
    )
    log = await changes.recent(state.current().data_layer, changes.USER_ACTIONS, limit=30)
    options = "".join(f'<option value="{r}">{ROLE_LABELS[r]}</option>' for r in ROLES)
    body = f"""{messages}
<section class="panel"><h2>账号（{len(accounts)}）</h2>{table}</section>
<section class="panel"><h2>添加账号</h2>
<form class="grid" method="post" action="/admin/users/add">{csrf_field(viewer)}
  <label>用户名<input name="name" required maxlength="64" autocomplete="off"></label>
  <label>显示名<input name="display_name" maxlength="64" placeholder="可选，如：张医生"></label>
  <label>密码<input name="password" type="password" required minlength="{MIN_PASSWORD_CHARS}"
    autocomplete="new-password"></label>
  <label>再次输入密码<input name="password2" type="password" required minlength="{MIN_PASSWORD_CHARS}"
    autocomplete="new-password"></label>
  <label>角色<select name="role">{options}</select></label>
  <button type="submit">添加</button>
</form>
<p class="hint">临床医生只能提问并查看自己的对话；管理员还可管理知识库、账号和审阅台。
密码至少 {MIN_PASSWORD_CHARS} 个字符。</p></section>
<section class="panel"><h2>变更记录</h2>{changes.table(log)}</section>"""
    return page("用户", body, viewer, active="users", status_code=status_code)


def account_row(account: Account, viewer: Viewer) -> str:
    name = html_text(account.name)
    other = ROLES[1] if account.role == ROLES[0] else ROLES[0]
    me = account.name == viewer.identifier
    hidden = f'{csrf_field(viewer)}<input type="hidden" name="name" value="{name}">'
    role_form = (
        f'<form class="inline" method="post" action="/admin/users/role">{hidden}'
        f'<input type="hidden" name="role" value="{other}">'
        f'<button type="submit" class="secondary">改为{ROLE_LABELS[other]}</button></form>'
    )
    password_form = (
        f'<form class="inline" method="post" action="/admin/users/password">{hidden}'
        f'<input name="password" type="password" required minlength="{MIN_PASSWORD_CHARS}" placeholder="新密码" '
        f'autocomplete="new-password" aria-label="{name} 的新密码">'
        f'<input name="password2" type="password" required minlength="{MIN_PASSWORD_CHARS}" placeholder="再次输入" '
        f'autocomplete="new-password" aria-label="再次输入 {name} 的新密码">'
        f'<button type="submit" class="secondary">重置</button></form>'
    )
    remove_form = (
        '<span class="hint">（当前登录）</span>'
        if me
        else f'<form class="inline" method="post" action="/admin/users/remove" '
        f'data-confirm="删除账号 {name}？其所有登录立即失效，对话记录保留。">{hidden}'
        f'<button type="submit" class="danger">删除</button></form>'
    )
    return (
        f"<tr><td data-label=用户名>{name}{'（我）' if me else ''}</td>"
        f"<td data-label=显示名>{html_text(account.display_name)}</td>"
        f'<td data-label=角色><span class="role {account.role}">{ROLE_LABELS[account.role]}</span></td>'
        f"<td data-label=更改角色>{role_form}</td><td data-label=重置密码>{password_form}</td>"
        f"<td data-label=删除>{remove_form}</td></tr>"
    )


def _done(kind: str, name: str) -> Response:
    return RedirectResponse(f"/admin/users?done={kind}&name={quote(name)}", status_code=303)


async def _fields(request: Request) -> dict[str, str]:
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


def _last_admin(accounts: list[Account], name: str) -> bool:
    admins = [a.name for a in accounts if a.role == ADMIN]
    return admins == [name]


async def add_user(request: Request, viewer: Viewer) -> Response:
    fields = await _fields(request)
    name = fields.get("name", "").strip()
    role = fields.get("role") if fields.get("role") in ROLES else None
    if fields.get("password", "") != fields.get("password2", ""):
        return await users_page(request, viewer, "两次输入的密码不一致。", 400)
    if name == DEV_USER[0]:
        return await users_page(request, viewer, f"“{DEV_USER[0]}”是演示账号的名字，请换一个用户名。", 400)
    if await asyncio.to_thread(store().account, name) is not None:
        return await users_page(request, viewer, f"已有账号 {name}；要改密码请在列表中重置。", 409)
    try:
        account = await off_the_loop(
            store().add, name, fields.get("password", ""), fields.get("display_name", "").strip() or None, role
        )
    except ValueError as exc:
        return await users_page(request, viewer, str(exc), 400)
    await changes.record(state.current().data_layer, viewer.identifier, "user_add", name, ROLE_LABELS[account.role])
    await disconnect_stale_sockets()  # the demo account ends when the first real one exists
    return _done("added", name)


async def reset_password(request: Request, viewer: Viewer) -> Response:
    fields = await _fields(request)
    name = fields.get("name", "")
    if await asyncio.to_thread(store().account, name) is None:
        return await users_page(request, viewer, f"没有账号 {name}。", 404)
    if fields.get("password", "") != fields.get("password2", ""):
        return await users_page(request, viewer, "两次输入的密码不一致。", 400)
    try:
        await off_the_loop(store().add, name, fields.get("password", ""), None, None)
    except ValueError as exc:
        return await users_page(request, viewer, str(exc), 400)
    await changes.record(state.current().data_layer, viewer.identifier, "password_reset", name, "所有登录已失效")
    await disconnect_stale_sockets()
    return _done("password", name)


async def change_role(request: Request, viewer: Viewer) -> Response:
    fields = await _fields(request)
    name, role = fields.get("name", ""), fields.get("role", "")
    if role not in ROLES:
        return await users_page(request, viewer, "未知的角色。", 400)
    accounts = await asyncio.to_thread(store().accounts)
    if role != ADMIN and _last_admin(accounts, name):
        return await users_page(request, viewer, "至少要保留一位管理员。", 409)
    changed = await asyncio.to_thread(store().set_role, name, role)
    if changed is None:
        return await users_page(request, viewer, f"没有账号 {name}。", 404)
    await changes.record(state.current().data_layer, viewer.identifier, "role_change", name, ROLE_LABELS[role])
    await disconnect_stale_sockets()
    return _done("role", name)


async def remove_user(request: Request, viewer: Viewer) -> Response:
    fields = await _fields(request)
    name = fields.get("name", "")
    if name == viewer.identifier:
        return await users_page(request, viewer, "不能在这里删除自己的账号。", 409)
    accounts = await asyncio.to_thread(store().accounts)
    if _last_admin(accounts, name):
        return await users_page(request, viewer, "至少要保留一位管理员。", 409)
    if not await asyncio.to_thread(store().remove, name):
        return await users_page(request, viewer, f"没有账号 {name}。", 404)
    await changes.record(state.current().data_layer, viewer.identifier, "user_remove", name, "所有登录已失效")
    await disconnect_stale_sockets()
    return _done("removed", name)
