"""The configuration of this run's project: every suite of the case folders, read through the
collection code (so it is what the cases run with), the package versions and the git state.

Computed once per run, on the controller, and only when a report is written or a manifest is
checked: it reads every case file again, resolves every system and hashes every input.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import CaseFileError
from ..core.hashing import file_hash
from ..judges import judge_version
from ..manifest.config import calibration_config, package_versions, suite_config
from ..report.gitinfo import git_state
from ..store.redaction import redact_for_output
from .housekeeping import case_files
from .suite_contexts import hash_inputs, load_suite_context

if TYPE_CHECKING:
    from .session import EvalSession


def project_config(state: EvalSession) -> dict[str, Any]:
    """{"suites": {name: ...}, "unloadable": {file: why}, "versions": {...}, "git": {...}},
    built once per run (kept on the run state) and only when a report or a check asks."""
    if state.project_config is None:
        # Redacted as every other output: a fingerprint value or a setting may hold a key, and
        # this is written to manifest.json and results.json (`run.config`). A locked manifest
        # is compared with the redacted configuration, as it was written.
        state.project_config = redact_for_output(_read_project(state))
    return state.project_config


def _read_project(state: EvalSession) -> dict[str, Any]:

    suites: dict[str, dict[str, Any]] = {}
    unloadable: dict[str, str] = {}
    settings = state.settings
    # sorted once more: two case folders may overlap
    for path in sorted(set(case_files(settings.case_dirs, settings.cassette_root))):
        file = (
            path.relative_to(state.settings.rootdir).as_posix()
            if path.is_relative_to(state.settings.rootdir)
            else str(path)
        )
        try:
            name, entry = _suite_entry(state, path, file)
        except Exception as exc:  # the run itself reports it on the suite's item
            unloadable[file] = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            continue
        if name in suites:
            unloadable[file] = f"suite name {name!r} is also declared by {suites[name]['file']}"
            continue
        suites[name] = entry
    config = {
        "suites": dict(sorted(suites.items())),
        "unloadable": dict(sorted(unloadable.items())),
        "versions": package_versions(),
        "git": git_state(state.settings.rootdir),
    }
    if state.input_manifest is not None:  # the authored input manifest the run obeyed
        config["input"] = state.input_manifest.record()
    return config


def _suite_entry(state: EvalSession, path: Path, file: str) -> tuple[str, dict[str, Any]]:

    ctx = load_suite_context(state, path)
    raw_cases = ctx.suite.cases if isinstance(ctx.suite.cases, list) else []
    state.project_case_names[ctx.suite.name] = (
        [str(case.get("id")) for case in raw_cases if isinstance(case, dict)],
        [case.get("category") for case in raw_cases if isinstance(case, dict)],
    )
    version = None
    if ctx.judge_spec:
        version = judge_version(ctx.judge_spec)
    if not hasattr(ctx, "system"):  # a calibration suite: judge test cases, no system
        entry = calibration_config(ctx, file, file_hash(path), len(raw_cases), version)
        return ctx.suite.name, entry
    case_inputs: dict[str, str] = {}
    names = sorted(
        {
            name
            for case in raw_cases
            if isinstance(case, dict) and isinstance(case.get("inputs"), list)
            for name in case["inputs"]
            if isinstance(name, str)
        }
    )
    for name in names:
        try:
            case_inputs.update(hash_inputs([name], state, ""))
        except CaseFileError as exc:  # the case errors in the run; here, say it cannot be read
            case_inputs[name] = f"unreadable: {exc}"
    entry = suite_config(ctx, file, file_hash(path), len(raw_cases), case_inputs, version)
    return ctx.suite.name, entry
