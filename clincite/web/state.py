"""The web app's context: its settings, query service, data layer and accounts, built once per process.

`app.py` never builds anything at import. `current()` builds the context from `.env` and the environment on first
use (Chainlit's start-up hook); a test calls `configure(settings)` first to run the app on its own settings.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field

import chainlit as cl
from chainlit.types import ThreadDict

from clincite.core.settings import Settings, load_settings
from clincite.core.shapes import ChatTurn, Coverage, Degradation, QueryResult
from clincite.core.untrusted import clean_input
from clincite.question.service import TwoStageQueryService
from clincite.users.store import UserStore, check_login
from clincite.web.auth import bind as bind_accounts
from clincite.web.auth import current_generation, off_the_loop
from clincite.web.datalayer import ClinCiteDataLayer, Saved
from clincite.web.fairness import ClinicianQueues
from clincite.web.render import ANSWER_AUTHOR

log = logging.getLogger("clincite.app")
QUESTION_FAILED = "处理这个问题时出错了，未能生成回答。"


@dataclass
class AppContext:
    settings: Settings
    service: TwoStageQueryService
    users: UserStore
    data_layer: ClinCiteDataLayer
    queues: ClinicianQueues
    background: set[asyncio.Task] = field(default_factory=set)

    @classmethod
    def build(cls, settings: Settings) -> AppContext:
        return cls(
            settings=settings,
            service=TwoStageQueryService(settings),
            users=UserStore.for_settings(settings),
            data_layer=ClinCiteDataLayer(settings),
            queues=ClinicianQueues(settings.questions_in_flight_per_clinician),
        )

    async def login(self, username: str, password: str) -> cl.User | None:
        username = clean_input(username).strip()  # as the account was stored (no control or bidi characters)
        # bcrypt costs ~0.25 s of CPU: off the event loop, so a login never stalls the other clinicians.
        account = await off_the_loop(check_login, self.settings, self.users, username, password)
        if account is None:
            return None
        # The cookie remembers the account's session generation: logout, a role change or removal makes it
        # worthless (web/auth.py), so the role it carries is the account's role for as long as it is accepted.
        generation = current_generation(self.settings, self.users, username) or 0
        return cl.User(
            identifier=username,
            display_name=account.display_name,
            metadata={"role": account.role, "generation": generation},
        )

    def history_of(self, thread: ThreadDict) -> list[ChatTurn]:
        history = []
        for step in thread.get("steps", []):
            if step.get("type") == "user_message":
                history.append(ChatTurn(role="user", content=step.get("output") or ""))
            elif step.get("type") == "assistant_message" and step.get("name") == ANSWER_AUTHOR:
                history.append(ChatTurn(role="assistant", content=step.get("output") or ""))
        return history[-2 * self.settings.history_turns :]

    async def record(self, result: QueryResult, run_step_id: str | None, thread_id: str | None, user) -> Saved:
        """The answer's record (and what became of it: saved, kept for replay, or not even that)."""
        if run_step_id is None:
            return Saved.SAVED
        try:
            saved = await self.data_layer.record_answer(
                result, run_step_id, thread_id, getattr(user, "identifier", None)
            )
        except Exception as exc:
            log.error("Answer record not saved (%s); metrics will miss this answer", type(exc).__name__)
            return Saved.UNSAVED
        # The question and answer themselves are step writes, group-committed a moment later: an outage the
        # record met holds them too.
        return Saved.KEPT if saved == Saved.SAVED and self.data_layer.outage else saved

    async def record_failure(self, question: str, error: BaseException, run_step_id, thread_id, user) -> Saved:
        """A question that failed outright still leaves its record, counted as `failed` on /metrics."""
        failure = Degradation(component="failed", message=QUESTION_FAILED, error=f"{type(error).__name__}: {error}")
        result = QueryResult(
            question=question,
            mode=self.service.mode,
            sub_queries=[],
            analyses=[],
            sufficiency=None,
            stage2_queries=[],
            answer="",
            citations=[],
            timings={},
            usage={},
            degradations=[failure],
            coverage=Coverage(status="no_evidence"),
        )
        return await self.record(result, run_step_id, thread_id, user)


NOT_SAVED_NOTICES = {
    Saved.KEPT: "数据库暂时无法写入：这次问答已暂存在服务器上，数据库恢复后自动保存，稍后可在历史记录中看到。",
    Saved.UNSAVED: "数据库和服务器磁盘暂时都无法写入：这次问答尚未保存（服务器会继续重试）。如需留存，请自行记录；"
    "并请告知管理员。",
}


def saving_notice(saved: Saved) -> str | None:
    """What the clinician is told when an answer did not go into the database (None: it did)."""
    return NOT_SAVED_NOTICES.get(saved)


_current: AppContext | None = None


def configure(settings: Settings) -> AppContext:
    """Build the app context on these settings (tests; or a process that embeds the app)."""
    global _current
    _current = AppContext.build(settings)
    bind_accounts(settings, _current.users)  # login throttling and session checks (web/auth.py) use these
    return _current


def current() -> AppContext:
    """The app context, built from `.env` and the environment on first use."""
    return _current or configure(load_settings())
