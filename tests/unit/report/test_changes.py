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
    assert "\\!\\[i\\]\\(http://h/t.png\\)" in markdown
    assert "### Not recorded (1)" in markdown
    assert changes.counts_text() == "0 unchanged, 1 changed, 0 new; 1 not recorded"
