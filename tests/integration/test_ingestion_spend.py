"""What an ingestion spent and what goes wrong around it (issue 23; found by a second hostile
read, each failing on the code before its fix): --eval-budget counts an ingestion that paid and
then failed, under --live and --eval-ingest-only; a lock folder that cannot be made means no
turns, not an error; a failed write of the recording names the file, not setup_user."""

from __future__ import annotations

import pytest
from evalhelpers import Project, output, run_pytest_env
from fact_model import FactModel

from pytest_evalcases.store.pair import LOCK_FOLDER_NAME

from .test_ingestion_recorded import extracting_project

READY_FAILS_FOR_ANA = """
    def ready(self, user, result):
        if user.id == "u-ana":
            raise RuntimeError("the graph build failed")
        return True
"""


def ready_failing_for_ana(project: Project, model: FactModel) -> None:
    """Ana's setup_user sends her two chat lines (14 prompt + 6 completion tokens of
    gpt-4o-mini: $0.0000057), then her ready() raises: the ingestion fails after it paid."""
    extracting_project(project, model)
    source = (project.root / "memsys.py").read_text()
    project.write_text(
        "memsys.py",
        source.replace(
            "\n    def run(self, case):", READY_FAILS_FOR_ANA + "\n    def run(self, case):"
        ),
    )


def test_the_budget_counts_what_a_failed_ingestion_spent(
    project: Project, model: FactModel
) -> None:
    ready_failing_for_ana(project, model)

    live = project.run("--live", "--eval-budget", "0.000001", "--eval-concurrency", "1")

    assert "--eval-budget $0.000001 reached" in output(live)
    assert model.requests == 2  # Ana's two lines; Bo's ingestion not started (today: 3)


def test_ingest_only_counts_what_a_failed_ingestion_spent(
    project: Project, model: FactModel
) -> None:
    ready_failing_for_ana(project, model)

    run = project.run("--eval-ingest-only", "--eval-budget", "0.000001")

    assert "memory::u-bo: not ingested: --eval-budget $0.000001 reached" in output(run)
    assert model.requests == 2  # today: 3, Bo ingested after Ana spent over the budget


def test_a_lock_folder_that_is_not_a_real_folder_is_our_clear_error(
    project: Project, model: FactModel, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # As on a shared machine where another account put something at
    # /tmp/pytest-evalcases-locks-<uid> first: never used (issue 30), never blamed on the system.
    temp = tmp_path_factory.mktemp("temp")
    (temp / LOCK_FOLDER_NAME).write_text("not a folder")
    extracting_project(project, model, user_ready=True)

    live, _ = run_pytest_env(
        project.root, "--live", "-p", "no:cacheprovider", env={"TMPDIR": str(temp)}
    )

    text = "\n".join(live.outlines)
    assert live.ret != 0, text
    assert f"{temp / LOCK_FOLDER_NAME} is not a folder" in text, text
    assert "set TMPDIR to a folder of your own" in text
    assert "setup_user('u-ana') of suite 'memory' raised" not in text
    assert (temp / LOCK_FOLDER_NAME).read_text() == "not a folder"


def test_a_failed_write_of_the_recording_is_not_blamed_on_setup_user(
    project: Project, model: FactModel
) -> None:
    extracting_project(project, model)
    project.write_text("cassettes/memory/users", "a file where the users folder goes")

    live = project.run("--live")

    assert "cassettes/memory/users" in output(live)
    assert "setup_user('u-ana') of suite 'memory' raised" not in output(live)
