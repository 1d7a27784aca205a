"""The default `code` end to end: a two-line system module over an agent package.

Recorded with `--live`, then replayed by plain `pytest`: a bug in the package's tools module
(not in the system's module) stales the recording, naming `code.<package>.tools`; a comment or
formatting edit stales nothing. Past the bound, the suite file errors and says what to do.
"""

from __future__ import annotations

import re

from evalhelpers import Project, error_block, make_case, output, suite_doc, summary_section

SYSTEM = "from shop_agent.agent import SupportAgent\nsystem = SupportAgent()\n"

PACKAGE = {
    "shop_agent/__init__.py": '"""A support agent: a router over one search tool."""\n',
    "shop_agent/agent.py": '''\
"""The agent: search the knowledge base, answer from the best document."""

from .tools import search_kb


class SupportAgent:
    def run(self, case):
        from . import answering  # imported where it is used

        docs = search_kb(case["input"])
        return {
            "answer": answering.answer(docs),
            "tool_calls": [{"name": "search_kb", "args": {"query": case["input"]}}],
            "tool_outputs": [{"tool": "search_kb", "content": " ".join(d["id"] for d in docs)}],
            "retrieved": [d["id"] for d in docs],
            "context": [d["text"] for d in docs],
        }
''',
    "shop_agent/answering.py": """\
def answer(docs):
    return docs[0]["text"] if docs else "I do not know."
""",
    "shop_agent/tools.py": '''\
"""Tools of the agent."""

KB = [
    {"id": "returns", "text": "Returns are accepted within 30 days."},
    {"id": "shipping", "text": "Shipping takes 3 to 5 days."},
    {"id": "warranty", "text": "The warranty lasts 2 years."},
]


def search_kb(query, k=2):
    """Search the knowledge base: the documents sharing the most words with the query."""
    words = set(query.lower().split())
    ranked = sorted(KB, key=lambda doc: -len(words & set(doc["text"].lower().split())))
    return ranked[:k]
''',
}

CASES = [
    make_case(
        "returns",
        "how many days are returns accepted",
        expected_tools=["search_kb"],
        expected_docs=["returns"],
    ),
    make_case(
        "warranty",
        "how long does the warranty last",
        expected_tools=["search_kb"],
        expected_docs=["warranty"],
    ),
]

CODE_FIELDS = [
    "code.shop_agent",
    "code.shop_agent.agent",
    "code.shop_agent.answering",
    "code.shop_agent.tools",
    "code.support_system",
]


def write_agent_project(project: Project) -> None:
    project.write_text("support_system.py", SYSTEM)
    for path, text in PACKAGE.items():
        project.write_text(path, text)
    project.write_suite(
        suite_doc(
            "shop", system="support_system:system", stages=["tools", "retrieval"], cases=CASES
        )
    )


def edit_tools(project: Project, old: str, new: str) -> None:
    path = project.root / "shop_agent" / "tools.py"
    source = path.read_text()
    assert old in source
    path.write_text(source.replace(old, new))


def stale_lines(result) -> list[str]:
    return [
        line.strip()
        for case in ("shop::returns", "shop::warranty")
        for line in error_block(result, case).splitlines()
        if "stale recording" in line
    ]


def test_a_bug_in_the_agent_package_fails_plain_pytest(project: Project) -> None:
    write_agent_project(project)

    project.run("--live", "-p", "no:cacheprovider").assert_outcomes(passed=2)

    key = project.cassette("shop", "returns")["key"]
    assert sorted(name for name in key if name.startswith("code.")) == CODE_FIELDS
    labels = project.cassette("shop", "returns")["labels"]["key"]
    assert labels["code.shop_agent.tools"] == "shop_agent/tools.py"

    # A comment and a reformatted line: the syntax tree is the same, nothing is stale.
    edit_tools(project, "    return ranked[:k]\n", "    # the k best\n    return ranked[ : k ]\n")
    assert project.run("-p", "no:cacheprovider").ret == 0

    # The bug of the issue: the best document is dropped. Plain pytest refuses the recording
    # and names the module.
    edit_tools(project, "ranked[ : k ]", "ranked[1:k]")
    result = project.run("-p", "no:cacheprovider")

    result.assert_outcomes(errors=2)
    old = key["code.shop_agent.tools"]
    for line in stale_lines(result):
        assert re.fullmatch(
            rf"stale recording: code\.shop_agent\.tools changed \({old[:6]} -> [0-9a-f]{{6}}\); "
            r"re-record with --live, or check it offline with --replay-http",
            line,
        ), output(result)
    assert len(stale_lines(result)) == 2
    rows = {
        line.split()[0]: line.split()[2]
        for line in summary_section(result)
        if "::" in line.split(" ", 1)[0]
    }
    assert rows == {"shop::returns": "stale", "shop::warranty": "stale"}

    # Re-recorded, the bug shows as what it is: retrieval misses the best document.
    relive = project.run("--live", "-p", "no:cacheprovider")
    relive.assert_outcomes(failed=2)
    assert "first failing stage: retrieval" in output(relive)


def test_past_the_bound_the_suite_file_says_what_to_do(project: Project) -> None:
    modules = [f"m{i}" for i in range(500)]
    project.write_text("big/__init__.py", "".join(f"from . import {m}\n" for m in modules))
    for name in modules:
        project.write_text(f"big/{name}.py", f"VALUE = {name[1:]}\n")
    project.write_text("big_system.py", "import big\nfrom mysys import system\n")
    project.write_suite(suite_doc("big", system="big_system:system", cases=[make_case("a", "a b")]))
    project.write_suite(suite_doc("small", cases=[make_case("a", "a b")]))

    result = project.run("--live", "-p", "no:cacheprovider")

    result.assert_outcomes(passed=1, errors=1)  # the small suite records
    block = error_block(result, "big.json")
    assert "cases/big.json" in block
    assert "holds 503 modules, more than 500" in block  # big, its 500 modules, big_system, mysys
    assert '"code": ["big_system"]' in block and '"code": []' in block
