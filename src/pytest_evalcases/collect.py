"""Collection: a case file becomes a CaseFile node whose children are CaseItems.

A problem never raises a collection error (pytest would abort the whole run): a file-level problem
becomes one item that errors in setup, a case-level problem errors only that case.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from .core.errors import CaseFileError, EvalCaseError, JudgeFailure, StageFailure
from .core.hashing import LABEL_CHARS, file_hash
from .core.names import case_ids, shown_name, unsafe_id_reason
from .core.schema import Case, Suite, format_validation_error, validate_case
from .domain.code import default_code
from .domain.context import SuiteContext
from .domain.scoring import failure_message, runs_failure_message, score_case, score_runs
from .domain.stages.registry import STAGES, prepare_stages
from .domain.system import resolve_system
from .store.keys import suite_key_fields, suite_key_labels

if TYPE_CHECKING:
    from .domain.users import SuiteUser
    from .session import EvalSession


def _json_error(nodeid: str, exc: json.JSONDecodeError) -> str:
    return f"{nodeid}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"


def _parse_case_file(nodeid: str, text: str) -> Any:
    """The file's JSON; anything the parser raises is a CaseFileError naming the file, so one
    hostile file (100,000 nested arrays, a 5,000-digit number) never aborts collection."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(_json_error(nodeid, exc)) from None
    except RecursionError:
        raise CaseFileError(
            f"{nodeid}: the JSON nests deeper than Python's parser can read; flatten it"
        ) from None
    except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
        raise CaseFileError(
            f"{nodeid}: cannot read the JSON: {str(exc).split(';')[0]}; write numbers this long "
            "as strings"
        ) from None


def _threshold_problems(suite: Suite) -> list[str]:
    """Per-stage thresholds must name stages the suite runs: a typo would be silently ignored
    (its values are checked against [0, 1] by the schema)."""
    runs = suite.stages + suite.report_only
    problems = []
    for name in suite.thresholds:
        if name in runs:
            continue
        if name in STAGES:
            problems.append(
                f'stage {name!r} is not run by this suite: add it to "stages" or "report_only", '
                "or remove its threshold"
            )
            continue
        import difflib  # only for a typo: not on every run's import path

        close = difflib.get_close_matches(name, runs, n=1) or difflib.get_close_matches(
            name, list(STAGES), n=1
        )
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        problems.append(f"unknown stage {name!r}{hint}")
    return problems


def _input_outside_rootdir(name: str, rootdir: Path) -> str | None:
    """Why an `inputs` entry is not a file inside the rootdir, or None. Symlinks are followed: the
    key must depend only on files every checkout of the project has."""
    if Path(name).is_absolute():
        return "is an absolute path"
    try:
        real = (rootdir / name).resolve()
        root = rootdir.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        return f"cannot be resolved ({exc})"
    if not real.is_relative_to(root):
        return f"resolves to {real}, outside the rootdir"
    return None


def hash_inputs(names: Iterable[str], state: EvalSession, where: str) -> dict[str, str]:
    """Key fields of `inputs` entries: path -> hash of the file's bytes (each file hashed once
    per run). CaseFileError, starting with `where`, for an entry outside the rootdir or
    unreadable."""
    hashes = {}
    for name in names:
        outside = _input_outside_rootdir(name, state.rootdir)
        if outside:
            raise CaseFileError(
                f"{where}input {name!r} {outside}; inputs are hashed into every "
                f"recording's key, so they must be files inside the rootdir {state.rootdir} "
                "(copy the file into the project and name it relative to the rootdir)"
            )
        try:
            hashes[name] = state.input_hash(name, file_hash)
        except OSError as exc:
            raise CaseFileError(
                f"{where}input file {name!r} cannot be read ({exc.strerror}); "
                f"inputs are paths relative to the rootdir {state.rootdir}: fix the path or "
                "add the file"
            ) from None
    return hashes


