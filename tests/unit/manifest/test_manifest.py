"""The run manifest (issue 13 §2), the pure parts: readable values and hashes, the differences a
locked configuration names, the document checks, the run id merged shards share."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_evalcases.manifest import (
    ManifestError,
    config_differences,
    load_manifest,
    manifest_document,
    readable,
)


def test_readable_values_and_hashes() -> None:
    assert readable("gpt-4o-mini") == "gpt-4o-mini"
    assert readable(0.2) == 0.2 and readable(3) == 3 and readable(True) is True
    assert readable(None) is None
    assert set(readable("x" * 81)) == {"hash"} and readable("x" * 80) == "x" * 80
    assert set(readable({"a": 1})) == {"hash"} and set(readable([1, 2])) == {"hash"}
    assert readable({"a": 1}) == readable({"a": 1})
    assert readable("x" * 81) != readable("y" * 81)


def test_config_differences_name_each_change() -> None:
    locked = {
        "suites": {
            "s": {
                "fingerprint": {"model": "a", "prompt": {"hash": "0" * 16}},
                "inputs": {"d.json": "1" * 16},
                "stages": ["tools"],
            },
            "gone": {},
        },
        "unloadable": {},
        "versions": {"deepeval": "3.0"},
        "git": {"commit": "abc", "dirty": False},
    }
    current = {
        "suites": {
            "s": {
                "fingerprint": {"model": "b", "prompt": {"hash": "2" * 16}, "seed": 7},
                "inputs": {"d.json": "3" * 16},
                "stages": ["tools", "retrieval"],
            },
            "new": {},
        },
        "unloadable": {"cases/bad.json": "invalid JSON"},
        "versions": {"deepeval": "3.1"},
        "git": {"commit": "def", "dirty": True},
    }
    assert config_differences(locked, current) == [
        "suite gone: in the manifest, not in the case folders now",
        "suite new: not in the manifest (a new suite)",
        'suite s: fingerprint.model: "a" -> "b"',
        "suite s: fingerprint.prompt: hash 000000 -> hash 222222",
        "suite s: fingerprint.seed: (none) -> 7",
        "suite s: inputs.d.json: 111111 -> 333333",
        'suite s: stages: ["tools"] -> ["tools", "retrieval"]',
        "cases/bad.json: does not load now (invalid JSON)",
        'versions.deepeval: "3.0" -> "3.1"',
    ]  # the git commit is recorded, not locked
    assert config_differences(current, current) == []


def test_load_manifest_checks_the_document(tmp_path: Path) -> None:
    path = tmp_path / "m.json"
    for text, words in (
        ("{", "not valid JSON"),
        ('{"format": "x"}', "not a pytest-evalcases manifest"),
    ):
        path.write_text(text)
        with pytest.raises(ManifestError, match=f"^--eval-manifest m.json: {words}"):
            load_manifest(path, "m.json")
    path.write_text(
        json.dumps(
            manifest_document("id-1", "2026-01-01T00:00:00Z", {"suites": {}, "versions": {}})
        )
    )
    assert load_manifest(path)["run_id"] == "id-1"
    path.write_text(
        json.dumps({"format": "pytest-evalcases/manifest", "version": 99, "config": {"suites": {}}})
    )
    with pytest.raises(ManifestError, match="manifest version 99 .* upgrade pytest-evalcases"):
        load_manifest(path)
    path.write_text(json.dumps({"format": "pytest-evalcases/results", "run": {}}))
    with pytest.raises(ManifestError, match='no "config" with "suites"'):
        load_manifest(path)


def test_merged_shards_keep_the_run_id_they_share() -> None:
    from pytest_evalcases.report import aggregate, merge_results

    def shard(nodeid: str, run_id: str) -> dict:
        case = {"nodeid": nodeid, "suite": "s", "id": nodeid, "outcome": "passed", "stages": {}}
        return aggregate([case], {"run_id": run_id, "config": {"suites": {}}})

    shared = merge_results([shard("a", "ci-1"), shard("b", "ci-1")])
    assert shared["run"]["run_id"] == "ci-1" and shared["run"]["config"] == {"suites": {}}
    apart = merge_results([shard("a", "r1"), shard("b", "r2")])
    assert "run_id" not in apart["run"]
    assert [r["run_id"] for r in apart["run"]["shard_runs"]] == ["r1", "r2"]
