"""Failures show what happened (issue 20, part 4), end to end: a failing recorded case shows the
answer and the calls made beside the expected ones in the terminal (whole under -vv), report.md
and the dashboard show the same escaped, and a system that cannot reach its model during --live
is a few lines naming the root cause and the URL (--tb=long: the whole traceback)."""

from __future__ import annotations

import json
import re
import socket

import pytest
from evalhelpers import Project, assert_not_aborted, error_block

QUESTION = "How many days do I have to return order 1234 that I bought last week?"
HOSTILE = "Returns take 14 days [x](http://127.0.0.1:18999/phish) <script>alert(1)</script>"

# A system whose trace is what answers.json says: the test records it once, then replays.
AGENT = """\
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent


def run(case):
    steer = json.loads((ROOT / "answers.json").read_text())
    return {
        "answer": steer["answer"],
        "tool_calls": [{"name": "search_kb", "args": {"query": case["input"]}}],
        "retrieved": ["faq-12", "faq-3", "policy-9", "policy-2"],
    }
"""

SUITE = {
    "name": "shop",
    "system": "agent:run",
    "stages": ["tools", "retrieval", "exact_match"],
    "cases": [
        {"id": "order", "input": QUESTION, "expected_tools": ["get_order"]},
        {"id": "docs", "input": "Return window?", "expected_docs": ["policy-1", "faq-3"]},
        {"id": "answer", "input": "Return window?", "reference": "30 days"},
    ],
}


@pytest.fixture
def recorded(project: Project) -> Project:
    """The shop suite recorded with a hostile answer; every case fails at its first stage."""
    project.write_text("agent.py", AGENT)
    project.write_text("answers.json", json.dumps({"answer": HOSTILE}))
    project.write_suite(SUITE)
    assert project.run("--live").ret == 1
    return project


def test_a_failing_case_shows_the_calls_made_beside_the_expected_ones_and_the_answer(
    recorded: Project,
) -> None:
    result = recorded.run()

    result.assert_outcomes(failed=3)
    order = error_block(result, "shop::order").splitlines()
    assert order[:5] == [
        "first failing stage: tools (missing: get_order; unexpected: search_kb)",
        "  called:   search_kb(query='How many days do I have to return order…')",
        "  expected: get_order",
        f"  answer:   {HOSTILE!r}",
        "  (values cut short: -vv shows them whole)",
    ]
    docs = error_block(result, "shop::docs").splitlines()
    assert docs[1:3] == [
        "  retrieved: faq-12, faq-3, policy-9 (+1 beyond k=3)",
        "  expected:  policy-1, faq-3",
    ]
    answer = error_block(result, "shop::answer").splitlines()
    assert answer[1:3] == [f"  answer:    {HOSTILE!r}", "  reference: '30 days'"]


def test_vv_shows_them_whole(recorded: Project) -> None:
    result = recorded.run("-vv")

    order = error_block(result, "shop::order").splitlines()
    assert order[1] == f"  called:   search_kb(query={QUESTION!r})"
    assert "-vv shows them whole" not in "\n".join(order)
    docs = error_block(result, "shop::docs").splitlines()
    assert docs[1] == "  retrieved: faq-12, faq-3, policy-9; beyond k=3: policy-2"


def test_report_md_and_the_dashboard_show_them_escaped(recorded: Project) -> None:
    result = recorded.run("--eval-report", "out")

    assert_not_aborted(result)
    md = (recorded.root / "out" / "report.md").read_text()
    html = (recorded.root / "out" / "dashboard.html").read_text()
    for raw in ("[x](http://127.0.0.1:18999/phish)", "<script>alert(1)</script>"):
        assert raw not in md
    assert "<script>alert(1)" not in html and html.count("<script") == 1
    row = next(line for line in md.splitlines() if line.startswith("| shop::order "))
    shown = r"'Returns take 14 days [x]\(http://127.0.0.1:18999/phish) &lt;script&gt;alert"
    assert (
        r"called: search_kb(query='How many days do I have to return order…')"
        f"<br>expected: get_order<br>answer: {shown}"
    ) in row
    block = html.split('<div class="block wide happened">')[1].split("</div>")[0]
    assert "what happened at tools" in block
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in block and "<th>called</th>" in block
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert "<a " not in rendered and "<img" not in rendered and "<script" not in rendered


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: connecting is refused)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


OPENAI_AGENT = """\
import openai

client = openai.OpenAI(api_key="sk-test", base_url="http://127.0.0.1:{port}/v1", max_retries=0)


def ask(question):
    messages = [{{"role": "user", "content": question}}]
    reply = client.chat.completions.create(model="m", messages=messages)
    return reply.choices[0].message.content


def run(case):
    return {{"answer": ask(case["input"])}}
"""

HTTPX_AGENT = """\
import httpx


def ask(question):
    reply = httpx.post("http://127.0.0.1:{port}/v1/chat/completions?api_key=secret", json={{}})
    return reply.json()["answer"]


def run(case):
    return {{"answer": ask(case["input"])}}
"""


@pytest.mark.parametrize(
    ("source", "chain", "call"),
    [
        (
            OPENAI_AGENT,
            [
                "APIConnectionError: Connection error. (POST {url})",
                "  caused by ConnectError: [Errno 111] Connection refused",
            ],
            'reply = client.chat.completions.create(model="m", messages=messages)',
        ),
        (
            # httpx's ConnectError repeats httpcore's: shown once; the query string (a key,
            # maybe) is left out of the URL
            HTTPX_AGENT,
            ["ConnectError: [Errno 111] Connection refused (POST {url})"],
            'reply = httpx.post("http://127.0.0.1:{port}/v1/chat/completions?api_key=secret", '
            "json={{}})",
        ),
    ],
    ids=["openai", "httpx"],
)
def test_a_live_model_error_is_a_few_lines_naming_the_root_cause_and_the_url(
    project: Project, source: str, chain: list[str], call: str
) -> None:
    if source is OPENAI_AGENT:
        pytest.importorskip("openai")
    port = closed_port()
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    project.write_text("agent.py", source.format(port=port))
    project.write_suite(
        {
            "name": "m",
            "system": "agent:run",
            "stages": ["exact_match"],
            "cases": [{"id": "q", "input": "hi", "reference": "hello"}],
        }
    )

    # not retried (a refused connection is transient: docs/system.md): the error as raised
    result = project.run("--live", "--eval-system-retries", "0")

    result.assert_outcomes(errors=1)
    block = error_block(result, "m::q").splitlines()
    assert block[: len(chain)] == [line.format(url=url) for line in chain]
    assert re.fullmatch(
        r'  at agent\.py:\d+ in run: return \{"answer": ask\(case\["input"\]\)\}', block[len(chain)]
    )
    assert re.fullmatch(r"  at agent\.py:\d+ in ask: (.*)", block[-2]).group(1) == call.format(
        port=port
    )
    assert block[-1] == (
        "the system raised during --live: this case was not recorded "
        "(--tb=long shows the full traceback)"
    )
    assert len(block) == len(chain) + 3
    summary = "\n".join(result.outlines)
    assert f"not recorded: m::q ({chain[0].format(url=url)}" in summary

    full = project.run("--live", "--tb=long", "--eval-system-retries", "0")

    full.assert_outcomes(errors=1)
    long_block = error_block(full, "m::q")
    assert "site-packages" in long_block and len(long_block.splitlines()) > 50
    assert "The above exception was the direct cause of the following exception" in long_block
