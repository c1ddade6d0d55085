"""The four pydantic-ai agents of ClinCite and the user messages they receive.

    agents = build_agents(get_settings())        # OpenAI-compatible endpoint, or offline models without a key
    result = await agents.relevance_judge.run(judge_prompt(sub_query, question, hits))

Instructions come from `prompts/*.txt`; model, temperature, max_tokens and timeout per agent from settings. One
`AsyncOpenAI` client (bounded retries with backoff for 429/5xx) and one concurrency limiter are shared by all four.
The user-message formats below are also what the offline models in `offline.py` read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic_ai import Agent, ModelSettings, NativeOutput, PromptedOutput
from pydantic_ai.models import Model
from pydantic_ai.models.concurrency import ConcurrencyLimiter, limit_model_concurrency

from models import (ChatTurn, DecompositionOutput, JudgeOutput, Mode, SubQuery, SubQueryAnalysis,
                    SufficiencyOutput)
from search import Hit
from settings import PROJECT_DIR, AgentSettings, Settings

PROMPTS_DIR = PROJECT_DIR / "prompts"
PROMPT_FILES = {
    "decomposition": "decomposition_system_prompt.txt",
    "relevance_judge": "relevance_judge_system_prompt.txt",
    "sufficiency_judge": "sufficiency_judge_system_prompt.txt",
    "answer_generation": "answer_generation_system_prompt.txt",
}
HISTORY_CHARS = 300  # an earlier answer is cut to this many characters in prompts: enough to resolve a follow-up
STRUCTURED_RETRIES = 1  # one more request after invalid output, then the stage degrades

# Section markers of the user messages (offline.py parses the same markers).
HISTORY = "【对话历史】"
QUESTION = "【当前问题】"
SUB_QUERY = "【子查询】"
ORIGINAL_QUESTION = "【原始问题】"
FRAGMENTS = "【候选片段】"
ANALYSES = "【子查询分析】"
ADDITIONAL_LIMIT = "【可追加的子查询上限】"
ANSWER_QUESTION = "【问题】"
EVIDENCE = "【证据摘录】"
NONE = "（无）"


@dataclass
class Agents:
    decomposition: Agent[None, DecompositionOutput]
    relevance_judge: Agent[None, JudgeOutput]
    sufficiency_judge: Agent[None, SufficiencyOutput]
    answer_generation: Agent[None, str]
    mode: Mode
    settings: Settings
    client: object | None = None  # the shared AsyncOpenAI client (None offline)

    async def open_connection(self, timeout: float = 5.0) -> None:
        """Open the pooled HTTPS connection before the first question (TCP + TLS cost ~100–300 ms once)."""
        if self.client is None:
            return
        try:
            await self.client.models.list(timeout=timeout)
        except Exception:  # many compatible servers have no /models; the connection is open all the same
            pass

    def model_settings(self, name: str) -> ModelSettings:
        return agent_model_settings(getattr(self.settings, name))


def load_prompt(name: str, prompts_dir: Path = PROMPTS_DIR) -> str:
    return (prompts_dir / PROMPT_FILES[name]).read_text(encoding="utf-8").strip()


def agent_model_settings(agent: AgentSettings) -> ModelSettings:
    return ModelSettings(temperature=agent.temperature, max_tokens=agent.max_tokens, timeout=agent.timeout)


def _output_spec(output_type: type, mode: str):
    if mode == "native":
        return NativeOutput(output_type)
    if mode == "prompted":
        return PromptedOutput(output_type)
    return output_type  # tool calling, with a JSON-text fallback


def build_agents(settings: Settings, offline: bool | None = None) -> Agents:
    """The four agents on the configured endpoint, or on the deterministic offline models when there is no key."""
    offline = settings.offline if offline is None else offline
    limiter = ConcurrencyLimiter(max_running=settings.llm_max_concurrency, name="llm")
    client = None
    if offline:
        import offline as offline_models  # the deterministic models need jieba; only load them when used

        models: dict[str, Model] = offline_models.build_models(settings)
        output_mode = "tool"
    else:
        client, models = _openai_models(settings)
        output_mode = settings.llm_output_mode

    def agent(name: str, output_type):
        return Agent(
            limit_model_concurrency(models[name], limiter),
            output_type=_output_spec(output_type, output_mode) if output_type is not str else str,
            instructions=load_prompt(name),
            model_settings=agent_model_settings(getattr(settings, name)),
            retries={"output": STRUCTURED_RETRIES},
            name=name,
        )

    return Agents(
        decomposition=agent("decomposition", DecompositionOutput),
        relevance_judge=agent("relevance_judge", JudgeOutput),
        sufficiency_judge=agent("sufficiency_judge", SufficiencyOutput),
        answer_generation=agent("answer_generation", str),
        mode="offline" if offline else "llm",
        settings=settings,
        client=client,
    )


def _openai_models(settings: Settings):
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    # The SDK retries 408/409/429/5xx and connection errors with exponential backoff (0.5 s·2ⁿ, honours
    # Retry-After); one client means one connection pool for all four agents.
    client = AsyncOpenAI(api_key=settings.openai_api_key, base_url=settings.openai_base_url,
                         max_retries=settings.llm_max_retries, timeout=settings.llm_request_timeout)
    provider = OpenAIProvider(openai_client=client)
    return client, {name: OpenAIChatModel(getattr(settings, name).model, provider=provider) for name in PROMPT_FILES}


# ---------------------------------------------------------------------------------------------------------------
# User messages
# ---------------------------------------------------------------------------------------------------------------


def display_source(source: str) -> str:
    """The name clinicians see: the file name without its extension."""
    return Path(source).stem if Path(source).suffix.lower() in {".md", ".markdown", ".txt", ".text", ".pdf",
                                                                 ".docx", ".html", ".htm"} else source


def format_history(history: list[ChatTurn]) -> str:
    if not history:
        return NONE
    lines = []
    for turn in history:
        text = turn.content.strip().replace("\n", " ")
        if turn.role == "assistant" and len(text) > HISTORY_CHARS:
            text = text[:HISTORY_CHARS] + "……（已截断）"
        lines.append(f"{'用户' if turn.role == 'user' else '助手'}：{text}")
    return "\n".join(lines)


def decomposition_prompt(question: str, history: list[ChatTurn]) -> str:
    return f"{HISTORY}\n{format_history(history)}\n{QUESTION}\n{question}"


def sub_query_line(sub_query: SubQuery) -> str:
    focus = f"（维度：{sub_query.focus}）" if sub_query.focus else ""
    return f"{sub_query.id}｜{sub_query.text}{focus}"


def judge_prompt(sub_query: SubQuery, question: str, hits: list[Hit]) -> str:
    fragments = "\n".join(
        f'<片段 id="{h.chunk_id}" 来源="{display_source(h.source)}" 标题="{" > ".join([h.title, *h.heading_path])}">\n'
        f"{h.text}\n</片段>"
        for h in hits
    )
    return (f"{SUB_QUERY}{sub_query_line(sub_query)}\n{ORIGINAL_QUESTION}{question}\n"
            f"{FRAGMENTS}\n{fragments or NONE}")


def sufficiency_prompt(question: str, analyses: list[SubQueryAnalysis], max_additional: int) -> str:
    blocks = []
    for analysis in analyses:
        extracts = "\n".join(f"- 《{display_source(e.source)}》“{e.text}”" for e in analysis.extracts) or NONE
        blocks.append(
            f"### {sub_query_line(analysis.sub_query)}\n子回答：{analysis.sub_answer or NONE}\n"
            f"置信度：{analysis.confidence}\n缺失方面：{'、'.join(analysis.missing) or '无'}\n摘录：\n{extracts}"
        )
    return (f"{ORIGINAL_QUESTION}{question}\n{ANALYSES}\n" + "\n".join(blocks)
            + f"\n{ADDITIONAL_LIMIT}{max_additional}")


def answer_prompt(question: str, history: list[ChatTurn], analyses: list[SubQueryAnalysis]) -> str:
    lines = []
    seen: set[tuple[str, str]] = set()
    # Sub-queries first, the question itself (q0) last: each aspect's evidence leads, the broad match fills in.
    for analysis in sorted(analyses, key=lambda a: a.sub_query.id == "q0"):
        for extract in analysis.extracts:
            key = (extract.chunk_id, extract.text)
            if key in seen:
                continue
            seen.add(key)
            lines.append(f"[E{len(lines) + 1}] 《{display_source(extract.source)}》“{extract.text}”"
                         f"（子查询：{analysis.sub_query.text}）")
    return (f"{ANSWER_QUESTION}{question}\n{HISTORY}{format_history(history)}\n"
            f"{EVIDENCE}\n" + ("\n".join(lines) or NONE))
