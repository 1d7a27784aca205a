"""End to end: orphaned recordings (a cassette or `<id>.http.json` whose case or suite is gone).
A `--live` run deletes the orphans of each suite it selected every case of, whatever selected
them (a path, -k, xdist or not); those of a gone suite only when it selected everything.
`--live-prune` deletes every orphan, lists them, and runs nothing."""

from __future__ import annotations

import pytest
from evalhelpers import Project, make_case, output, record_template, suite_doc, summary_section

SUITE_ORPHANS = ["cassettes/suite/epsilon.http.json", "cassettes/suite/epsilon.json"]
SECOND_ORPHANS = ["cassettes/second/two.http.json", "cassettes/second/two.json"]
GONE_ORPHANS = ["cassettes/gone-suite/old.json"]
ALL_ORPHANS = sorted(GONE_ORPHANS + SECOND_ORPHANS + SUITE_ORPHANS)


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """Two suites recorded; then one case of each removed, and a gone suite's cassette added."""
    project = record_template(
        tmp_path_factory.mktemp("orphans"),
        suite_doc(),
        suite_doc(
            "second",
            system="othersys:system",
            cases=[make_case("one", "one x"), make_case("two", "two x")],
        ),
    )
    project.edit_suite("cases/suite.json", lambda doc: doc["cases"].pop())  # epsilon
    project.edit_suite("cases/second.json", lambda doc: doc["cases"].pop())  # two
    project.write_text(
        "cassettes/gone-suite/old.json", project.cassette_path("suite", "alpha").read_text()
    )
    return project


@pytest.fixture
def copied(project: Project, template: Project) -> Project:
    project.copy_from(template.root)
    return project


def existing(project: Project) -> list[str]:
    return sorted(path for path in ALL_ORPHANS if (project.root / path).exists())


def recordings_line(result: pytest.RunResult) -> str:
    return next(line for line in summary_section(result) if line.startswith("recordings:"))


def orphan_lines(result: pytest.RunResult) -> list[str]:
    return [line.strip() for line in summary_section(result) if line.startswith("  orphan: ")]


def test_a_replay_lists_orphans_and_names_the_way_to_delete_them(copied: Project) -> None:
    result = copied.run()

    result.assert_outcomes(passed=3)
    assert orphan_lines(result) == [f"orphan: {path}" for path in ALL_ORPHANS]
    assert recordings_line(result).endswith(
        "5 orphaned (--live-prune deletes them, as does a --live run that selects every case "
        "of their suite)"
    )
    assert existing(copied) == ALL_ORPHANS


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
@pytest.mark.parametrize(
    "selection", [["cases/suite.json"], ["-k", "alpha or gamma"]], ids=["path", "keyword"]
)
def test_a_live_run_deletes_the_orphans_of_the_suites_it_selected_whole(
    copied: Project, selection: list[str], xdist: list[str]
) -> None:
    result = copied.run("--live", *selection, *xdist)

    deselected = 1 if "-k" in selection and not xdist else 0  # xdist does not count them
    result.assert_outcomes(passed=2, deselected=deselected)
    assert existing(copied) == sorted(GONE_ORPHANS + SECOND_ORPHANS)
    assert orphan_lines(result) == [
        f"orphan: {path}" + (" (deleted)" if path in SUITE_ORPHANS else "") for path in ALL_ORPHANS
    ]
    assert recordings_line(result).endswith(
        "5 orphaned (2 deleted: this --live run selected every case of their suites; "
        "--live-prune deletes the rest)"
    )


def test_a_live_run_of_part_of_a_suite_deletes_nothing(copied: Project) -> None:
    result = copied.run("--live", "-k", "alpha or one")

    result.assert_outcomes(passed=2, deselected=1)  # `second` is whole, `suite` is not
    assert existing(copied) == sorted(GONE_ORPHANS + SUITE_ORPHANS)


@pytest.mark.parametrize("xdist", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_live_run_of_everything_deletes_a_gone_suite_too(
    copied: Project, xdist: list[str]
) -> None:
    result = copied.run("--live", *xdist)

    result.assert_outcomes(passed=3)
    assert existing(copied) == []
    assert not (copied.root / "cassettes/gone-suite").exists()
    assert recordings_line(result).endswith(
        "5 orphaned (deleted: this --live run selected every case of their suites)"
    )


def test_live_prune_deletes_every_orphan_records_nothing_and_lists_them(copied: Project) -> None:
    before = copied.files(http=True)

    result = copied.run("--live-prune", "-k", "alpha")  # a selection changes nothing

    assert result.ret == pytest.ExitCode.OK, output(result)
    assert result.outlines[:6] == [
        "--live-prune: deleted 5 orphaned recordings:",
        *(f"  {path}" for path in ALL_ORPHANS),
    ]
    assert existing(copied) == []
    assert not (copied.root / "cassettes/gone-suite").exists()
    after = copied.files(http=True)
    assert after == {path: kept for path, kept in before.items() if path not in ALL_ORPHANS}
    assert copied.calls() == []  # no system ran, not even setup

    again = copied.run("--live-prune")

    assert again.outlines == ["--live-prune: deleted 0 orphaned recordings (none under cassettes)"]


def test_live_prune_with_a_recording_flag_is_a_usage_error(copied: Project) -> None:
    result = copied.run("--live-prune", "--live")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert (
        "--live-prune deletes orphaned recordings and runs nothing; it cannot be combined "
        "with --live" in output(result)
    )
    assert existing(copied) == ALL_ORPHANS


def test_live_prune_deletes_nothing_while_a_case_file_cannot_be_read(copied: Project) -> None:
    copied.write_text("cases/broken.json", "{not json")

    result = copied.run("--live-prune")

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert "cannot read the case file(s) cases/broken.json" in output(result)
    assert existing(copied) == ALL_ORPHANS


def test_a_suite_behind_a_symlinked_case_folder_is_not_orphaned(
    project: Project, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """pytest collects the case files behind a symlinked folder under `cases/`: the orphan scan
    reads them too, so a full `--live` does not delete the recordings it has just made."""
    elsewhere = tmp_path_factory.mktemp("shared-cases")
    Project(elsewhere).write_suite(suite_doc("linked"), "linked.json")
    project.write_suite(suite_doc())
    (project.root / "cases" / "shared").symlink_to(elsewhere, target_is_directory=True)

    result = project.run("--live")

    result.assert_outcomes(passed=6)
    assert recordings_line(result).endswith(", 0 orphaned")
    assert project.cassette_path("linked", "alpha").exists()
    assert project.run("--live-prune").ret == 0
    assert project.cassette_path("linked", "alpha").exists()