class CaseFile(pytest.File):
    """A suite file: `{"name", "system", "stages", "cases": [...]}`."""

    @functools.cached_property
    def item_relpath(self) -> str:
        """The file's path as its items' locations give it (pytest's own rule, computed once)."""
        return self.session._node_location_to_relpath(Path(os.path.abspath(self.path)))

    def collect(self) -> Iterator[pytest.Item]:
        from .session import get_session

        state = get_session(self.config)
        state.seen_case_files.add(self.path)
        try:
            raw = self._read_suite_file()
            if isinstance(raw, dict) and raw.get("kind") == "calibration":
                from .calibration_items import collect_calibration

                yield from collect_calibration(self, state, raw)
                return
            ctx = self._load_suite(state, raw)
        except Exception as exc:  # whatever a file holds, the other suites still run
            message = str(exc) if isinstance(exc, CaseFileError) else (
                f"{self.nodeid}: cannot load the suite ({type(exc).__name__}: {exc}); fix the "
                "file, or report a bug if it looks right"
            )
            yield SuiteErrorItem.from_parent(
                self, name="suite", message=message, suite_name=self.path.stem, index=-1
            )
            return
        # The raw cases are not kept on the suite: each item holds its validated case only.
        raw_cases, ctx.suite.cases = ctx.suite.cases, []
        state.collected_suites[self.path] = (ctx.suite.name, case_ids(raw_cases))
        # One context per distinct per-case `inputs` list, shared by the cases naming it.
        self._input_variants: dict[tuple[str, ...], SuiteContext] = {}
        self._user_variants: dict[tuple[tuple[str, ...], str], SuiteContext] = {}
        seen: dict[str, int] = {}
        for index, raw in enumerate(raw_cases):
            yield self._case_item(ctx, state, index, raw, seen)

    def _read_suite_file(self) -> Any:
        try:
            text = self.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CaseFileError(
                f"{self.nodeid}: cannot read the file as UTF-8 text ({exc})"
            ) from None
        return _parse_case_file(self.nodeid, text)

    def _load_suite(self, state: EvalSession, raw: Any) -> SuiteContext:
        if not isinstance(raw, dict):
            raise CaseFileError(f"{self.nodeid}: a case file holds one JSON object (a suite)")
        if isinstance(raw.get("name"), str):
            # Claimed before validation: a scan of the files this run does not collect reads the
            # name alone, and both must see the same two files declaring one name.
            state.claim_suite_name(raw["name"], self.nodeid)
        try:
            suite = Suite.model_validate(raw)
        except ValidationError as exc:
            raise CaseFileError(
                f"{self.nodeid}: invalid suite\n{format_validation_error(exc)}"
            ) from None
        unknown = [name for name in suite.stages + suite.report_only if name not in STAGES]
        if unknown:
            raise CaseFileError(
                f"{self.nodeid}: unknown stage(s) {', '.join(unknown)}; known stages: "
                f"{', '.join(STAGES)}"
            )
        threshold_problems = _threshold_problems(suite)
        if threshold_problems:
            raise CaseFileError(
                f'{self.nodeid}: "thresholds": {"; ".join(threshold_problems)}; this suite runs '
                f"{', '.join(suite.stages + suite.report_only)}"
            )
        try:
            prepare_stages(suite, suite.stages + suite.report_only, state.rootdir)
        except CaseFileError as exc:
            raise CaseFileError(f"{self.nodeid}: {exc}") from None
        reason = unsafe_id_reason(suite.name)
        if reason:
            raise CaseFileError(
                f"{self.nodeid}: suite name {shown_name(suite.name)} cannot name a folder: "
                f"{reason}; rename the suite"
            )
        spec = suite.system or state.default_system
        if not spec:
            raise CaseFileError(
                f'{self.nodeid}: no system: set "system": "module:attribute" in the suite or '
                "eval_system in the pytest ini"
            )
        input_hashes = hash_inputs(suite.inputs, state, f"{self.nodeid}: ")
        try:
            system = resolve_system(spec, state.rootdir, state.systems)
            fingerprint = system.fingerprint()
            key_fields = suite_key_fields(spec, input_hashes, fingerprint)
            code = suite.code if suite.code is not None else default_code(spec)
            code_paths: dict[str, str] = {}
            key_fields.update(state.code_fingerprints.key_fields(code, code_paths))
            key_labels = suite_key_labels(spec, input_hashes, fingerprint, code_paths)
        except CaseFileError as exc:
            raise CaseFileError(f"{self.nodeid}: {exc}") from None
        report_only = [name for name in suite.report_only if name not in suite.stages]
        from .domain.judging import (
            JUDGE_INI,
            JUDGE_OPTION,
            JUDGE_SUITE,
            judge_options,
            judged_stages,
        )
        from .judges import JudgeConfigError
        from .judges.spec import canonical_judge

        try:
            suite_judge = canonical_judge(suite.judge) if suite.judge else None
        except JudgeConfigError as exc:
            raise CaseFileError(f"{self.nodeid}: \"judge\": {exc}") from None
        judge_from = (
            JUDGE_OPTION if state.judge_override
            else JUDGE_SUITE if suite_judge
            else JUDGE_INI if state.default_judge
            else None
        )

        return SuiteContext(
            path=self.path,
            suite=suite,
            system=system,
            cassette_root=state.cassette_root,
            cassette_dir=str(state.cassette_root / suite.name),
            rootdir=state.rootdir,
            key_fields=key_fields,
            input_fields=input_hashes,
            key_labels=key_labels,
            gating=list(suite.stages),
            report_only=report_only,
            judged=judged_stages(suite.stages + report_only),
            judge_spec=state.judge_override or suite_judge or state.default_judge,
            judge_from=judge_from,
            judge_options=judge_options(suite),
            timeout=state.timeout_override or suite.timeout or state.default_timeout,
            users=self._users(suite, state) if suite.users else None,
            judge_repeats=state.judge_repeats_override or suite.judge_repeats
            or state.default_judge_repeats,
            runs=state.runs_override or suite.runs,
        )

    def _users(self, suite: Suite, state: EvalSession) -> dict[str, SuiteUser | CaseFileError]:
        from .domain.users import build_users

        def hash_file(path: str, where: str) -> str:
            return hash_inputs([path], state, where)[path]

        return build_users(suite.users, state.rootdir, hash_file)

    def _case_item(
        self, ctx: SuiteContext, state: EvalSession, index: int, raw: Any, seen: dict[str, int]
    ) -> pytest.Item:
        def error(name: str, message: str) -> SuiteErrorItem:
            item = SuiteErrorItem.from_parent(
                self,
                name=name,
                message=f"{self.nodeid}: {message}",
                suite_name=ctx.suite.name,
                index=index,
            )
            user = raw.get("user") if isinstance(raw, dict) else None
            if isinstance(user, str) and user:  # counted in its user's row of the reports
                item.user = user
            return item

        if not isinstance(raw, dict):
            return error(
                f"cases[{index}]",
                f'cases[{index}] is not an object: each case is {{"id": ..., "input": ...}}',
            )
        raw_id = raw.get("id")
        unsafe = unsafe_id_reason(raw_id) if isinstance(raw_id, str) else None
        name = raw_id if isinstance(raw_id, str) and raw_id and not unsafe else None
        if name is not None:
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                return error(
                    f"{name}-duplicate-{seen[name]}",
                    f"duplicate case id {name!r} "
                    f"(cases[{index}]); the first one runs, rename this one",
                )
        try:
            case = validate_case(raw)
        except ValidationError as exc:
            label = name or f"cases[{index}]"
            return error(
                label,
                f"invalid case {label}\n" + format_validation_error(exc, prefix=f"cases[{index}]"),
            )
        if unsafe:  # case.id is raw_id, now known to be a valid string
            return error(
                f"cases[{index}]",
                f"case id {shown_name(case.id)} (cases[{index}]) cannot name a "
                f"cassette file: {unsafe}; rename it (nothing was recorded for it)",
            )
        if case.inputs is not None:
            try:
                ctx = self._with_inputs(ctx, state, case.inputs)
            except CaseFileError as exc:
                return error(case.id, f"case {shown_name(case.id)} (cases[{index}]): {exc}")
        if case.user is not None:
            try:
                ctx = self._with_user(ctx, case.user)
            except CaseFileError as exc:
                return error(case.id, f"case {shown_name(case.id)} (cases[{index}]): {exc}")
        item = CaseItem.from_parent(self, name=case.id, ctx=ctx, case=case, index=index)
        for marker in filter(None, (case.category, *case.marks)):
            item.add_marker(state.marker(marker))
        if case.skip:
            item.add_marker(pytest.mark.skip(reason=case.skip))
        if case.xfail:
            # raises=StageFailure: a stale, missing or crashing case stays an error under xfail.
            item.add_marker(pytest.mark.xfail(reason=case.xfail, raises=StageFailure))
        return item


    def _with_inputs(
        self, ctx: SuiteContext, state: EvalSession, inputs: tuple[str, ...]
    ) -> SuiteContext:
        """The suite's context with a case's own `inputs` in place of the suite's."""
        variant = self._input_variants.get(inputs)
        if variant is None:
            own = hash_inputs(inputs, state, "")  # before any change: an error leaves no variant
            fields = {k: v for k, v in ctx.key_fields.items() if k not in ctx.input_fields}
            fields.update(own)
            labels = {k: v for k, v in ctx.key_labels.items() if k not in ctx.input_fields}
            labels.update((name, name) for name in own if len(name) <= LABEL_CHARS)
            variant = dataclasses.replace(
                ctx, key_fields=fields, input_fields=own, key_labels=labels
            )
            self._input_variants[inputs] = variant
        return variant

    def _with_user(self, ctx: SuiteContext, user_id: str) -> SuiteContext:
        """The context of one user's cases: the user's files as key field `user.<id>`."""
        known = ctx.users or {}
        user = known.get(user_id)
        if user is None:
            declared = ", ".join(map(repr, known)) or "none"
            raise CaseFileError(
                f"user {user_id!r} is not declared by the suite (its \"users\": {declared}); "
                "add it to \"users\" with its data files, or fix the case's \"user\""
            )
        if isinstance(user, CaseFileError):
            raise user
        # One context per user and inputs variant, shared by the cases naming both.
        shared = (tuple(ctx.input_fields), user_id)
        variant = self._user_variants.get(shared)
        if variant is None:
            fields = {**ctx.key_fields, user.key_field: user.key_hash}
            labels = dict(ctx.key_labels)
            if user.label is not None:
                labels[user.key_field] = user.label
            variant = dataclasses.replace(ctx, key_fields=fields, key_labels=labels, user=user)
            self._user_variants[shared] = variant
        return variant


