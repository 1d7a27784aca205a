"""Never touch what is not ours (issue 21, "What to build" 1): orphan deletion (a full `--live`,
`--live-prune`) and the sweep of temp files left by killed runs never follow a symlink under the
cassette folder, never act outside `<eval_cassettes>/<suite>/` resolved inside the rootdir, and
say what they left alone; `--live` does not write through a symlinked suite folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from evalhelpers import Project, error_block, output, suite_doc, summary_section

DEAD_PID = 99_999_999  # over any pid_max: no such process


@pytest.fixture
def recorded(project: Project) -> Project:
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    return project


@pytest.fixture
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder outside the project, holding files that are not the project's."""
    folder = tmp_path_factory.mktemp("elsewhere")
    (folder / "settings.json").write_text('{"mine": true}\n')
    return folder


def left_alone_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith("left alone: ")]
    assert len(lines) == 1, text
    return lines[0]


@pytest.mark.parametrize("command", ["--live", "--live-prune"])
def test_a_symlinked_suite_folder_loses_nothing_to_orphan_deletion(
    recorded: Project, elsewhere: Path, command: str
) -> None:
    """Break: a folder `cassettes/shared` that is a symlink to elsewhere lost its `*.json`
    files to a full `--live` or `--live-prune` (`orphan: cassettes/shared/settings.json
    (deleted)`)."""
    (recorded.root / "cassettes" / "shared").symlink_to(elsewhere, target_is_directory=True)

    result = recorded.run(command)

    assert (elsewhere / "settings.json").read_text() == '{"mine": true}\n', output(result)
    assert "shared/settings.json" not in output(result)
    line = left_alone_line(output(result))
    assert f"cassettes/shared (a symlink to {elsewhere})" in line
    assert "nothing behind it deleted" in line


def test_a_symlinked_cassette_file_is_reported_not_deleted(
    recorded: Project, elsewhere: Path
) -> None:
    """Break: a cassette file that is a symlink (`cassettes/suite/zeta.json` -> a file
    elsewhere) was taken for an orphan and deleted by a full `--live`."""
    link = recorded.root / "cassettes" / "suite" / "zeta.json"
    link.symlink_to(elsewhere / "settings.json")

    result = recorded.run("--live")

    result.assert_outcomes(passed=3)
    assert link.is_symlink() and (elsewhere / "settings.json").exists()
    assert "orphan: cassettes/suite/zeta.json" not in output(result)
    assert "cassettes/suite/zeta.json (a symlink to " in left_alone_line(output(result))


def test_the_temp_file_sweep_does_not_follow_a_symlinked_suite_folder(
    recorded: Project, elsewhere: Path
) -> None:
    """Break: the sweep of `<name>.tmp.<pid>` files left by killed runs walked a symlinked
    suite folder and deleted a dead process's temp file behind it."""
    temp = elsewhere / f"notes.json.tmp.{DEAD_PID}"
    temp.write_text("not ours\n")
    (recorded.root / "cassettes" / "shared").symlink_to(elsewhere, target_is_directory=True)

    result = recorded.run("--live")

    result.assert_outcomes(passed=3)
    assert temp.read_text() == "not ours\n"
    assert "removed 1 temp file" not in output(result)


def test_live_does_not_write_through_a_symlinked_suite_folder(
    project: Project, elsewhere: Path
) -> None:
    """Break: a suite's own cassette folder `cassettes/suite` being a symlink to elsewhere,
    `--live` wrote its recordings (and would replace files) behind it."""
    project.write_suite(suite_doc())
    (project.root / "cassettes").mkdir()
    (project.root / "cassettes" / "suite").symlink_to(elsewhere, target_is_directory=True)

    result = project.run("--live")

    assert result.ret != 0
    assert sorted(p.name for p in elsewhere.iterdir()) == ["settings.json"]
    block = error_block(result, "alpha")
    assert (
        "cannot record alpha.http.json: its cassette folder cassettes/suite is a symlink " in block
    )
    assert f"(to {elsewhere}); pytest-evalcases does not write through it" in block


def test_orphans_of_a_cassette_folder_outside_the_rootdir_are_not_deleted(
    project: Project, elsewhere: Path
) -> None:
    """Break: with the cassette folder itself a symlink to outside the rootdir, a full `--live`
    deleted the `*.json` files there that no case of the project names."""
    (project.root / "cassettes").symlink_to(elsewhere, target_is_directory=True)
    project.write_suite(suite_doc())
    project.run("--live").assert_outcomes(passed=3)
    stranger = elsewhere / "suite" / "stranger.json"
    stranger.write_text('{"mine": true}\n')

    result = project.run("--live")

    result.assert_outcomes(passed=3)
    assert stranger.exists()
    recordings = next(line for line in summary_section(result) if line.startswith("recordings:"))
    assert recordings.endswith(
        f"1 orphaned (not deleted: the cassette folder resolves to {elsewhere.resolve()}, "
        "outside the rootdir: pytest-evalcases deletes nothing there)"
    )
    assert os.path.islink(project.root / "cassettes")
