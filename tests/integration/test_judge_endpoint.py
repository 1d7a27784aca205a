"""End to end: the judge's own endpoint (EVALCASES_JUDGE_BASE_URL / EVALCASES_JUDGE_API_KEY).

An agent built on the openai SDK reads OPENAI_BASE_URL and OPENAI_API_KEY, and so did the judge:
pointing the judge at a local server sent the agent there too. Here the agent (a plain urllib
client that follows OPENAI_BASE_URL, as the SDK does) talks to the loopback echo server, while
the judge's variables send every judge request to the loopback judge server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from echo_server import EchoServer
from evalhelpers import Project, output, run_pytest_env_in_process, suite_doc
from judge_server import JudgeServer, judge_server_fixture

AGENT_SYSTEM = '''\
"""An agent that finds its model server the way the openai SDK does: OPENAI_BASE_URL."""
import json
import os
import urllib.request


def run(case):
    request = urllib.request.Request(
        os.environ["OPENAI_BASE_URL"] + "/chat/completions",
        data=json.dumps({"model": "agent-model",
                         "messages": [{"role": "user", "content": case["input"]}]}).encode(),
        headers={"content-type": "application/json",
                 "authorization": "Bearer " + os.environ["OPENAI_API_KEY"]},
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        answer = json.load(reply)["choices"][0]["message"]["content"]
    return {"answer": answer, "context": [answer]}
'''

AGENT_KEY = "sk-agent-key-0123456789"
JUDGE_KEY = "judge-key-0123456789"

judge_server = judge_server_fixture()


@pytest.fixture
def agent_server() -> Iterator[EchoServer]:
    with EchoServer() as server:
        yield server


def agent_project(project: Project) -> Project:
    project.write_text("agent.py", AGENT_SYSTEM)
    cases = [
        {"id": "refunds", "input": "How long is the refund window?"},
        {"id": "shipping", "input": "Do you ship abroad?"},
    ]
    project.write_suite(
        suite_doc(
            "agent",
            cases=cases,
            system="agent:run",
            inputs=[],
            stages=["faithfulness"],
            judge="openai:gpt-4o-mini",
        )
    )
    return project


def test_the_judge_variables_move_the_judge_and_not_the_agent(
    project: Project, judge_server: JudgeServer, agent_server: EchoServer
) -> None:
    agent_project(project)
    env = {
        "OPENAI_BASE_URL": f"{agent_server.url}/v1",
        "OPENAI_API_KEY": AGENT_KEY,
        "EVALCASES_JUDGE_BASE_URL": judge_server.base_url,
        "EVALCASES_JUDGE_API_KEY": JUDGE_KEY,
    }

    result = run_pytest_env_in_process(project.root, "-p", "no:cacheprovider", "--live", env=env)

    result.assert_outcomes(passed=2)
    # The agent reached its own server, once a case, and nothing of the judge's went there.
    assert sorted(r.body["messages"][0]["content"] for r in agent_server.requests) == [
        "Do you ship abroad?",
        "How long is the refund window?",
    ]
    assert {r.body["model"] for r in agent_server.requests} == {"agent-model"}
    # Every judge request went to the judge server, with the judge's key.
    assert judge_server.requests, output(result)
    assert {r.headers.get("Authorization") for r in judge_server.requests} == {
        f"Bearer {JUDGE_KEY}"
    }
    verdict = project.cassette("agent", "refunds")["verdicts"]["faithfulness"]
    assert (verdict["judge"], verdict["score"]) == ("openai:gpt-4o-mini", 1.0)
    assert project.cassette("agent", "refunds")["trace"]["answer"] == (
        "you asked: How long is the refund window?"
    )
    written = "".join(content.decode() for content, _ in project.files(http=True).values())
    assert JUDGE_KEY not in written and AGENT_KEY not in written


def test_openai_base_url_alone_moves_judge_and_agent_together(
    project: Project, judge_server: JudgeServer
) -> None:
    """The collision the judge variables remove (the fallback still works as before): with
    OPENAI_BASE_URL pointed at the judge's server, the agent goes there too and fails on the
    judge server's 400, as the issue saw."""
    agent_project(project)
    env = {"OPENAI_BASE_URL": judge_server.base_url, "OPENAI_API_KEY": AGENT_KEY}

    result = run_pytest_env_in_process(project.root, "-p", "no:cacheprovider", "--live", env=env)

    result.assert_outcomes(errors=2)
    assert "HTTPError: HTTP Error 400" in output(result)
    assert judge_server.kinds() == ["", ""]  # the agent's two requests, no judge prompt


def test_an_unset_judge_key_names_both_variables(project: Project) -> None:
    agent_project(project)

    result = run_pytest_env_in_process(
        project.root,
        "-p",
        "no:cacheprovider",
        "--live",
        env={"EVALCASES_JUDGE_BASE_URL": "http://127.0.0.1:9/v1"},
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert "needs EVALCASES_JUDGE_API_KEY or OPENAI_API_KEY" in output(result)
    assert json.dumps(project.files()) == "{}"  # nothing ran, nothing was written
