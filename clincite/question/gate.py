"""The fast-path gate: does a question ask one thing? Decided from its words alone, in microseconds, before any model
is called, so a simple question pays nothing for the decision.

    choice = choose_path("散瞳验光的意义是什么？", history=[])   # PathChoice(fast=True, …)
    choice = choose_path("低浓度阿托品的效果和副作用？", [])       # fast=False: two aspects, joined by 和

A fast question is answered from the question's own judged evidence (q0, searched and judged from the first
millisecond) as soon as that is judged, while the decomposition still runs; the sufficiency judge still guards it
and a "not sufficient" verdict falls back to the whole pipeline (clincite.question.service). Why a rule and not the
decomposition's first streamed item: the decomposition cannot say "only one sub-query" before its stream has ended,
which is about when today's pipeline has its sub-queries anyway; the rule decides at once. It is conservative —
anything that names two aspects, joins or compares things, asks twice, runs long, or continues the previous turn
goes the full way — because a composite question on the fast path could be answered with a gap the full pipeline
would have filled, and only the sufficiency judge would stand in the way.
"""

from __future__ import annotations

from dataclasses import dataclass

from clincite.core.shapes import ChatTurn
from clincite.offline.questions import Together
from clincite.question.gist import composite_reasons, gist_of, resolved_follow_up

FAST_LABEL = "简单问题：直接检索"
FULL_LABEL = "复合问题：逐项分解后检索"
FALLBACK_LABEL = "直接检索不够：转入完整流程"
FAST_REASON = "只问了一件事：先用原问题检索并判断证据，问题分解同时进行。"


@dataclass(frozen=True)
class PathChoice:
    fast: bool
    reason: str  # Chinese, shown in the step

    @property
    def label(self) -> str:
        return FAST_LABEL if self.fast else FULL_LABEL


def choose_path(question: str, history: list[ChatTurn], together: Together | None = None) -> PathChoice:
    if history and resolved_follow_up(question, history, together) is not None:
        return PathChoice(False, "这是对上一个问题的追问：先结合上文分解问题。")
    gist = gist_of(question)
    if not (gist.entities or gist.terms):
        return PathChoice(False, "问题里没有可以直接检索的主题词。")
    if reasons := composite_reasons(gist):
        return PathChoice(False, "问题" + "，".join(reasons) + "：逐项分解后检索。")
    return PathChoice(True, FAST_REASON)
