"""The run manifest (issue 13 §2): results.json `run.run_id` / `run.config`, manifest.json, the
"uncommitted changes" flag, and `--eval-manifest FILE` refusing a run whose configuration differs.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from evalhelpers import Project, git, make_case, output, record_template, suite_doc

LONG_PROMPT = "Answer in one short sentence, citing the page you used. " * 3  # > 80 characters


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Project:
    root = tmp_path_factory.mktemp("manifest")
    project = Project(root).write_base()
    project.steer(fingerprint={"model": "echo-1", "prompt": LONG_PROMPT, "temperature": 0.2})
    project.write_text("data/extra.txt", "extra facts\n")
    cases = [
        make_case("alpha", "alpha beta"),
        make_case("gamma", "gamma delta", inputs=["data/kb.txt", "data/extra.txt"]),
    ]
    return record_template(
        root,
        suite_doc(cases=cases, thresholds={"retrieval": 0.5}),
        suite_doc("second", cases=[make_case("zeta", "zeta eta")], system="othersys:system"),
    )


@pytest.fixture
def proj(template: Project, tmp_path: Path) -> Project:
    project = Project(tmp_path / "p")
    project.copy_from(template.root)
    return project


def report(project: Project, *args: str, folder: str = "out") -> tuple[dict, dict]:
    result = project.run("-p", "no:cacheprovider", "--eval-report", folder, *args)
    assert result.ret == 0, output(result)
    results = json.loads((project.root / folder / "results.json").read_text())
    manifest = json.loads((project.root / folder / "manifest.json").read_text())
    return results, manifest


# ---- results.json run.config and manifest.json ----------------------------------------------
def test_manifest_holds_the_run_configuration(proj: Project) -> None:
    results, manifest = report(proj, "cases/suite.json")

    run = results["run"]
    assert str(uuid.UUID(run["run_id"])) == run["run_id"]
    assert manifest["format"] == "pytest-evalcases/manifest" and manifest["version"] == 1
    assert manifest["run_id"] == run["run_id"]
    assert manifest["config"] == run["config"]
    config = run["config"]
    # every suite of the case folders, not only the selected one
    assert sorted(config["suites"]) == ["second", "suite"]
    suite = config["suites"]["suite"]
    assert suite["file"] == "cases/suite.json" and suite["cases"] == 2
    assert suite["system"] == "mysys:system" and suite["version"] == 1
    assert suite["stages"] == ["tools", "retrieval", "exact_match"]
    assert suite["threshold"] == 0.5 and suite["thresholds"] == {"retrieval": 0.5}
    assert suite["judge"] is None
    # readable fingerprint values, a hash for the long one
    assert suite["fingerprint"]["model"] == "echo-1"
    assert suite["fingerprint"]["temperature"] == 0.2
    assert set(suite["fingerprint"]["prompt"]) == {"hash"}
    kb = proj.cassette("suite", "alpha")["key"]["data/kb.txt"]
    assert suite["inputs"] == {"data/kb.txt": kb}
    assert (
        suite["case_inputs"]["data/extra.txt"]
        == proj.cassette("suite", "gamma")["key"]["data/extra.txt"]
    )
    assert suite["code"] == {"mysys": proj.cassette("suite", "alpha")["key"]["code.mysys"]}
    assert suite["settings"]["k"] == 3
    assert config["suites"]["second"]["system"] == "othersys:system"
    versions = config["versions"]
    assert set(versions) == {"pytest-evalcases", "python", "pytest", "pydantic", "deepeval"}
    assert versions["pytest"] == pytest.__version__
    assert config["git"] == {"commit": None, "dirty": None}  # not a repository
    assert run["git_commit"] is None


def test_each_run_has_its_own_id_unless_ci_gives_one(
    proj: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, _ = report(proj, folder="a")
    second, _ = report(proj, folder="b")
    assert first["run"]["run_id"] != second["run"]["run_id"]
    # the id CI gives every shard of one run (merged shards keep it, as all shards agree)
    monkeypatch.setenv("EVALCASES_RUN_ID", "ci-4711")
    third, manifest = report(proj, folder="c")
    assert third["run"]["run_id"] == manifest["run_id"] == "ci-4711"


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_uncommitted_changes_are_flagged(proj: Project) -> None:
    proj.write_text("NOTES.md", "notes\n")
    git(proj.root, "init", "-q")
    git(proj.root, "add", "-A")
    git(proj.root, "commit", "-q", "-m", "recorded")
    head = git(proj.root, "rev-parse", "HEAD").strip()

    clean, _ = report(proj, folder="clean")  # the report folder itself is untracked: still clean
    assert clean["run"]["config"]["git"] == {"commit": head, "dirty": False}
    assert clean["run"]["git_commit"] == head
    assert "uncommitted changes" not in (proj.root / "clean" / "report.md").read_text()
    assert "uncommitted changes" not in (proj.root / "clean" / "dashboard.html").read_text()

    proj.write_text("NOTES.md", "notes, edited\n")
    dirty, _ = report(proj, "-k", "alpha", folder="dirty")
    assert dirty["run"]["config"]["git"] == {"commit": head, "dirty": True}
    md = (proj.root / "dirty" / "report.md").read_text()
    assert "**uncommitted changes**" in md and head[:12] in md
    assert "<b>git</b> uncommitted changes" in (proj.root / "dirty" / "dashboard.html").read_text()


# ---- --eval-manifest ------------------------------------------------------------------------
def test_a_run_with_the_locked_configuration_runs(proj: Project) -> None:
    report(proj, folder="lock")
    result = proj.run("-p", "no:cacheprovider", "--eval-manifest", "lock/manifest.json")
    assert result.ret == 0, output(result)
    assert "4 passed" in output(result) or "3 passed" in output(result)
    # a results.json locks as well as its manifest
    result = proj.run(
        "-p", "no:cacheprovider", "--eval-manifest", "lock/results.json", "cases/second.json"
    )
    assert result.ret == 0, output(result)


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_a_changed_configuration_refuses_to_run(proj: Project, workers: tuple[str, ...]) -> None:
    report(proj, folder="lock")
    proj.steer(fingerprint={"model": "echo-2", "prompt": LONG_PROMPT, "temperature": 0.2})
    proj.edit_suite("cases/suite.json", lambda doc: doc.update(threshold=0.7))
    (proj.root / "data" / "extra.txt").write_text("other facts\n")
    proj.write_suite(suite_doc("third", cases=[make_case("t", "t u")]))
    proj.clear_calls()
    before = proj.files()

    result = proj.run(
        "-p", "no:cacheprovider", "--live", "--eval-manifest", "lock/manifest.json", *workers
    )

    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "--eval-manifest lock/manifest.json: this run's configuration differs" in text
    for line in (
        'suite suite: fingerprint.model: "echo-1" -> "echo-2"',
        "suite suite: threshold: 0.5 -> 0.7",
        "suite suite: case_inputs.data/extra.txt: ",
        "suite suite: file_hash: ",
        "suite third: not in the manifest (a new suite)",
    ):
        assert line in text, line
    assert "commit DIR/manifest.json" in text
    assert proj.calls() == []  # a live run refused before any system ran
    assert proj.files() == before


def test_a_bad_manifest_file_is_a_usage_error(proj: Project) -> None:
    result = proj.run("-p", "no:cacheprovider", "--live", "--eval-manifest", "missing.json")
    text = output(result)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, text
    assert "--eval-manifest missing.json: no such file; write one with --eval-report DIR" in text
    assert proj.calls() == []


def test_the_demo_manifest_describes_every_suite(tmp_path: Path) -> None:
    """The repository's own case folder, calibration suite included: nothing is unloadable."""
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "cases/",
            "-q",
            "-p",
            "no:cacheprovider",
            "--eval-report",
            str(tmp_path / "out"),
            "-k",
            "storage",
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    config = json.loads((tmp_path / "out" / "manifest.json").read_text())["config"]
    assert config["unloadable"] == {}
    assert config["suites"]["docs-assistant"]["fingerprint"]["model"] == "extractive-v1"
    assert config["suites"]["docs-assistant"]["runs"] is None
    calibration = config["suites"]["judge-calibration"]
    assert calibration["kind"] == "calibration" and calibration["judge"] == "lexical"
    assert calibration["file"] == "cases/calibration.json"


def test_a_changed_user_file_refuses_to_run(tmp_path: Path) -> None:
    """A suite user's files key that user's cases as `inputs` key everyone's: the lock holds
    them too, so a manifest-locked live run refuses an edited user file."""
    project = Project(tmp_path).write_base()
    project.write_text("data/ana.json", "[]\n")
    users = [{"id": "ana", "conversations": "data/ana.json"}]
    project.write_suite(
        suite_doc(cases=[make_case("alpha", "alpha beta", user="ana")], users=users)
    )
    _, manifest = report(project, "--live", folder="lock")
    assert set(manifest["config"]["suites"]["suite"]["users"]) == {"ana"}
    (project.root / "data" / "ana.json").write_text('["edited"]\n')
    project.clear_calls()

    result = project.run(
        "-p", "no:cacheprovider", "--live", "--eval-manifest", "lock/manifest.json"
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR, output(result)
    assert "suite suite: users.ana: " in output(result)
    assert project.calls() == []
