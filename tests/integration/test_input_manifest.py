"""The authored input manifest (issue 32 part 9, Episteme's manifest as an input): a file a team
writes that fixes the seed, split, language, prompt versions and model names before a run. The
run refuses to start when it differs (each field, both values, the next step), hands the values
to the system as `case.run_config`, runs only the split, and records them (results.json,
manifest.json, report.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from evalhelpers import Project, make_case, output, record_template, suite_doc

# A system that writes down the run_config each case handed it.
CONFIGURED_SYSTEM = """\
import json
from mysys import System, log, trace_for


class Configured(System):
    def run(self, case):
        log("config " + case["id"] + " " + json.dumps(case.run_config, sort_keys=True))
        return trace_for(case)


system = Configured("configured")
"""

MANIFEST = {
    "name": "locomo-q4",
    "seed": 7,
    "language": "en",
    "prompt_versions": {"prompt_version": "v3"},
    "models": {"model": "echo-1", "embedding_model": "embed-small", "judge": "lexical"},
    "split": {"suites": ["memory"], "categories": ["multi_hop"]},
}


def memory_cases() -> list[dict]:
    return [
        make_case("q1", "alpha beta", category="single_hop"),
        make_case("q2", "gamma delta", category="multi_hop"),
        make_case("q3", "epsilon zeta", category="multi_hop"),
    ]


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """Recorded without a manifest: a memory suite of three cases and a second suite."""
    root = tmp_path_factory.mktemp("authored")
    project = Project(root).write_base()
    project.write_text("cfgsys.py", CONFIGURED_SYSTEM)
    return record_template(
        root,
        suite_doc("memory", cases=memory_cases(), system="cfgsys:system", judge="lexical"),
        suite_doc("other", cases=[make_case("z1", "zeta eta")]),
    )


@pytest.fixture
def proj(template: Project, tmp_path: Path) -> Project:
    project = Project(tmp_path / "p")
    project.copy_from(template.root)
    return project


def write_manifest(project: Project, doc: dict, name: str = "evalcases.manifest.json") -> None:
    project.write_text(name, json.dumps(doc, indent=2))


def configs_seen(project: Project) -> dict[str, dict]:
    """case id -> the run_config the system was handed."""
    return {
        line.split(" ", 2)[1]: json.loads(line.split(" ", 2)[2])
        for line in project.calls()
        if line.startswith("config ")
    }


def test_a_run_that_differs_refuses_naming_each_field_both_values_and_next_step(
    proj: Project,
) -> None:
    proj.steer(fingerprints={"configured": {"model": "echo-2", "prompt_version": "v3"}})
    doc = {
        **MANIFEST,
        "models": {"model": "echo-1", "judge": "openai:gpt-4o-mini"},
        "split": {"suites": ["memory", "gone"], "ids": ["q2", "q9"]},
    }
    write_manifest(proj, doc)

    result = proj.run(
        "-p", "no:cacheprovider", "--live", "--eval-input-manifest", "evalcases.manifest.json"
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    text = output(result)
    assert (
        "--eval-input-manifest evalcases.manifest.json: this run differs from the authored "
        "manifest in 4 places; nothing ran:" in text
    )
    assert (
        'suite memory: models.model: the manifest fixes "echo-1", this run has "echo-2" '
        "(fingerprint().model of cfgsys:system); make the system's fingerprint() return "
        "\"echo-1\" for 'model'" in text
    )
    assert (
        'suite memory: models.judge: the manifest fixes "openai:gpt-4o-mini", this run has '
        '"lexical" (the judge this suite runs with); run with --eval-judge openai:gpt-4o-mini'
        in text
    )
    assert "split: split.suites: the manifest fixes gone, this run has none of it among" in text
    assert "split: split.ids: the manifest fixes q9, this run has none of it among" in text
    assert "suite other" not in text  # outside the split: nothing of it is compared
    assert proj.calls() == []  # nothing ran, live run included


def test_an_accepted_run_hands_the_values_runs_the_split_and_records_them(
    proj: Project,
) -> None:
    write_manifest(proj, MANIFEST)

    result = proj.run(
        "-p",
        "no:cacheprovider",
        "--live",
        "--eval-input-manifest",
        "evalcases.manifest.json",
        "--eval-report",
        "out",
    )

    assert result.ret == 0, output(result)
    header = next(line for line in result.outlines if line.startswith("evalcases: input"))
    assert header.startswith("evalcases: input manifest evalcases.manifest.json (hash ")
    assert header.endswith(
        ": name locomo-q4 · seed 7 · language en · prompt prompt_version v3 · model "
        "embedding_model embed-small · model judge lexical · model model echo-1 · split "
        "categories multi_hop · split suites memory"
    )
    result.assert_outcomes(passed=2, deselected=2)  # q1 (single_hop) and the other suite
    seen = configs_seen(proj)
    assert sorted(seen) == ["q2", "q3"]
    assert seen["q2"] == {
        "name": "locomo-q4",
        "seed": 7,
        "language": "en",
        "prompt_versions": {"prompt_version": "v3"},
        "models": {"model": "echo-1", "embedding_model": "embed-small", "judge": "lexical"},
    }
    results = json.loads((proj.root / "out/results.json").read_text())
    manifest = json.loads((proj.root / "out/manifest.json").read_text())
    record = results["run"]["config"]["input"]
    assert record == manifest["config"]["input"]
    assert record["file"] == "evalcases.manifest.json" and len(record["hash"]) == 16
    assert record["values"]["seed"] == 7
    assert record["values"]["split"] == MANIFEST["split"]
    report = (proj.root / "out/report.md").read_text()
    line = next(line for line in report.splitlines() if line.startswith("Input manifest:"))
    assert line.startswith("Input manifest: `evalcases.manifest.json` (hash ")
    assert "seed 7 · language en · prompt prompt_version v3 · model embedding_model" in line
    assert "split categories multi_hop · split suites memory" in line


def test_the_values_the_fingerprint_does_not_declare_are_keyed(proj: Project) -> None:
    """The seed (not in fingerprint()) keys the suite: recorded with 7, replayed with 8 is
    stale, naming it; `model` (declared, and equal) is keyed once, by the fingerprint."""
    write_manifest(proj, {"seed": 7, "models": {"model": "echo-1"}})
    args = ("-p", "no:cacheprovider", "--eval-input-manifest", "evalcases.manifest.json")
    recorded = proj.run(*args, "--live", "cases/memory.json")
    assert recorded.ret == 0, output(recorded)
    cassette = proj.cassette("memory", "q1")
    assert "run_config.seed" in cassette["key"] and "run_config.model" not in cassette["key"]

    assert proj.run(*args, "cases/memory.json").ret == 0  # replayed under the same manifest
    write_manifest(proj, {"seed": 8, "models": {"model": "echo-1"}})
    stale = proj.run(*args, "cases/memory.json")
    assert stale.ret == pytest.ExitCode.TESTS_FAILED
    assert "stale recording: run_config.seed changed (7 -> 8); re-record with --live" in output(
        stale
    )
    # without a manifest, the suites that never had one replay as they were recorded
    assert proj.run("-p", "no:cacheprovider", "cases/other.json").ret == 0


def test_the_ini_key_names_the_file_and_a_bad_file_stops_the_run(proj: Project) -> None:
    proj.write_text(
        "pytest.ini",
        (proj.root / "pytest.ini").read_text() + "eval_input_manifest = team/manifest.json\n",
    )
    write_manifest(proj, {"seeds": 7}, "team/manifest.json")

    result = proj.run("-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert (
        "--eval-input-manifest team/manifest.json: unknown field 'seeds' (known: format, "
        "version, name, seed, language, prompt_versions, models, split); fix the file, or run "
        "without --eval-input-manifest" in output(result)
    )
    assert proj.calls() == []


def test_the_lock_checks_the_authored_values_too(proj: Project) -> None:
    """A run manifest written under an authored one locks its values: --eval-manifest refuses a
    later run whose authored seed differs."""
    write_manifest(proj, {"seed": 7})
    args = ("-p", "no:cacheprovider", "--eval-input-manifest", "evalcases.manifest.json")
    assert proj.run(*args, "--live", "--eval-report", "lock").ret == 0
    write_manifest(proj, {"seed": 8})

    result = proj.run(*args, "--eval-manifest", "lock/manifest.json")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "  input.seed: 7 -> 8" in output(result)
