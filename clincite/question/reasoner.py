"""The four reasoning steps of a question behind one interface: the LLM agents, or the offline extractive answerer.

    reasoner = build_reasoner(settings)               # LLMReasoner with a key, OfflineReasoner without
    async for draft in reasoner.decompose(question, history, run.add_usage): ...
    output = await reasoner.judge(sub_query, question, history, hits, run.add_usage)

Both take and return typed data (`clincite.core.shapes`): the LLM implementation writes the user messages of
`clincite.llm.prompts` and reads the agents' structured output; the offline one never sees prompt text. The stages
(`clincite.question.stages`, `clincite.question.answering`) only know this interface.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import TYPE_CHECKING, Protocol

from clincite.core.settings import Settings
from clincite.core.shapes import (
    ChatTurn,
    Hit,
    JudgeOutput,
    Mode,
    SubQuery,
    SubQueryAnalysis,
    SubQueryDraft,
    SufficiencyOutput,
)
from clincite.llm.agents import Agents, build_agents, stream_list_items
from clincite.llm.prompts import answer_prompt, decomposition_prompt, judge_prompt, sufficiency_prompt
from clincite.question.gist import question_search_text

if TYPE_CHECKING:
    from clincite.retrieval.search import HybridSearcher

UsageSink = Callable[[str, object], None]  # (agent name, pydantic-ai RunUsage)


class Reasoner(Protocol):
    mode: Mode

    async def open_connection(self) -> None: ...

    def question_search_text(self, question: str, history: list[ChatTurn]) -> str:
        """What the question itself (q0) is searched with from the first millisecond (the fast path answers from it)."""
        ...

    def decompose(
        self, question: str, history: list[ChatTurn], usage: UsageSink, stream: bool = True
    ) -> AsyncIterator[SubQueryDraft]: ...

    async def judge(
        self, sub_query: SubQuery, question: str, history: list[ChatTurn], hits: list[Hit], usage: UsageSink
    ) -> JudgeOutput: ...

    async def sufficiency(
        self, question: str, analyses: list[SubQueryAnalysis], limit: int, usage: UsageSink
    ) -> SufficiencyOutput: ...

    def answer(
        self,
        question: str,
        history: list[ChatTurn],
        analyses: list[SubQueryAnalysis],
        gaps: list[str],
        usage: UsageSink,
    ) -> AbstractAsyncContextManager[AsyncIterator[str]]:
        """`async with reasoner.answer(…) as deltas: async for delta in deltas` — a context, so that a model's
        stream is entered and left in the caller's task, whatever cancels it."""
        ...


class LLMReasoner:
    """The four pydantic-ai agents (`self.agents.<name>`, which tests may `.override(model=…)`)."""

    mode: Mode = "llm"

    def __init__(self, agents: Agents):
        self.agents = agents

    async def open_connection(self) -> None:
        await self.agents.open_connection()

    def question_search_text(self, question: str, history: list[ChatTurn]) -> str:
        return question_search_text(question)

    async def decompose(
        self, question: str, history: list[ChatTurn], usage: UsageSink, stream: bool = True
    ) -> AsyncIterator[SubQueryDraft]:
        agent, prompt = self.agents.decomposition, decomposition_prompt(question, history)
        if stream:  # each sub-query as soon as it is complete: its search and judge start at once
            async for draft in stream_list_items(agent, prompt, "sub_queries", usage):
                yield draft
            return
        result = await agent.run(prompt)
        usage(agent.name, result.usage)
        for draft in result.output.sub_queries:
            yield draft

    async def judge(
        self, sub_query: SubQuery, question: str, history: list[ChatTurn], hits: list[Hit], usage: UsageSink
    ) -> JudgeOutput:
        result = await self.agents.relevance_judge.run(judge_prompt(sub_query, question, hits))
        usage("relevance_judge", result.usage)
        return result.output

    async def sufficiency(
        self, question: str, analyses: list[SubQueryAnalysis], limit: int, usage: UsageSink
    ) -> SufficiencyOutput:
        result = await self.agents.sufficiency_judge.run(sufficiency_prompt(question, analyses, limit))
        usage("sufficiency_judge", result.usage)
        return result.output

    @asynccontextmanager
    async def answer(
        self,
        question: str,
        history: list[ChatTurn],
        analyses: list[SubQueryAnalysis],
        gaps: list[str],
        usage: UsageSink,
    ) -> AsyncIterator[AsyncIterator[str]]:
        agent = self.agents.answer_generation
        async with agent.run_stream(answer_prompt(question, history, analyses, gaps)) as stream:
            deltas = stream.stream_text(delta=True, debounce_by=None)
            try:
                yield deltas
            finally:
                # Closed here, inside the run's context: left to the garbage collector, a cancelled stream's
                # generators log "generator didn't stop after athrow()".
                await deltas.aclose()
            usage("answer_generation", stream.usage)


def build_reasoner(settings: Settings, searcher: HybridSearcher | None = None) -> Reasoner:
    """The LLM agents with a key; without one, the offline answerer, weighing terms by the served KB's BM25 index
    and reading the openings of the sections a passage carries on (both from `searcher`)."""
    if settings.offline:
        from clincite.offline import OfflineReasoner

        if searcher is None:
            return OfflineReasoner(settings.max_sub_queries)
        return OfflineReasoner(
            settings.max_sub_queries,
            stats=searcher.term_stats,
            openings=searcher.section_openings,
            topics=searcher.document_topics,
        )
    return LLMReasoner(build_agents(settings))
