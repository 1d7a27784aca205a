"""Your own stages, as a conftest.py (or a stage module, or a stage pack) declares them:
`@ev.stage("name", threshold=..., reads=[...])` over a function `(case, trace)` returning a
number in [0, 1], a bool or a `Score`. This module only records the declaration (it is imported
with the package, in every pytest run: nothing heavy); the stage registry
(`domain/stages/registry.py`) turns each declaration into a Stage when a suite is collected,
and checks there that its name is not taken.

A declaration remembers where it was made (file and line) and in which pytest session: a
session that ends (`end_declaration_session`) leaves its declarations to be replaced by the
next session's (pytest run twice in one process re-imports its conftest files).
"""

from __future__ import annotations

import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

__all__ = ["DeclaredStage", "Score", "declared_stages", "end_declaration_session", "stage"]

StageFunction = TypeVar("StageFunction", bound=Callable[..., Any])

# Stage names are keys of results.json, columns of report.md and JUnit property names.
# (Compiled on first use, by re's own cache: not at the import every pytest run makes.)
_STAGE_NAME = r"[A-Za-z0-9_][A-Za-z0-9_-]{0,63}"


class Score:
    """What a stage returns when it has more to say than a number.

    `value`: a number in [0, 1] or a bool (True is 1.0); None: the stage does not apply to this
    case (it is skipped, as a stage with nothing to compare is). `reason`: one line for the
    stage table and the failure. `shows`: what a failure of the stage shows, label -> value
    (`{"rows": rows}`), beside the answer."""

    # A plain class, not a dataclass: this module loads in every pytest run, and making a
    # dataclass costs about a millisecond.
    __slots__ = ("reason", "shows", "value")

    def __init__(
        self,
        value: float | bool | None,
        reason: str = "",
        shows: Mapping[str, Any] | None = None,
    ) -> None:
        self.value = value
        self.reason = reason
        self.shows = shows

    def __repr__(self) -> str:
        return f"Score({self.value!r}, reason={self.reason!r}, shows={self.shows!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Score):
            return NotImplemented
        return (self.value, self.reason, self.shows) == (other.value, other.reason, other.shows)

    __hash__ = None  # type: ignore[assignment]


class DeclaredStage:
    """One `@ev.stage` declaration: the function, its settings, and where and when (which
    pytest session) it was made. `namespace` is the declaring module's globals: is that module
    still the one loaded?"""

    __slots__ = (
        "file",
        "function",
        "line",
        "module",
        "name",
        "namespace",
        "reads",
        "session",
        "share_with_system",
        "threshold",
    )

    def __init__(
        self,
        name: str,
        function: Callable[..., Any],
        threshold: float | None,
        reads: tuple[str, ...],
        share_with_system: bool,
        where: tuple[str, int, dict[str, Any]],
        session: int,
    ) -> None:
        self.name = name
        self.function = function
        self.threshold = threshold  # None: the suite's `threshold`
        self.reads = reads  # case fields the stage reads: not typos, not the system's
        self.share_with_system = share_with_system  # the fields in `reads` go to the system too
        self.file, self.line, self.namespace = where
        self.module = str(self.namespace.get("__name__", "?"))
        self.session = session

    @property
    def place(self) -> str:
        """`checks.py:12 (module checks)`: the file relative to the working directory."""
        return f"{shown_source_file(self.file)}:{self.line} (module {self.module})"

    def __repr__(self) -> str:
        return f"<stage {self.name!r} declared at {self.place}>"


# Every declaration made in this process, in order; the registry adopts the ones it has not
# seen yet.
_DECLARED: list[DeclaredStage] = []
_SESSION = [0]


def declared_stages() -> list[DeclaredStage]:
    return _DECLARED


def current_session() -> int:
    return _SESSION[0]


def end_declaration_session() -> None:
    """A pytest session ended: the declarations made so far may be replaced by the next
    session's (its conftest files are imported afresh)."""
    _SESSION[0] += 1


def stage(
    name: str,
    *,
    threshold: float | None = None,
    reads: Iterable[str] = (),
    share_with_system: bool = False,
) -> Callable[[StageFunction], StageFunction]:
    """Declare the decorated function `(case, trace)` as the stage `name` (sync or async).

    `threshold`: the score it passes at (a suite's `"thresholds"` entry wins; None: the suite's
    `"threshold"`). `reads`: case fields it reads, e.g. `["expected_rows"]`: a suite that runs
    the stage takes them for the stage's, not for typos, and does not give them to the system
    (nor key recordings by them) unless `share_with_system` is True. Returns the function
    unchanged, so it can be tested by calling it."""
    if not isinstance(name, str) or not re.fullmatch(_STAGE_NAME, name):
        raise ValueError(
            f"ev.stage({name!r}): a stage name is 1 to 64 letters, digits, '_' or '-' (it "
            "names a key of results.json and a column of report.md)"
        )
    if threshold is not None and (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not math.isfinite(threshold)
        or not 0 <= threshold <= 1
    ):
        raise ValueError(
            f"ev.stage({name!r}): threshold={threshold!r}; give a number in [0, 1] (or leave "
            'it out: the suite\'s "threshold")'
        )
    if isinstance(reads, str) or not all(isinstance(field, str) and field for field in reads):
        raise ValueError(
            f"ev.stage({name!r}): reads={reads!r}; give a list of case field names, e.g. "
            'reads=["expected_rows"]'
        )
    caller = sys._getframe(1)  # the decorator's line: where the declaration is
    where = (caller.f_code.co_filename, caller.f_lineno, caller.f_globals)

    def declare(function: StageFunction) -> StageFunction:
        if not _takes_case_and_trace(function):
            raise TypeError(
                f"ev.stage({name!r}) decorates a function of (case, trace); "
                f"{getattr(function, '__name__', function)!r} does not take those two arguments"
            )
        _DECLARED.append(
            DeclaredStage(
                name,
                function,
                None if threshold is None else float(threshold),
                tuple(dict.fromkeys(reads)),
                bool(share_with_system),
                where,
                _SESSION[0],
            )
        )
        return function

    return declare


def _takes_case_and_trace(function: Any) -> bool:
    import inspect  # (pytest has loaded it: a declaration is checked as it is made)

    if not callable(function):
        return False
    try:
        inspect.signature(function).bind(None, None)
    except TypeError:
        return False
    except ValueError:  # no signature to read (a builtin): let the call decide
        return True
    return True


def shown_source_file(file: str) -> str:
    """A file as messages show it: relative to the working directory when inside it."""
    try:
        relative = os.path.relpath(file)
    except ValueError:  # another drive (Windows)
        return file
    return file if relative.startswith("..") else relative
