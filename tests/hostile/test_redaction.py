"""Redaction covers what leaks; `scan` reads every file kind (issue 21, "What to build" 2).

One `--live` run of a system that leaks each secret kind through every way out it has (its
answer, a tool argument, an HTTP header and body, an exception message), with `--junitxml`,
`--eval-report` (results.json, report.md, dashboard.html, recording-changes.md) on; then every
file the run wrote, and what it printed, is searched for every planted secret. The fake keys are
built at run time (tests/fake_secrets.py): no file in the repository holds one.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from echo_server import EchoServer
from evalhelpers import Project
from fake_secrets import AWS, AWS_SECRET, JWT, OPENAI, PEM, live_run_read_back

from pytest_evalcases.store.secret_scan import scan_files

# Each kind the probe found leaking, by the secret planted for it.
PLANTED = {
    "jwt": JWT,
    "aws-secret-key": AWS_SECRET,
    "private-key": PEM,
    "openai-key": OPENAI,
}

LEAKY_SYSTEM = '''\
"""A system that leaks every secret of secrets.json through each way out it has."""
import json
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent
SECRETS = json.loads((ROOT / "secrets.json").read_text())


def run(case):
    s = SECRETS
    if case["id"] == "raises":
        raise RuntimeError(
            f"auth failed for {s['openai']}; token {s['jwt']}; "
            f"aws {s['aws_id']} {s['aws_secret']}; key {s['pem']}"
        )
    headers = {"Authorization": "Bearer " + s["jwt"], "X-Aws-Secret-Access-Key": s["aws_secret"]}
    body = {"question": case["input"], "key": s["pem"], "api": s["openai"],
            "aws": {"AccessKeyId": s["aws_id"], "SecretAccessKey": s["aws_secret"]}}
    with httpx.Client(timeout=5) as client:
        reply = client.post(s["url"] + "/ask", json=body, headers=headers).json()
    leak = f"{s['jwt']} {s['aws_id']}:{s['aws_secret']} {s['openai']}\\n{s['pem']}"
    return {
        "answer": "here you are: " + leak,
        "tool_calls": [{"name": "lookup", "args": {"token": s["jwt"], "pem": s["pem"],
                                                    "aws_secret_access_key": s["aws_secret"]}}],
        "tool_outputs": [{"tool": "lookup", "content": json.dumps(reply)}],
        "retrieved": [],
        "context": [leak],
    }
'''


def leaky_project(root: Path, server: EchoServer) -> Project:
    project = Project(root).write_base()
    project.write_text("leakysys.py", LEAKY_SYSTEM)
    project.write_text(
        "secrets.json",
        json.dumps(
            {
                "url": server.url,
                "jwt": JWT,
                "aws_id": AWS,
                "aws_secret": AWS_SECRET,
                "pem": PEM,
                "openai": OPENAI,
            }
        ),
    )
    project.write_suite(
        {
            "name": "leaky",
            "system": "leakysys:run",
            "stages": ["tools", "exact_match"],
            "cases": [
                # A failing stage: its failure message shows the answer and the tool call.
                {"id": "answers", "input": "q", "expected_tools": ["search"], "reference": "no"},
                {"id": "raises", "input": "q", "expected_tools": ["search"], "reference": "no"},
            ],
        }
    )
    return project


@pytest.fixture(scope="module")
def leaked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SimpleNamespace]:
    """The files the leaking --live run wrote (path -> text) and what it printed."""
    with EchoServer() as server:
        yield live_run_read_back(leaky_project(tmp_path_factory.mktemp("leaky"), server))


def test_the_leaking_run_wrote_every_file_kind(leaked: SimpleNamespace) -> None:
    """The run under test wrote what the probe read: cassette and HTTP file of each way the
    system leaks, results.json, report.md, the dashboard, JUnit XML, recording-changes.md."""
    assert {
        "cassettes/leaky/answers.json",
        "cassettes/leaky/answers.http.json",
        "junit.xml",
        "reports/results.json",
        "reports/report.md",
        "reports/dashboard.html",
        "reports/recording-changes.md",
    } <= set(leaked.texts), sorted(leaked.texts)
    assert "auth failed for" in leaked.texts["reports/results.json"]  # the exception got there


def planted_forms(secret: str) -> list[str]:
    """The secret as each kind of file would hold it: as is, JSON-escaped (a PEM's newlines),
    HTML-escaped; and its first line alone (a PEM block's body line)."""
    forms = {secret, json.dumps(secret)[1:-1], html.escape(secret)}
    if "\n" in secret:
        forms.add(secret.splitlines()[1])
    return sorted(forms)


@pytest.mark.parametrize("kind", list(PLANTED))
def test_no_planted_secret_reaches_any_written_file_or_the_terminal(
    leaked: SimpleNamespace, kind: str
) -> None:
    """Secrets written out: a bare JWT, an AWS secret access key and a PEM private-key block
    were never redacted (cassette and `.http.json`, results.json, dashboard.html); an `sk-` key
    in an exception message reached results.json, the dashboard, report.md, the JUnit XML and
    recording-changes.md (23 (file, secret) pairs)."""
    forms = planted_forms(PLANTED[kind])
    leaks = [
        name
        for name, text in {**leaked.texts, "(terminal)": leaked.printed}.items()
        if any(form in text for form in forms)
    ]
    assert leaks == []


SCAN_FORMATS = {
    "cassette.json": lambda text: json.dumps({"trace": {"answer": text}}),
    "case.http.json": lambda text: json.dumps(
        {"interactions": [{"request": {"headers": {"x": [text]}, "body": json.dumps([text])}}]}
    ),
    "report.md": lambda text: f"# Report\n\n| case | answer |\n| --- | --- |\n| a | {text} |\n",
    "dashboard.html": lambda text: f"<html><body><pre>{html.escape(text)}</pre></body></html>\n",
    "junit.xml": lambda text: (
        f'<testsuite><testcase name="a"><failure message="{html.escape(text, quote=True)}">'
        f"{html.escape(text)}</failure></testcase></testsuite>\n"
    ),
    "recording-changes.md": lambda text: f"# Recording changes\n\n- leaky::a: {text}\n",
}


@pytest.mark.parametrize("file_name", list(SCAN_FORMATS))
def test_scan_finds_each_secret_kind_in_each_file_kind_the_plugin_writes(
    tmp_path: Path, file_name: str
) -> None:
    """`scan` called the leaking cassettes "clean" and skipped `.md`, `.html` and `.xml`."""
    for kind, secret in PLANTED.items():
        leak = f"auth failed for {secret}" if kind != "aws-secret-key" else f"{AWS} {secret}"
        (tmp_path / kind).mkdir()
        (tmp_path / kind / file_name).write_text(SCAN_FORMATS[file_name](leak), encoding="utf-8")

    found = {(finding.file.parent.name, finding.kind) for finding in scan_files([tmp_path], {})}

    assert {(kind, kind) for kind in PLANTED} <= found


def test_scan_of_the_leaking_run_is_clean(leaked: SimpleNamespace) -> None:
    """What the run wrote holds no secret the scan knows (it reads every kind of file now)."""
    root = leaked.project.root
    findings = scan_files([root / "cassettes", root / "reports", root / "junit.xml"], {})

    assert [finding.line() for finding in findings] == []
