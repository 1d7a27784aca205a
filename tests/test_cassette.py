"""Cassette keys, staleness messages, atomic save and orphans (pure parts)."""

from __future__ import annotations

import json
import os

import pytest

from pytest_evalcases.cassette import (
    build_cassette,
    changed_fields,
    check_key,
    content_hash,
    find_orphans,
    load_cassette,
    recording_key,
    save_cassette,
    suite_key_fields,
)
from pytest_evalcases.errors import CassetteError, StaleRecording


def test_content_hash_ignores_key_order_and_sees_values():
    assert content_hash({"a": 1, "b": [1, 2]}) == content_hash({"b": [1, 2], "a": 1})
    assert content_hash({"a": 1}) != content_hash({"a": 2})
    assert len(content_hash("x")) == 16


def test_key_names_each_input():
    fields = suite_key_fields("demo:system", {"demo/docs.json": "f" * 16}, {"prompt": "p", "k": 3})
    key = recording_key(fields, {"input": "q", "tenant": "t1"})
    assert set(key) == {
        "format",
        "system",
        "demo/docs.json",
        "fingerprint.prompt",
        "fingerprint.k",
        "case",
    }
    assert key["case"] != recording_key(fields, {"input": "q", "tenant": "t2"})["case"]


def test_changed_fields_message_names_old_and_new():
    old = {"case": "aaaaaa111", "fingerprint.prompt": "3f2a91xx", "gone": "123456"}
    new = {"case": "aaaaaa111", "fingerprint.prompt": "77c0d2yy", "added": "abcdef"}
    assert changed_fields(old, new) == [
        "added added (- -> abcdef)",
        "fingerprint.prompt changed (3f2a91 -> 77c0d2)",
        "gone removed (123456 -> -)",
    ]
    with pytest.raises(
        StaleRecording,
        match=r"stale recording: .*fingerprint.prompt changed \(3f2a91 -> 77c0d2\)"
        r".*re-record with --live",
    ):
        check_key(old, new, "", "--live")
    check_key(new, new, "", "--live")  # no raise


def test_save_is_atomic_sorted_and_loads_back(tmp_path):
    path = tmp_path / "suite" / "case.json"
    doc = build_cassette("suite", "case", {"b": "2", "a": "1"}, {"answer": "x"}, {})
    save_cassette(path, doc)
    text = path.read_text()
    assert text.index('"a"') < text.index('"b"') and text.endswith("\n")
    assert load_cassette(path)["trace"] == {"answer": "x"}
    assert [p.name for p in path.parent.iterdir()] == ["case.json"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "case.json"
    save_cassette(path, build_cassette("s", "case", {}, {"answer": "old"}, {}))
    before = path.read_bytes()

    def boom(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        save_cassette(path, build_cassette("s", "case", {}, {"answer": "new"}, {}))
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["case.json"]


def test_load_errors_name_the_file(tmp_path):
    assert load_cassette(tmp_path / "none.json") is None
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(CassetteError, match="bad.json is not valid JSON"):
        load_cassette(bad)
    bad.write_text(json.dumps([1, 2]))
    with pytest.raises(CassetteError, match="bad.json is not a recording"):
        load_cassette(bad)


def test_orphans(tmp_path):
    for rel in ("s1/a.json", "s1/b.json", "gone/x.json", "s1/a.json.tmp.12"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    orphans = find_orphans(tmp_path, {"s1": ["a"]})
    assert [p.relative_to(tmp_path).as_posix() for p in orphans] == ["gone/x.json", "s1/b.json"]
    assert find_orphans(tmp_path / "missing", {}) == []


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda doc: doc["verdicts"]["faithfulness"].update(score="high"), "malformed verdict"),
        (lambda doc: doc["verdicts"]["faithfulness"].update(score=5.0), "malformed verdict"),
        (lambda doc: doc["verdicts"]["faithfulness"].update(score=True), "malformed verdict"),
        (lambda doc: doc.update(verdicts={"faithfulness": "pass"}), "malformed verdict"),
        (lambda doc: doc.update(key="abc"), "'key' that is not an object"),
        (lambda doc: doc.update(format=99), r"newer pytest-evalcases \(cassette format 99"),
    ],
)
def test_a_cassette_is_checked_on_load(tmp_path, edit, message):
    doc = build_cassette("s", "c", {}, {"answer": "x"}, {"faithfulness": {"score": 0.5}})
    edit(doc)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CassetteError, match=message) as error:
        load_cassette(path)
    assert "c.json" in str(error.value)


def test_a_newer_cassette_is_its_own_error(tmp_path):
    from pytest_evalcases.errors import NewerCassette

    path = tmp_path / "c.json"
    path.write_text(json.dumps({**build_cassette("s", "c", {}, {"answer": "x"}, {}), "format": 3}))
    with pytest.raises(NewerCassette, match="upgrade pytest-evalcases"):
        load_cassette(path)


def test_a_folder_in_place_of_a_cassette_names_it(tmp_path):
    (tmp_path / "c.json").mkdir()
    with pytest.raises(CassetteError, match="cannot read cassette .*c.json"):
        load_cassette(tmp_path / "c.json")


def test_content_hashes_refuse_a_hand_edit():
    from pytest_evalcases.cassette import check_integrity, edited_verdicts

    doc = build_cassette("s", "c", {}, {"answer": "x", "tool_calls": []},
                         {"faithfulness": {"score": 0.5}, "answer_relevancy": {"score": 1.0}})
    check_integrity(doc, "c.json")  # as written: accepted
    doc["trace"]["tool_calls"] = "search"
    with pytest.raises(CassetteError, match=r"edited by hand: trace changed \(c.json\)"):
        check_integrity(doc, "c.json")
    doc["trace"]["tool_calls"] = []
    doc["verdicts"]["faithfulness"]["score"] = 1.0
    assert edited_verdicts(doc) == ["faithfulness"]
    with pytest.raises(CassetteError, match="verdict faithfulness changed"):
        check_integrity(doc, "c.json")
    check_integrity(doc, "c.json", verdicts=False)  # --live-judges needs only the trace
