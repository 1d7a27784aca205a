"""SystemOnDemand: the system a fixture builds, built once on first need and never to read its
key (collection asks for fingerprint() and builds nothing)."""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.domain.system import SystemOnDemand, fixture_name


class Agent:
    def __init__(self) -> None:
        self.set_up: list[str] = []

    def setup(self, suite: Any) -> None:
        self.set_up.append(suite.name)

    def fingerprint(self) -> dict[str, str]:  # not read: the fixture's code is keyed instead
        return {"prompt": "never asked"}

    def run(self, case: Any) -> dict[str, str]:
        return {"answer": case["input"]}


def counting_builder(made: list[Agent], error: BaseException | None = None) -> Any:
    def build() -> Agent:
        if error is not None:
            made.append(Agent())
            raise error
        made.append(Agent())
        return made[-1]

    return build


def test_fixture_name_reads_only_the_fixture_form() -> None:
    assert fixture_name("fixture:support_agent") == "support_agent"
    assert fixture_name("agent.system:system") is None


def test_nothing_is_built_to_read_the_fingerprint() -> None:
    made: list[Agent] = []
    system = SystemOnDemand("fixture:agent", counting_builder(made))

    assert system.fingerprint() == {}
    assert not system.built and made == []


def test_setup_builds_it_once_then_runs_the_built_object() -> None:
    made: list[Agent] = []
    system = SystemOnDemand("fixture:agent", counting_builder(made))
    suite = SimpleNamespace(name="orders")

    threads = [threading.Thread(target=system.setup, args=(suite,)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len(made) == 1 and system.built
    assert made[0].set_up == ["orders"]
    assert system.target is made[0]
    assert system.call({"input": "hi"}) == {"answer": "hi"}


def test_a_build_error_is_every_later_callers_without_building_again() -> None:
    made: list[Agent] = []
    system = SystemOnDemand("fixture:agent", counting_builder(made, RuntimeError("db down")))

    for _ in range(3):
        with pytest.raises(RuntimeError, match="db down"):
            system.setup(SimpleNamespace(name="orders"))
    assert len(made) == 1 and not system.built


def test_a_value_with_no_run_is_refused_by_the_build() -> None:
    system = SystemOnDemand("fixture:agent", lambda: 42)

    with pytest.raises(CaseFileError, match="fixture:agent.*no run\\(case\\) method"):
        system.build()