def load_suite_context(session: pytest.Session, path: Path) -> Any:
    """A case file's suite context outside collection, exactly as collection builds it (the run
    manifest describes every suite of the case folders, collected or not): a SuiteContext, or a
    calibration suite's CalibrationContext. Its raw cases stay on `suite.cases`. Raises what
    loading raises (CaseFileError for a bad file)."""
    from .session import get_session

    node = CaseFile.from_parent(session, path=path)
    state = get_session(session.config)
    raw = node._read_suite_file()
    if isinstance(raw, dict) and raw.get("kind") == "calibration":
        from .calibration_items import _context as calibration_context

        return calibration_context(node, state, raw)
    return node._load_suite(state, raw)


@functools.cache
def _session_key() -> Any:
    """The stash key of the run state, imported once: session.py imports this module."""
    from .session import SESSION_KEY

    return SESSION_KEY


# Frames of these packages are dropped from a user-code failure: the system's own frames say
# what went wrong, pytest's, pluggy's, asyncio's and ours do not.
_INTERNAL_FRAMES = tuple(
    str(Path(module.__file__).parent)
    for module in (pytest, __import__("_pytest"), __import__("pluggy"), __import__("asyncio"),
                   __import__("concurrent.futures"))
) + (str(Path(__file__).parent),)


