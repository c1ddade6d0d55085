"""The four pydantic-ai agents of ClinCite and the user messages they receive.

    agents = build_agents(get_settings())        # the OpenAI-compatible endpoint of the settings
    result = await agents.relevance_judge.run(judge_prompt(sub_query, question, hits))

Instructions come from `prompts/*.txt`; model, temperature, max_tokens and timeout per agent from settings. One
`AsyncOpenAI` client (bounded retries with backoff for 429/5xx) and one concurrency limiter are shared by all four.
The pipeline reaches them through `clincite.question.reasoner.LLMReasoner`; offline mode does not use agents at all
(`clincite.offline`). Tests pass their own `models` (FunctionModels) or `.override(model=…)` one agent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass

from pydantic_ai import Agent, ModelSettings, NativeOutput, PromptedOutput
from pydantic_ai.exceptions import UnexpectedModelBehavior
from pydantic_ai.models import Model
from pydantic_ai.models.concurrency import ConcurrencyLimiter, limit_model_concurrency

from clincite.core.settings import AgentSettings, Settings
from clincite.core.shapes import (
    DecompositionOutput,
    JudgeOutput,
    Mode,
    SufficiencyOutput,
)
from clincite.llm.prompts import PROMPT_FILES, load_prompt
from clincite.llm.slots import QuestionCappedModel
from clincite.llm.transport import LLM_CONNECTION_LIMITS, coalescing_transport, read_pace_header

log = logging.getLogger("clincite.llm.agents")
UsageSink = Callable[[str, object], None]  # (agent name, pydantic-ai RunUsage)
STRUCTURED_RETRIES = 1  # one more request after invalid output, then the stage degrades
# How often a streamed reply is read over HTTP (clincite.llm.transport merges what arrived in between, sparing the event
# loop ~0.5 ms per chunk; first token and end are never held back). The report at the rate the clinician's screen is
# refreshed anyway (clincite.web.render); the decomposition often enough to notice a finished sub-query (one every
# ~0.3 s) at most 50 ms late. The judges' replies are not streamed. The report's reads are also held (its end only
# closes the message, and may come up to 0.1 s later): the bytes of many tokens come in one read of the connection.
READ_PACE = {"decomposition": 0.05, "answer_generation": 0.1}
HELD_READS = {"answer_generation"}


@dataclass
class Agents:
    decomposition: Agent[None, DecompositionOutput]
    relevance_judge: Agent[None, JudgeOutput]
    sufficiency_judge: Agent[None, SufficiencyOutput]
    answer_generation: Agent[None, str]
    mode: Mode
    settings: Settings
    client: object | None = None  # the shared AsyncOpenAI client (None with injected models)

    async def open_connection(self, timeout: float = 5.0) -> None:
        """Open the pooled HTTPS connection before the first question (TCP + TLS cost ~100–300 ms once)."""
        if self.client is None:
            return
        try:
            await self.client.models.list(timeout=timeout)
        except Exception:  # many compatible servers have no /models; the connection is open all the same
            pass


def agent_model_settings(agent: AgentSettings) -> ModelSettings:
    return ModelSettings(temperature=agent.temperature, max_tokens=agent.max_tokens, timeout=agent.timeout)


def _output_spec(output_type: type, mode: str):
    if mode == "native":
        return NativeOutput(output_type)
    if mode == "prompted":
        return PromptedOutput(output_type)
    return output_type  # tool calling, with a JSON-text fallback


def build_agents(settings: Settings, models: dict[str, Model] | None = None) -> Agents:
    """The four agents on the configured endpoint, or on the given `models` (tests: in-process fake models)."""
    limiter = ConcurrencyLimiter(max_running=settings.llm_max_concurrency, name="llm")
    client = None
    if models is not None:
        output_mode = "tool"
    else:
        client, models = _openai_models(settings)
        output_mode = settings.llm_output_mode

    def model_settings(name: str) -> ModelSettings:
        chosen = agent_model_settings(getattr(settings, name))
        if client is not None and name in READ_PACE:
            chosen["extra_headers"] = read_pace_header(READ_PACE[name], hold=name in HELD_READS)
        return chosen

    def agent(name: str, output_type):
        return Agent(
            QuestionCappedModel(limit_model_concurrency(models[name], limiter)),
            output_type=_output_spec(output_type, output_mode) if output_type is not str else str,
            instructions=load_prompt(name),
            model_settings=model_settings(name),
            retries={"output": STRUCTURED_RETRIES},
            name=name,
        )

    return Agents(
        decomposition=agent("decomposition", DecompositionOutput),
        relevance_judge=agent("relevance_judge", JudgeOutput),
        sufficiency_judge=agent("sufficiency_judge", SufficiencyOutput),
        answer_generation=agent("answer_generation", str),
        mode="llm",
        settings=settings,
        client=client,
    )


def _openai_models(settings: Settings):
    from openai import AsyncOpenAI, DefaultAsyncHttpxClient
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    # The SDK retries 408/409/429/5xx and connection errors with exponential backoff (0.5 s·2ⁿ, honours
    # Retry-After); one client means one connection pool for all four agents.
    client = AsyncOpenAI(
        api_key=settings.openai_api_key.get_secret_value(),
        base_url=settings.openai_base_url,
        max_retries=settings.llm_max_retries,
        http_client=DefaultAsyncHttpxClient(transport=coalescing_transport(limits=LLM_CONNECTION_LIMITS)),
    )
    provider = OpenAIProvider(openai_client=client)
    return client, {name: OpenAIChatModel(getattr(settings, name).model, provider=provider) for name in PROMPT_FILES}


async def stream_list_items(agent: Agent, prompt: str, field_name: str, on_usage: UsageSink) -> AsyncIterator:
    """Items of a list field as soon as each is complete (validated partials).

    The last item of a partial may still be truncated, so it is only taken once the next one has begun or the stream
    has ended. pydantic-ai cannot retry a streamed attempt whose output fails validation, so that case asks again
    without streaming (with the agent's retries); items seen twice are de-duplicated by the caller.
    """
    taken = 0
    try:
        async with agent.iter(prompt) as run:
            async for node in run:
                if not Agent.is_model_request_node(node):
                    continue
                async with node.stream(run.ctx) as stream:
                    async for partial in stream.stream_output(debounce_by=None):
                        items = getattr(partial, field_name, None) or []
                        for item in items[taken:-1]:
                            yield item
                        taken = max(taken, len(items) - 1)
            on_usage(agent.name, run.usage)
            output = run.result.output
    except UnexpectedModelBehavior as exc:
        log.info("Streamed %s output failed validation (%s); asking again without streaming", agent.name, exc)
        result = await agent.run(prompt)
        on_usage(agent.name, result.usage)
        output, taken = result.output, 0
    for item in getattr(output, field_name)[taken:]:
        yield item
