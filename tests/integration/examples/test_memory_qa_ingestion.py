"""examples/memory-qa's ingestion as the agent reports it: what `setup_user` returns (the counts
it indexed, a hash of the content) and a `ready` that is true after one poll. The agent module is
loaded from the example under a name of its own, so it never meets the copies other tests run."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "memory-qa"
MODULE_NAME = "memory_qa_agent_under_test"


@pytest.fixture(scope="module")
def agent_module() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location(
        MODULE_NAME, EXAMPLE / "memory_agent" / "agent.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module  # dataclasses look their module up while building
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[MODULE_NAME]


@pytest.fixture(autouse=True)
def store(agent_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The agent saves its indexes here, not in the example's folder."""
    monkeypatch.setattr(agent_module, "STORE", tmp_path / "store")
    return tmp_path / "store"


def users_of(root: Path) -> dict[str, dict[str, Any]]:
    """The suite's users, their files made absolute (the suite names them from `root`)."""
    suite = json.loads((root / "cases" / "memory.json").read_text(encoding="utf-8"))
    users = {}
    for user in suite["users"]:
        user = dict(user)
        user["conversations"] = str(root / user["conversations"])
        user["documents"] = [str(root / path) for path in user.get("documents", [])]
        users[user["id"]] = user
    return users


def test_setup_user_returns_the_counts_it_indexed_and_a_content_hash(
    agent_module: ModuleType,
) -> None:
    agent, users = agent_module.MemoryAgent(), users_of(EXAMPLE)

    results = {user_id: agent.setup_user(user) for user_id, user in users.items()}

    # Counted in data/: ana's sessions have 3, 3 and 2 turns, and notes.md two paragraphs under
    # its heading; ben's 3, 3, 2; chen's 3, 2, 2.
    counts = {
        user_id: {k: v for k, v in result.items() if k not in ("content_hash", "usage", "cost_usd")}
        for user_id, result in results.items()
    }
    assert counts == {
        "u-ana": {"messages": 8, "documents": 1, "chunks": 2},
        "u-ben": {"messages": 8, "documents": 0, "chunks": 0},
        "u-chen": {"messages": 7, "documents": 0, "chunks": 0},
    }
    hashes = [result["content_hash"] for result in results.values()]
    assert all(re.fullmatch(r"[0-9a-f]{12}", h) for h in hashes)
    assert len(set(hashes)) == 3
    assert json.loads(json.dumps(results)) == results  # JSON-able as it is
    # the same files ingested again hash alike
    assert agent_module.MemoryAgent().setup_user(users["u-ben"]) == results["u-ben"]


def test_the_content_hash_follows_the_indexed_text_not_the_folder(
    agent_module: ModuleType, tmp_path: Path
) -> None:
    root = tmp_path / "memory-qa"
    shutil.copytree(EXAMPLE / "data", root / "data")
    shutil.copytree(EXAMPLE / "cases", root / "cases")
    agent = agent_module.MemoryAgent()
    before = agent.setup_user(users_of(root)["u-ana"])
    assert before == agent.setup_user(users_of(EXAMPLE)["u-ana"])  # another folder, same text

    notes = root / "data" / "ana" / "notes.md"
    notes.write_text(notes.read_text(encoding="utf-8") + "\nMiso likes the window seat too.\n")
    after = agent.setup_user(users_of(root)["u-ana"])

    assert after["chunks"] == 3
    assert after["content_hash"] != before["content_hash"]


def test_ready_is_false_on_the_first_poll_after_an_ingestion_and_true_after(
    agent_module: ModuleType,
) -> None:
    agent, users = agent_module.MemoryAgent(), users_of(EXAMPLE)
    ana, ben = users["u-ana"], users["u-ben"]
    ana_result, ben_result = agent.setup_user(ana), agent.setup_user(ben)

    assert [agent.ready(ana, ana_result) for _ in range(3)] == [False, True, True]
    assert agent.ready(ben, ben_result) is False  # each user waits for its own poll
    agent.setup_user(ana)  # ingested again: processing starts over
    assert [agent.ready(ana, ana_result), agent.ready(ana, ana_result)] == [False, True]


def test_user_ready_loads_the_saved_index_only_for_the_recorded_content(
    agent_module: ModuleType, store: Path
) -> None:
    users = users_of(EXAMPLE)
    ana = users["u-ana"]
    result = agent_module.MemoryAgent().setup_user(ana)
    case = {"id": "c", "user": "u-ana", "input": "When did Ana adopt her kitten?"}
    expected = agent_module.MemoryAgent()
    expected.setup_user(ana)

    fresh = agent_module.MemoryAgent()  # a new process: nothing in memory
    assert fresh.user_ready(ana, {**result, "content_hash": "000000000000"}) is False
    assert fresh.user_ready(users["u-ben"], result) is False  # never saved
    assert fresh.user_ready(ana, result) is True
    answered = fresh.run(case)
    assert answered["answer"] == expected.run(case)["answer"]
    assert answered["retrieved"] == expected.run(case)["retrieved"]

    (store / "u-ana" / "content_hash").unlink()  # a save cut short is never loaded
    assert agent_module.MemoryAgent().user_ready(ana, result) is False
