"""No control or escape character reaches the terminal (issue 21, "What to build" 9).

Text from a trace (a model-chosen tool name, an answer), a label in a cassette or a judge is
printed with its controls made visible (`\\x1b` -> `␛`): a model cannot clear the screen or
forge the summary. Runs are in-process and print without markup (no terminal), so any ESC in
the output came from the text under test.
"""

from __future__ import annotations

import json

from evalhelpers import Project, make_case, output, suite_doc

FORGED = "\x1b[2J\x1b[H\x1b[32m=== 1 passed ==="

TOOL_SYSTEM = f'''\
"""A system whose model calls a tool by a name that drives the terminal."""


def run(case):
    return {{
        "answer": "done {FORGED.encode("unicode_escape").decode()}",
        "tool_calls": [{{"name": {json.dumps(FORGED)}, "args": {{"q": case["input"]}}}}],
        "retrieved": [],
        "context": [],
    }}
'''


def test_a_model_chosen_tool_name_cannot_drive_the_terminal(project: Project) -> None:
    """Terminal: raw escape codes from a model-controlled tool name are printed
    (`unexpected: ESC[2J ESC[H ESC[32m=== 1 passed ===`): a model can forge the summary."""
    project.write_text("toolsys.py", TOOL_SYSTEM)
    project.write_suite(
        {
            "name": "tools",
            "system": "toolsys:run",
            "stages": ["tools"],
            "cases": [{"id": "forged", "input": "q", "expected_tools": ["search"]}],
        }
    )
    live = project.run("--live", "-p", "no:cacheprovider", "-rA")
    replay = project.run("-p", "no:cacheprovider", "-rA")

    for result in (live, replay):
        printed = output(result)
        assert "unexpected: ␛[2J␛[H␛[32m=== 1 passed ===" in printed
        assert "\x1b" not in printed


def test_a_hand_edited_label_cannot_drive_the_terminal(project: Project) -> None:
    """Terminal: raw escape codes from a hand-edited label (a cassette's `labels`, shown in a
    stale message) are printed."""
    project.write_suite(suite_doc(cases=[make_case("alpha", "alpha beta")]))
    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    path = project.cassette_path("suite", "alpha")
    doc = json.loads(path.read_text())
    doc["labels"]["key"]["fingerprint.prompt"] = FORGED + "\r\x07\x9b"  # raw, not JSON text
    path.write_text(json.dumps(doc))
    project.steer(fingerprint={"prompt": "answer at length", "model": "echo-1"})

    printed = output(project.run("-p", "no:cacheprovider", "-rA"))

    assert "␛[2J␛[H␛[32m=== 1 passed ===" in printed, printed
    assert not any(control in printed for control in ("\x1b", "\r", "\x07", "\x9b"))
