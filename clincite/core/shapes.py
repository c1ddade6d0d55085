"""Data shapes shared by the service, the UI, the CLI, the tests and the benchmarks.

Three groups: what the agents produce (`*Output`, the structured output types the LLMs fill in), what the pipeline
keeps (`SubQuery`, `SubQueryAnalysis`, `SufficiencyVerdict`, `Citation`, `QueryResult`), and the typed events that
`TwoStageQueryService.run()` yields (docs/architecture.md §3) — the one stream that every renderer draws.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field
from pydantic.json_schema import SkipJsonSchema

# --------------------------------------------------------------------------------------------------------------
# What the knowledge base holds and what search returns
# --------------------------------------------------------------------------------------------------------------


class Segment(BaseModel):
    """A run of a passage under one heading path; `heading` marks the heading line itself (offsets in the passage)."""

    start: int
    end: int
    path: list[str]
    heading: bool = False


class Chunk(BaseModel):
    """One retrievable passage of a document, a verbatim slice `text == document_text[start:end]`."""

    id: str
    source: str
    title: str
    heading_path: list[str]
    position: int
    start: int
    end: int
    text: str
    content_hash: str
    pages: list[int] | None = None  # [first, last] page (PDF); None for formats without pages
    segments: list[Segment] = Field(default_factory=list)  # its heading lines and sections, from the loader

    @property
    def index_text(self) -> str:
        """What BM25 and the embedding model see: the passage with its title and headings for context."""
        return " ".join([self.title, *self.heading_path, self.text])


class DocumentRecord(BaseModel):
    source: str
    path: str
    title: str
    file_hash: str
    chunk_count: int
    ingested_at: float
    metadata: dict[str, str] = Field(default_factory=dict)  # front matter / document properties


class Hit(BaseModel):
    """A retrieved chunk with the scores of the retrievers that found it."""

    chunk_id: str
    source: str
    title: str
    heading_path: list[str]
    pages: list[int] | None = None  # [first, last] page (PDF); None for formats without pages
    text: str
    bm25: float | None = None
    semantic: float | None = None
    found_by: list[str]
    score: float = 0.0  # fused (reciprocal-rank) score that orders merged hits
    segments: list[Segment] = Field(default_factory=list)  # heading lines and sections inside the passage


Confidence = Literal["high", "medium", "low"]
Stage = Literal["decomposition", "search", "judgement", "sufficiency", "stage2", "answer"]
Mode = Literal["llm", "offline"]

STAGE_LABELS: dict[str, str] = {
    "decomposition": "问题分解",
    "search": "检索",
    "judgement": "相关性判断",
    "sufficiency": "充分性判断",
    "stage2": "第二阶段检索",
    "answer": "生成回答",
}

# --------------------------------------------------------------------------------------------------------------
# What the agents fill in (kept small: every field costs output tokens, and output tokens cost time)
# --------------------------------------------------------------------------------------------------------------


BRIDGE_SLOT = "[答案]"  # where a dependent sub-query's text takes its parent's answer (its bridge entity)


class SubQueryDraft(BaseModel):
    text: str = Field(description="肯定句形式的检索语句（不是问句），含专业术语及常用同义词")
    focus: str = Field(description="这条子查询覆盖的维度，如 定义、疗效数据、不良反应、禁忌症、随访")
    depends_on: int | None = Field(
        default=None,
        description=f"仅当这条子查询要用到前面某条子查询的答案才能检索时，填那一条的序号（从 1 开始），"
        f"并在 text 中用“{BRIDGE_SLOT}”标出答案的位置；其余情况省略",
    )


class DecompositionOutput(BaseModel):
    sub_queries: list[SubQueryDraft] = Field(description="1–5 条子查询，简单问题 1–2 条")


class ExtractBasis(BaseModel):
    """Why an extract was kept: the title of its evidence item and its 说明 (where it stands and why it answers), and
    the part of it that answers (the TL;DR's lead; "" when the whole extract is that part)."""

    title: str
    explanation: str
    lead: str = ""


class ExtractDraft(BaseModel):
    chunk_id: str = Field(description="片段编号，原样抄写")
    source: str = Field(description="来源文件名，原样抄写")
    text: str = Field(description="从片段中逐字复制的原文，不得改写、增删或概括")
    # Filled in by the offline judge only; hidden from the LLM's output schema (it costs tokens and it is derived).
    basis: SkipJsonSchema[ExtractBasis | None] = None


class JudgeOutput(BaseModel):
    extracts: list[ExtractDraft] = Field(description="与子查询相关的逐字原文摘录；没有相关内容时为空列表")
    sub_answer: str = Field(description="仅依据摘录对子查询的简短回答（1–3 句）")
    confidence: Confidence
    missing: list[str] = Field(default_factory=list, description="子查询中摘录未能覆盖的方面")


class SufficiencyOutput(BaseModel):
    sufficient: bool
    confidence: Confidence
    covered_aspects: list[str] = Field(default_factory=list)
    missing_key_aspects: list[str] = Field(default_factory=list)
    additional_sub_queries: list[SubQueryDraft] = Field(
        default_factory=list, description="仅在不充分时给出 2–3 条（最多 5 条）针对缺失方面的子查询"
    )
    reasoning: str = Field(description="简短的判断理由")


# --------------------------------------------------------------------------------------------------------------
# What the pipeline keeps
# --------------------------------------------------------------------------------------------------------------


class SubQuery(BaseModel):
    id: str  # "q0" is the original question itself, "q1".. stage 1, "s2-1".. stage 2
    text: str
    focus: str = ""
    depends_on: str | None = None  # the id of the sub-query whose judged answer this one needs before its search


class RelevantExtract(BaseModel):
    source: str
    chunk_id: str
    text: str
    # The offline judge says why; the LLM judge's extracts carry none. Not part of the JSON (CONTRACTS: source,
    # chunk_id, text): it only feeds the report written from the same analysis.
    basis: ExtractBasis | None = Field(default=None, exclude=True)


class SubQueryAnalysis(BaseModel):
    sub_query: SubQuery
    sub_answer: str
    extracts: list[RelevantExtract]
    confidence: Confidence
    missing: list[str] = Field(default_factory=list)
    degraded: bool = False  # the judge failed: extracts are the top hits, unjudged


class SufficiencyVerdict(BaseModel):
    sufficient: bool
    confidence: Confidence
    covered_aspects: list[str] = Field(default_factory=list)
    missing_key_aspects: list[str] = Field(default_factory=list)
    additional_sub_queries: list[SubQuery] = Field(default_factory=list)
    reasoning: str = ""
    degraded: bool = False


class ChatTurn(BaseModel):
    role: Literal["user", "assistant"]
    content: str


class Citation(BaseModel):
    number: int  # the 【n】 marker
    title: str = ""
    source: str
    quote: str
    chunk_id: str | None = None  # the chunk the quote was found in
    heading_path: list[str] = Field(default_factory=list)
    pages: list[int] | None = None  # pages of the chunk the quote was found in (PDF)
    verified: bool


class AgentUsage(BaseModel):
    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


class Degradation(BaseModel):
    component: str  # decomposition | judge:q2 | sufficiency | answer | embeddings
    message: str  # Chinese, for clinicians
    error: str = ""  # English, for logs


class Coverage(BaseModel):
    """How far the evidence answers the question: every answer carries it (JSON, event, record, UI, metrics)."""

    status: Literal["answered", "partial", "no_evidence"]
    missing: list[str] = Field(default_factory=list)  # aspects asked that no evidence covers (the 证据缺口)


class QueryResult(BaseModel):
    """The `python query.py "问题" --json` object (docs/architecture.md §4)."""

    question: str
    mode: Mode
    sub_queries: list[SubQuery]
    analyses: list[SubQueryAnalysis]
    sufficiency: SufficiencyVerdict | None
    stage2_queries: list[SubQuery]
    answer: str
    citations: list[Citation]
    timings: dict[str, float]
    usage: dict[str, AgentUsage]
    degradations: list[Degradation] = Field(default_factory=list)
    unverified_citations: int = 0
    search_mode: Literal["hybrid", "bm25"] = "hybrid"
    cached: bool = False
    coverage: Coverage = Field(default_factory=lambda: Coverage(status="answered"))


# --------------------------------------------------------------------------------------------------------------
# Service events (docs/architecture.md §3), in order of happening
# --------------------------------------------------------------------------------------------------------------


class StageStarted(BaseModel):
    type: Literal["stage_started"] = "stage_started"
    stage: Stage
    label: str


class StageFinished(BaseModel):
    type: Literal["stage_finished"] = "stage_finished"
    stage: Stage
    seconds: float


class MergedSubQuery(BaseModel):
    text: str  # a sub-query the decomposition wrote that searches for what another one already does
    into: str  # the id of that other one


class DecompositionReady(BaseModel):
    type: Literal["decomposition_ready"] = "decomposition_ready"
    sub_queries: list[SubQuery]
    merged: list[MergedSubQuery] = Field(default_factory=list)  # near-duplicates, merged before any search


class PathChosen(BaseModel):
    """The fast-path gate: a question that asks one thing is answered from the question's own judged evidence while
    the decomposition still runs; a "not sufficient" verdict falls back to the whole pipeline."""

    type: Literal["path_chosen"] = "path_chosen"
    path: Literal["fast", "full", "fallback"]
    label: str  # 简单问题：直接检索 …
    reason: str


class SubQueryRewritten(BaseModel):
    """A dependent sub-query, rewritten with the bridge entity its parent's judged answer gave, before its search."""

    type: Literal["sub_query_rewritten"] = "sub_query_rewritten"
    original: SubQuery  # as the decomposition wrote it
    rewritten: SubQuery  # what is searched
    bridge: str | None  # None: the parent found nothing to bridge with; searched without it


class SearchStarted(BaseModel):
    type: Literal["search_started"] = "search_started"
    stage: int
    sub_query: SubQuery


class SearchDone(BaseModel):
    type: Literal["search_done"] = "search_done"
    stage: int
    sub_query: SubQuery
    hits: list[Hit]
    kb_version: int | None = None  # the published KB version this search read
    degradation: Degradation | None = None  # a retriever that failed during this search (its notice is sent apart)


class JudgementStarted(BaseModel):
    type: Literal["judgement_started"] = "judgement_started"
    stage: int
    sub_query: SubQuery


class JudgementDone(BaseModel):
    type: Literal["judgement_done"] = "judgement_done"
    stage: int
    analysis: SubQueryAnalysis


class SufficiencyReady(BaseModel):
    type: Literal["sufficiency_ready"] = "sufficiency_ready"
    verdict: SufficiencyVerdict


class Stage2Started(BaseModel):
    type: Literal["stage2_started"] = "stage2_started"
    sub_queries: list[SubQuery]


class AnswerToken(BaseModel):
    type: Literal["answer_token"] = "answer_token"
    text: str


class AnswerDone(BaseModel):
    type: Literal["answer_done"] = "answer_done"
    result: QueryResult

    @property
    def coverage(self) -> Coverage:
        return self.result.coverage


class DegradedEvent(BaseModel):
    type: Literal["degraded"] = "degraded"
    degradation: Degradation


class NoticeEvent(BaseModel):
    """A banner: offline mode, BM25-only search, a cached answer."""

    type: Literal["notice"] = "notice"
    kind: Literal["offline", "bm25_only", "cached", "empty_kb"]
    message: str


Event = Annotated[
    StageStarted
    | StageFinished
    | DecompositionReady
    | PathChosen
    | SubQueryRewritten
    | SearchStarted
    | SearchDone
    | JudgementStarted
    | JudgementDone
    | SufficiencyReady
    | Stage2Started
    | AnswerToken
    | AnswerDone
    | DegradedEvent
    | NoticeEvent,
    Field(discriminator="type"),
]
