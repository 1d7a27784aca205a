"""The pytest items of eval cases: a case (setup gets its recording from the run's source,
runtest scores it) and the stand-in for a file or case that cannot run."""

from __future__ import annotations

import functools
import sysconfig
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from ..core.errors import CaseFileError, EvalCaseError, JudgeFailure, StageError, StageFailure
from ..core.exception_chain import exception_lines
from ..core.safe_text import terminal_safe
from ..core.schema import Case
from ..domain.context import SuiteContext
from ..domain.scoring import failure_message, runs_failure_message
from ..engine.case_scores import scores_of
from ..store.redaction import redact_for_output
from .session import SESSION_KEY

if TYPE_CHECKING:
    from .session import EvalSession


# Frames of these packages are dropped from a user-code failure: the system's own frames say
# what went wrong, pytest's, pluggy's, asyncio's and ours do not.
_INTERNAL_FRAMES = tuple(
    str(Path(module.__file__).parent)
    for module in (
        pytest,
        __import__("_pytest"),
        __import__("pluggy"),
        __import__("asyncio"),
        __import__("concurrent.futures"),
    )
) + (str(Path(__file__).parents[1]),)  # the whole package, not only the pytest layer
# Nor are the standard library's and installed packages' frames the user's code: an SDK's error
# passes through dozens of them.
_LIBRARY_FRAMES = tuple(
    {str(Path(sysconfig.get_paths()[name])) for name in ("stdlib", "platstdlib", "purelib")}
)
# A system error during --live is shown in a few lines unless one of these styles asks for more.
_FULL_TRACEBACK_STYLES = ("long", "native")


def failure_text(text: str) -> str:
    """A failure as the terminal and the JUnit XML show it: secrets redacted (an exception
    message, a judge's reason, an answer may hold one), control characters made visible (a
    model-chosen tool name must not drive the terminal). Only failures pay for it."""
    return terminal_safe(redact_for_output(text))


def _safe_traceback(longrepr: Any) -> Any:
    """pytest's traceback of a user-code failure, as text when its message needed cleaning."""
    rendered = str(longrepr)
    cleaned = failure_text(rendered)
    return longrepr if cleaned == rendered else cleaned


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
            return failure_text(str(excinfo.value))
        if getattr(self, "live_error", None) and style not in _FULL_TRACEBACK_STYLES:
            return failure_text(self.system_error_text(excinfo.value))
        return _safe_traceback(super()._repr_failure_py(excinfo, style))

    @functools.cached_property
    def location(self) -> tuple[str, int | None, str]:
        """pytest's location (what reportinfo says, the path relative to the rootdir), with the
        file's relative path worked out once per case file rather than once per item (~5 us;
        an item's path is its case file's)."""
        relpath = getattr(self.parent, "item_relpath", None)  # a CaseFile works it out once
        if relpath is None:
            return super().location
        _, line, domain = self.reportinfo()
        return relpath, line, domain

    def suite_conflict(self, state: EvalSession) -> CaseFileError | None:
        """The error of a case whose suite name another case file also declares: both files
        would share one cassette folder, so neither replays nor records until one is renamed.
        (Items with a suite context: eval and calibration cases.)"""
        file = self.parent.nodeid if self.parent is not None else str(self.path)
        others = state.suite_conflict(self.ctx.suite.name, file)
        if not others:
            return None
        return CaseFileError(
            f"{file}: suite name {self.ctx.suite.name!r} is also declared by "
            f"{', '.join(others)}; suite names name the cassette folders, so rename the suite in "
            "one of these files (nothing is recorded for any of them until then)"
        )

    def system_error_text(self, exc: BaseException) -> str:
        """What the system raised during --live, in a few lines: the exception chain down to
        its root cause, the request an HTTP client's error carries, and the line of the user's
        code it came through (`--tb=long`: pytest's traceback)."""
        return "\n".join(
            [
                *exception_lines(exc, self._user_path),
                "the system raised during --live: this case was not recorded "
                "(--tb=long shows the full traceback)",
            ]
        )

    def _user_path(self, filename: str) -> str | None:
        """A frame's file as the user knows it (relative to the rootdir), or None when it is
        not the user's code: ours, pytest's, the standard library's or an installed package's."""
        if filename.startswith(_INTERNAL_FRAMES + _LIBRARY_FRAMES) or filename.startswith("<"):
            return None
        if "site-packages" in filename or "dist-packages" in filename:
            return None
        path = Path(filename)
        rootdir = self.config.rootpath
        return path.relative_to(rootdir).as_posix() if path.is_relative_to(rootdir) else filename

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
        state = self.config.stash[SESSION_KEY]
        conflict = self.suite_conflict(state)
        if conflict is not None:
            raise conflict
        self.recording = state.source.recording_for(self)

    def runtest(self) -> None:
        # A live run's scores come with its recording (scored once); a replay's are made here.
        scores, runs = scores_of(self.ctx, self.case, self.recording)
        self.scores, self.run_results = scores, runs  # runs: --eval-runs, the result's `runs`
        if runs is None and self.config.option.xmlpath:  # only JUnit reads them
            for name, result, _ in scores.results:
                if result.score is not None:
                    self.user_properties.append((f"evalcases.{name}", f"{result.score:.4f}"))
        if scores.first_failure is not None:
            failed = scores.first_failure[1]
            error = (
                JudgeFailure
                if failed.judge_error
                else StageError
                if failed.stage_error
                else StageFailure
            )
            whole = self.config.option.verbose >= 2  # -vv: what the stage compared, whole
            message = (
                failure_message(scores, whole)
                if runs is None
                else runs_failure_message(scores, runs, whole)
            )
            raise error(message)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, EvalCaseError):
            return failure_text(str(excinfo.value))
        return super().repr_failure(excinfo, style)  # through _traceback_filter: user frames

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"{self.ctx.suite.name}::{self.case.id}"