class EvalItem(pytest.Item):
    """What both item kinds share: how their failures are shown."""

    # An item kind with a result dict of its own (calibration) defines this; see case_result.
    result_for: Any = None

    def _repr_failure_py(
        self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None
    ) -> Any:
        # Our errors are their own message: building pytest's traceback for them is what made a
        # replay of 1,000 stale cases take 80 s instead of 0.5 s.
        if isinstance(excinfo.value, EvalCaseError):
            return str(excinfo.value)
        return super()._repr_failure_py(excinfo, style)

    def _traceback_filter(self, excinfo: pytest.ExceptionInfo[BaseException]) -> Any:
        """A failure of the user's code shows the user's frames only."""
        traceback = excinfo.traceback
        own = traceback.filter(lambda entry: not str(entry.path).startswith(_INTERNAL_FRAMES))
        return own or traceback


class SuiteErrorItem(EvalItem):
    """Stands in for a file or case that cannot run, and errors in setup with its message."""

    is_eval_item = True  # the plugin's hooks look for this, without importing this module
    user: str | None = None  # the suite user the broken case names, if any

    def __init__(self, *, message: str, suite_name: str, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.message = message
        self.suite_name = suite_name
        self.index = index

    def setup(self) -> None:
        raise CaseFileError(self.message)

    def runtest(self) -> None:  # never reached: setup always raises
        raise CaseFileError(self.message)

    def reportinfo(self) -> tuple[Path, int, str]:
        # Not a suffix of the node id: pytest would print the dots of a suffix domain as '::'.
        return self.path, 0, f"{self.nodeid} (not loaded)"


class CaseItem(EvalItem):
    """One eval case: setup obtains its recording, runtest scores it."""

    is_eval_item = True
    is_eval_case = True

    def __init__(self, *, ctx: SuiteContext, case: Case, index: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.ctx = ctx
        self.case = case
        self.index = index
        self.recording: Any = None
        self.scores: Any = None
        self.run_results: dict[str, Any] | None = None  # --eval-runs: the result's `runs`

    def setup(self) -> None:
        state = self.config.stash[_session_key()]
        conflict = self.suite_conflict(state)
        if conflict is not None:
            raise conflict
        self.recording = state.recording_for(self)

    def suite_conflict(self, state: EvalSession) -> CaseFileError | None:
        """The error of a case whose suite name another case file also declares: both files
        would share one cassette folder, so neither replays nor records until one is renamed."""
        file = self.parent.nodeid if self.parent is not None else str(self.path)
        others = state.suite_conflict(self.ctx.suite.name, file)
        if not others:
            return None
        return CaseFileError(
            f"{file}: suite name {self.ctx.suite.name!r} is also declared by "
            f"{', '.join(others)}; suite names name the cassette folders, so rename the suite in "
            "one of these files (nothing is recorded for any of them until then)"
        )

    def runtest(self) -> None:
        recording, ctx = self.recording, self.ctx
        if recording.later_runs:  # --eval-runs: the case passes when every run passes
            return self._score_runs(recording)
        self.scores = scores = score_case(
            ctx.suite, self.case, recording.trace, recording.verdicts, ctx.gating, ctx.report_only
        )
        if self.config.option.xmlpath:  # only JUnit reads them
            for name, result, _ in scores.results:
                if result.score is not None:
                    self.user_properties.append((f"evalcases.{name}", f"{result.score:.4f}"))
        if scores.first_failure is not None:
            error = JudgeFailure if scores.first_failure[1].judge_error else StageFailure
            raise error(failure_message(scores))

    def _score_runs(self, recording: Any) -> None:
        runs = [(recording.trace, recording.verdicts)]
        runs += [(run["trace"], run.get("verdicts") or {}) for run in recording.later_runs]
        scores, self.run_results = score_runs(
            self.ctx.suite, self.case, runs, self.ctx.gating, self.ctx.report_only
        )
        self.scores = scores
        if scores.first_failure is not None:
            error = JudgeFailure if scores.first_failure[1].judge_error else StageFailure
            raise error(runs_failure_message(scores, self.run_results))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, EvalCaseError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)  # through _traceback_filter: user frames

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.ctx.suite.name}::{self.case.id}"

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's location (what reportinfo says, the path relative to the rootdir), with the
        file's relative path worked out once per case file rather than once per case (~5 us)."""
        parent = self.parent
        relpath = parent.item_relpath if isinstance(parent, CaseFile) else None
        if relpath is None:
            return super().location
        return relpath, 0, f"{self.ctx.suite.name}::{self.case.id}"
