"""report/changes (issue 9): the `recording changes` markdown cannot form links or images."""

from __future__ import annotations


def test_the_recording_changes_markdown_cannot_form_links() -> None:
    from pytest_evalcases.report.changes import RecordingChanges

    changes = RecordingChanges()
    changes.add(
        {
            "suite": "s",
            "id": "a",
            "file": "f",
            "index": 0,
            "outcome": "passed",
            "recording": {
                "status": "recorded",
                "change": {"kind": "changed", "details": ["answer: 'x' -> '![i](http://h/t.png)'"]},
            },
        }
    )
    changes.add(
        {
            "suite": "s",
            "id": "b",
            "file": "f",
            "index": 1,
            "outcome": "skipped",
            "recording": {"status": "not_run", "note": "not run: [x](http://h)"},
        }
    )
    markdown = changes.markdown()
    assert "![i](http" not in markdown and "[x](http" not in markdown
    assert "![i]\\(http://h/t.png)" in markdown
    assert "### Not recorded (1)" in markdown
    assert changes.counts_text() == "0 unchanged, 1 changed, 0 new; 1 not recorded"


def _user_case(case_id: str, user: str, change: dict[str, object] | None) -> dict[str, object]:
    ingestion = {"user": user, "source": "recorded" if change else "reused"}
    if change is not None:
        ingestion["change"] = change
    return {
        "suite": "memory",
        "id": case_id,
        "file": "f",
        "index": 0,
        "outcome": "passed",
        "user": user,
        "recording": {"status": "recorded", "change": {"kind": "unchanged"}},
        "ingestion": ingestion,
    }


def test_an_ingestion_recording_is_listed_once_before_the_cases_and_counted_apart() -> None:
    from pytest_evalcases.report.changes import RecordingChanges

    changes = RecordingChanges()
    ben = {"kind": "changed", "details": ["key changed: user.u-ben"]}
    changes.add(_user_case("ben-car", "u-ben", {"kind": "unchanged"}))  # another worker's
    changes.add(_user_case("ben-tea", "u-ben", ben))
    changes.add(_user_case("ana-cat", "u-ana", {"kind": "unchanged"}))
    changes.add(_user_case("cy-dog", "u-cy", None))  # reused: this run wrote nothing

    assert changes.lines() == [
        "memory::users/u-ben (ingestion changed)",
        "  key changed: user.u-ben",
        "4 unchanged, 0 changed, 0 new; ingestion recordings: 1 unchanged, 1 changed, 0 new",
    ]
    assert "| memory::users/u-ben | ingestion changed | key changed: user.u-ben |" in (
        changes.markdown()
    )
