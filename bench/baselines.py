"""The two baselines the pipeline benchmark runs (not estimates) next to the product's overlapped pipeline.

    stage_serial  every stage waits for the previous one to finish (the judges of one stage still run together);
                  no speculative answer
    serial        the same, with the judges one after another

They reuse the product's stage functions and change only the order of waiting, so the figures compare scheduling,
not code paths. They run without the fast path (FAST_PATH=false: the benchmark sets it), as the designs they stand for.
"""

from __future__ import annotations

from clincite.core.shapes import SubQuery, SubQueryAnalysis
from clincite.question.run import QuestionRun
from clincite.question.service import TwoStageQueryService
from clincite.question.stages import Phase, decompose, judge, search


class StageSerialService(TwoStageQueryService):
    speculate = False

    async def _stage1(self, run: QuestionRun, question_judged=None) -> tuple[list[SubQuery], list[SubQueryAnalysis]]:
        sub_queries = [sq async for sq in decompose(self.deps, run, stream=False)]
        every = [SubQuery(id="q0", text=run.question, focus="原问题"), *sub_queries]
        searching, judging = Phase(run, "search"), Phase(run, "judgement")
        searching.expect()
        searching.close()
        hits = await search(self.deps, run, every, 1, searching)
        judging.expect(len(every))
        judging.close()
        return sub_queries, await self._judge_all(run, every, hits, 1, judging)


class SerialService(StageSerialService):
    async def _judge_all(self, run: QuestionRun, sub_queries: list[SubQuery], hits, stage: int, phase=None):
        return [
            await judge(self.deps, run, sq, found, stage, phase) for sq, found in zip(sub_queries, hits, strict=True)
        ]


SERVICES = {"overlapped": TwoStageQueryService, "stage_serial": StageSerialService, "serial": SerialService}
