"""`python query.py "问题"` prints the steps as they happen, then the report: a step that finishes while the report
streams (the fast path starts answering before the other judgements end) is printed after the report, never inside
a sentence of it ("…未配置大语言模型 API Ke✓ 相关性判断（0.02 秒）\\ny，以下内容…").
"""

from __future__ import annotations

import io

from test_other_styles import library

from clincite.cli.terminal import TerminalRenderer
from clincite.core.shapes import AnswerDone, AnswerToken, StageFinished, StageStarted

NOTE = """# 睑腺炎护理（演示）

本文为演示材料，用于软件测试，不作为临床依据。

## 热敷

睑腺炎早期可局部热敷，每次10至15分钟，每日3至4次，出现脓头后切忌自行挤压。
"""


async def test_a_step_ending_while_the_report_streams_is_printed_after_it(tmp_path):
    result = await library(tmp_path, {"睑腺炎护理（演示）.md": NOTE}).ask("针眼早期怎么热敷？")
    out = io.StringIO()
    render = TerminalRenderer(out)
    for event in [
        StageStarted(stage="answer", label="撰写回答"),
        AnswerToken(text="离线演示模式：未配置大语言模型 API Ke"),
        StageFinished(stage="judgement", seconds=0.02),
        AnswerToken(text="y，以下内容由规则抽取。"),
        AnswerDone(result=result),
    ]:
        render(event)
    printed = out.getvalue()
    assert "API Key，以下内容由规则抽取。" in printed
    report = printed.split("──── 引用核验 ────")[0]
    assert "✓ 相关性判断" in report.split("以下内容由规则抽取。")[1]  # after the report's text, before the citations
