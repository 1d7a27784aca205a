"""Cassette keys, staleness messages, atomic save and orphans (pure parts)."""

from __future__ import annotations

import json
import os

import pytest

from pytest_evalcases.core.errors import CassetteError, StaleRecording
from pytest_evalcases.core.hashing import content_hash, value_label
from pytest_evalcases.store.cassette import build_cassette, load_cassette
from pytest_evalcases.store.folders import find_orphans
from pytest_evalcases.store.keys import (
    changed_fields,
    check_key,
    recording_key,
    stored_labels,
    suite_key_fields,
    suite_key_labels,
)
from pytest_evalcases.store.pair import RecordingPair


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


def test_labels_replace_hashes_where_they_read_differently():
    old = {
        "fingerprint.model": "aaaaaa11",
        "data/kb.txt": "bbbbbb11",
        "gone": "cccccc11",
        "judge": "dddddd11",
        "judge_version": "eeeeee11",
        "long": "ffffff11",
    }
    new = {
        "fingerprint.model": "aaaaaa22",
        "data/kb.txt": "bbbbbb22",
        "added": "111111aa",
        "judge": "dddddd22",
        "judge_version": "eeeeee22",
        "long": "ffffff22",
    }
    old_labels = {
        "fingerprint.model": '"echo-1"',
        "data/kb.txt": "data/kb.txt",
        "gone": '"x"',
        "judge": "lexical",
        "judge_version": "lexical-1",
    }
    new_labels = {
        "fingerprint.model": '"echo-2"',
        "data/kb.txt": "data/kb.txt",
        "added": "0.2",
        "judge": "openai:m",
        "judge_version": "deepeval==1",
        "long": '"short now"',
    }
    assert changed_fields(old, new, old_labels, new_labels) == [
        "added added (- -> 0.2)",
        "data/kb.txt changed (bbbbbb -> bbbbbb)",  # the same path on both sides: the hashes
        'fingerprint.model changed ("echo-1" -> "echo-2")',
        'gone removed ("x" -> -)',
        "judge changed (lexical -> openai:m)",  # judge_version follows the judge: not repeated
        'long changed (ffffff -> "short now")',  # no recorded label: its hash
    ]
    # A cassette recorded before labels (None) reads as it always did, judge_version included.
    assert "judge_version changed (eeeeee -> eeeeee)" in changed_fields(old, new, None, new_labels)


def test_check_key_asks_for_labels_only_when_the_key_differs():
    asked = []

    def labels():
        asked.append(1)
        return {"system": "a:b"}, {"system": "a:c"}

    check_key({"system": "1"}, {"system": "1"}, "", "--live", labels=labels)
    assert asked == []
    with pytest.raises(StaleRecording, match=r"system changed \(a:b -> a:c\); told you"):
        check_key(
            {"system": "1"},
            {"system": "2"},
            "",
            "--live",
            labels=labels,
            advice=lambda names: "told you" if names == {"system"} else None,
        )
    assert asked == [1]
    # Fields under `ignore_prefix` never make a key stale, labels or not.
    check_key(
        {"code.x": "1", "a": "2"},
        {"code.x": "9", "a": "2"},
        "",
        "--live",
        ignore_prefix="code.",
        labels=labels,
    )
    assert asked == [1]


def test_value_and_suite_labels():
    assert value_label("gpt-4o") == '"gpt-4o"' and value_label(0.2) == "0.2"
    assert value_label(True) == "true" and value_label("x" * 80) == '"' + "x" * 80 + '"'
    assert value_label("x" * 81) is None and value_label(["a"]) is None
    assert value_label(None) is None
    labels = suite_key_labels(
        "demo.assistant:system",
        ["demo/docs.json"],
        {"prompt": "p" * 200, "model": "m", "tools": ["a"], "huge": "h" * 9000},
        {"code.demo.assistant": "demo/assistant.py"},
    )
    assert labels == {  # a long prompt and a list keep their text, for a word diff; not "huge"
        "system": "demo.assistant:system",
        "demo/docs.json": "demo/docs.json",
        "fingerprint.model": '"m"',
        "fingerprint.prompt": '"' + "p" * 200 + '"',
        "fingerprint.tools": '["a"]',
        "code.demo.assistant": "demo/assistant.py",
    }
    doc = {"key": {"system": "a:b", "bad": 3}, "verdicts": {"x": {"judge": "j"}}}
    assert stored_labels(doc, "key") == {"system": "a:b"}  # a hand-edited non-string is skipped
    assert stored_labels(doc, "verdicts", "x") == {"judge": "j"}
    assert stored_labels(None, "key") is None and stored_labels(doc, "verdicts", "y") is None


def save_cassette(path, doc):
    RecordingPair.of_case(path.parent.parent, path.parent.name, path.stem).write(doc, path.parent)


def test_save_is_atomic_sorted_and_loads_back(tmp_path):
    path = tmp_path / "suite" / "case.json"
    doc = build_cassette("suite", "case", {"b": "2", "a": "1"}, {"answer": "x"}, {})
    save_cassette(path, doc)
    text = path.read_text()
    assert text.index('"a"') < text.index('"b"') and text.endswith("\n")
    assert load_cassette(path).trace == {"answer": "x"}
    assert [p.name for p in path.parent.iterdir()] == ["case.json"]


def test_failed_write_keeps_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "s" / "case.json"
    save_cassette(path, build_cassette("s", "case", {}, {"answer": "old"}, {}))
    before = path.read_bytes()

    def boom(*args):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(CassetteError, match="could not write cassette case.json: disk full"):
        save_cassette(path, build_cassette("s", "case", {}, {"answer": "new"}, {}))
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == ["case.json"]


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
    doc = build_cassette("s", "c", {}, {"answer": "x"}, {"faithfulness": {"score": 0.5}}).to_doc()
    edit(doc)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(CassetteError, match=message) as error:
        load_cassette(path)
    assert "c.json" in str(error.value)


def test_a_newer_cassette_is_its_own_error(tmp_path):
    from pytest_evalcases.core.errors import NewerCassette

    path = tmp_path / "c.json"
    doc = build_cassette("s", "c", {}, {"answer": "x"}, {}).to_doc()
    path.write_text(json.dumps({**doc, "format": 3}))
    with pytest.raises(NewerCassette, match="upgrade pytest-evalcases"):
        load_cassette(path)


def test_a_folder_in_place_of_a_cassette_names_it(tmp_path):
    (tmp_path / "c.json").mkdir()
    with pytest.raises(CassetteError, match="cassette .*c.json is a directory, not a regular"):
        load_cassette(tmp_path / "c.json")


def test_content_hashes_refuse_a_hand_edit():
    doc = build_cassette(
        "s",
        "c",
        {},
        {"answer": "x", "tool_calls": []},
        {"faithfulness": {"score": 0.5}, "answer_relevancy": {"score": 1.0}},
    )
    doc.check_integrity("c.json", None)  # as written: accepted
    doc.trace["tool_calls"] = "search"
    with pytest.raises(CassetteError, match=r"edited by hand: trace changed \(c.json\)"):
        doc.check_integrity("c.json", None)
    doc.trace["tool_calls"] = []
    doc.verdicts["faithfulness"]["score"] = 1.0
    assert doc.edited_verdicts() == ["faithfulness"]
    with pytest.raises(CassetteError, match="verdict faithfulness changed"):
        doc.check_integrity("c.json", None)
    doc.check_integrity("c.json", None, verdicts=False)  # --live-judges needs only the trace
