"""The authored input manifest (issue 32 part 9), the pure parts: reading and checking the
file, the split, the comparison with a run's configuration (as the lock reads it), the values
handed to the system and the key fields of those the fingerprint does not declare."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_evalcases.manifest import ManifestError, config_differences
from pytest_evalcases.manifest.authored import (
    input_differences,
    input_refusal,
    load_input_manifest,
    parse_input_manifest,
    run_config_key_fields,
)
from pytest_evalcases.manifest.config import readable
from pytest_evalcases.telemetry.phases import PhaseLog, listen, manifest_tags, timed

LONG_PROMPT = "Answer from the retrieved facts only; say so when they do not hold the answer. " * 2


def suite_entry(fingerprint: dict, judge: str = "lexical") -> dict:
    return {
        "system": "memsys:system",
        "judge": judge,
        "fingerprint": {name: readable(value) for name, value in fingerprint.items()},
    }


def project(**suites: dict) -> dict:
    return {"suites": suites, "unloadable": {}, "versions": {}}


def test_equal_values_and_undeclared_names_are_no_difference() -> None:
    manifest = parse_input_manifest(
        {"seed": 7, "models": {"model": "gpt-4o-mini", "embedding_model": "te-3-small"}}, "m.json"
    )
    config = project(memory=suite_entry({"model": "gpt-4o-mini", "k": 5}))
    assert input_differences(manifest, config, {"memory": (["q1"], [None])}) == []


def test_each_differing_field_names_both_values_and_the_next_step() -> None:
    manifest = parse_input_manifest(
        {
            "seed": 7,
            "language": "de",
            "prompt_versions": {"answer_prompt": LONG_PROMPT},
            "models": {"model": "gpt-4o-mini", "judge": "openai:gpt-4o-mini"},
        },
        "m.json",
    )
    fingerprint = {"seed": 7, "language": "en", "answer_prompt": "short", "model": "gpt-4o"}
    config = project(memory=suite_entry(fingerprint))

    lines = [d.line() for d in input_differences(manifest, config, {"memory": ([], [])})]

    assert lines == [
        'suite memory: language: the manifest fixes "de", this run has "en" (fingerprint().'
        'language of memsys:system); make the system\'s fingerprint() return "de" for '
        "'language' (its config or prompt file), or change the manifest if the change is meant",
        f"suite memory: prompt_versions.answer_prompt: the manifest fixes hash "
        f'{readable(LONG_PROMPT)["hash"][:6]}, this run has "short" (fingerprint().'
        "answer_prompt of memsys:system); make the system's fingerprint() return "
        '"Answer from the retrieved facts only; say so when they do not hold the answer.… '
        "for 'answer_prompt' (its config or prompt file), or change the manifest if the change "
        "is meant",
        'suite memory: models.model: the manifest fixes "gpt-4o-mini", this run has "gpt-4o" '
        "(fingerprint().model of memsys:system); make the system's fingerprint() return "
        "\"gpt-4o-mini\" for 'model' (its config or prompt file), or change the manifest if the "
        "change is meant",
        'suite memory: models.judge: the manifest fixes "openai:gpt-4o-mini", this run has '
        '"lexical" (the judge this suite runs with); run with --eval-judge openai:gpt-4o-mini '
        "(or set it as the suite's or ini eval_judge), or change the manifest",
    ]


def test_a_long_fixed_value_matches_the_hash_the_run_manifest_keeps() -> None:
    manifest = parse_input_manifest({"prompt_versions": {"prompt": LONG_PROMPT}}, "m.json")
    config = project(memory=suite_entry({"prompt": LONG_PROMPT}))
    assert input_differences(manifest, config, {}) == []


def test_the_split_admits_and_names_what_does_not_exist() -> None:
    manifest = parse_input_manifest(
        {"split": {"suites": ["memory"], "categories": ["multi_hop"], "ids": ["q2", "q3"]}},
        "m.json",
    )
    assert manifest.admits("memory", "q2", "multi_hop")
    assert not manifest.admits("memory", "q2", "single_hop")
    assert not manifest.admits("memory", "q1", "multi_hop")
    assert not manifest.admits("docs", "q2", "multi_hop")
    config = project(memory=suite_entry({}), docs=suite_entry({"model": "other"}))
    names = {"memory": (["q1", "q2"], ["single_hop", "multi_hop"]), "docs": (["q3"], [None])}

    lines = [d.line() for d in input_differences(manifest, config, names)]

    # q3 is in docs, outside the split's suites; docs' fingerprint is not compared either
    assert lines == [
        "split: split.ids: the manifest fixes q3, this run has none of it among the split's "
        "suites; fix the name in the manifest, or add the missing case file or case"
    ]


def test_many_missing_names_are_counted() -> None:
    ids = [f"q{n}" for n in range(8)]
    manifest = parse_input_manifest({"split": {"ids": ids}}, "m.json")
    (difference,) = input_differences(manifest, project(), {})
    assert difference.fixed == "q0, q1, q2, q3, q4 and 3 more"
    assert difference.found == "none of them among the split's suites"


def test_calibration_suites_are_not_compared() -> None:
    manifest = parse_input_manifest({"models": {"judge": "openai:gpt-4o"}}, "m.json")
    config = project(cal={"kind": "calibration", "judge": "lexical"})
    assert input_differences(manifest, config, {}) == []


def test_the_refusal_counts_lists_and_says_what_to_do() -> None:
    manifest = parse_input_manifest({"seed": 1}, "m.json")
    differences = input_differences(manifest, project(s=suite_entry({"seed": 2})), {})
    text = input_refusal("team/m.json", differences)
    assert text.splitlines()[0] == (
        "--eval-input-manifest team/m.json: this run differs from the authored manifest in 1 "
        "place; nothing ran:"
    )
    assert text.splitlines()[1].startswith("  suite s: seed: the manifest fixes 1, this run has 2")
    assert "edit the manifest (and commit it) if the change is meant" in text.splitlines()[-1]


def test_run_config_and_the_key_fields_of_undeclared_values() -> None:
    manifest = parse_input_manifest(
        {
            "name": "q4",
            "seed": 7,
            "language": "en",
            "prompt_versions": {"answer_prompt": "v3"},
            "models": {"model": "gpt-4o-mini", "judge": "lexical"},
        },
        "m.json",
    )
    assert manifest.run_config() == {
        "name": "q4",
        "seed": 7,
        "language": "en",
        "prompt_versions": {"answer_prompt": "v3"},
        "models": {"model": "gpt-4o-mini", "judge": "lexical"},
    }
    fields, values = run_config_key_fields(manifest, {"model": "gpt-4o-mini"})
    assert values == {
        "run_config.seed": 7,
        "run_config.language": "en",
        "run_config.answer_prompt": "v3",
    }  # model: keyed by the fingerprint already; judge: per verdict
    assert set(fields) == set(values) and len(set(fields.values())) == 3


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ([], "not a JSON object"),
        ({"seeds": 1}, "unknown field 'seeds' (known: format, version, name, seed,"),
        ({"format": "other"}, "\"format\" is 'other', not 'pytest-evalcases/input-manifest'"),
        ({"seed": 1.5}, '"seed" must be an integer or a string, got 1.5'),
        ({"seed": True}, '"seed" must be an integer or a string, got True'),
        ({"language": ""}, '"language" must be a non-empty string'),
        ({"models": {"model": ["a"]}}, '"models" must map names to strings or numbers'),
        ({"models": {"seed": "x"}, "seed": 1}, "'seed' fixed twice (each name once)"),
        ({"prompt_versions": {"judge": "v1"}}, '"judge" belongs under "models"'),
        ({"split": ["a"]}, '"split" must be an object with suites, categories, ids'),
        ({"split": {"id": ["a"]}}, "\"split\" has unknown field 'id'"),
        ({"split": {"ids": []}}, '"split.ids" must be a non-empty list of strings, got []'),
    ],
)
def test_a_bad_manifest_names_the_file_and_the_field(doc: object, message: str) -> None:
    with pytest.raises(ManifestError) as raised:
        parse_input_manifest(doc, "team/m.json")
    text = str(raised.value)
    assert text.startswith("--eval-input-manifest team/m.json: ") and message in text
    assert text.endswith("fix the file, or run without --eval-input-manifest")


def test_a_newer_version_asks_for_an_upgrade() -> None:
    with pytest.raises(ManifestError, match="version 2 is not one this plugin reads"):
        parse_input_manifest({"version": 2}, "m.json")


def test_loading_names_a_missing_fifo_or_broken_file(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="m.json: no such file; write one"):
        load_input_manifest(tmp_path / "m.json", "m.json")
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ManifestError, match="bad.json: not valid JSON at line 1"):
        load_input_manifest(tmp_path / "bad.json", "bad.json")
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    with pytest.raises(ManifestError, match="nothing was read from it"):
        load_input_manifest(fifo, "fifo.json")
    (tmp_path / "ok.json").write_text(json.dumps({"seed": 3}))
    loaded = load_input_manifest(tmp_path / "ok.json", "ok.json")
    assert (
        loaded.seed == 3 and loaded.file == "ok.json" and loaded.record()["values"] == {"seed": 3}
    )


def test_the_lock_compares_the_authored_values_not_the_path() -> None:
    old = {"input": {"file": "a/m.json", "hash": "1", "values": {"seed": 7}}}
    new = {"input": {"file": "./a/m.json", "hash": "2", "values": {"seed": 8}}}
    assert config_differences(old, new) == ["input.seed: 7 -> 8"]
    assert config_differences({}, {"input": {"values": {"seed": 7}}}) == ["input.seed: (none) -> 7"]
    same = {"input": {"file": "x", "hash": "3", "values": {"seed": 7}}}
    assert config_differences(old, same) == []


def test_the_manifests_tags_for_the_telemetry_spans() -> None:
    manifest = parse_input_manifest(
        {"name": "q4", "language": "de", "prompt_versions": {"answer": "v2"}}, "m.json"
    )
    assert manifest_tags(manifest.values(), manifest.hash) == {
        "evalcases.language": "de",
        "evalcases.prompt_version.answer": "v2",
        "evalcases.prompt_version": "v2",  # one prompt version: also under the plain name
        "evalcases.manifest.name": "q4",
        "evalcases.manifest.hash": manifest.hash,
    }
    two = parse_input_manifest({"prompt_versions": {"a": "v1", "b": "v2"}}, "m.json")
    assert manifest_tags(two.values()) == {
        "evalcases.prompt_version.a": "v1",
        "evalcases.prompt_version.b": "v2",
    }
    assert manifest_tags(None) == {}


def test_phases_are_timed_only_while_an_export_listens() -> None:
    with timed("ingestion", "memory/u-ana", suite="memory") as notes:
        assert notes == {}  # nobody listens: nothing is kept
    log = PhaseLog()
    listen(log)
    try:
        with timed("ingestion", "memory/u-ana", suite="memory") as notes:
            notes["ingestion.source"] = "recorded"
        with pytest.raises(RuntimeError), timed("ingestion", "memory/u-bo", suite="memory"):
            raise RuntimeError("the graph build failed")
    finally:
        listen(None)
    ana, bo = log.taken()
    assert (ana.phase, ana.name, ana.error) == ("ingestion", "memory/u-ana", None)
    assert ana.attributes == {"suite": "memory", "ingestion.source": "recorded"}
    assert ana.started_ns <= ana.ended_ns
    assert bo.error == "RuntimeError: the graph build failed"
    assert log.taken() == []
