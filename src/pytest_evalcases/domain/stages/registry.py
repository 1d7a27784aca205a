"""The stage registry: every stage module registers its Stage here by name; suites name them.
A user's stages (`@ev.stage`, core/stage_declarations.py) join it when a suite is collected
(`adopt_declared_stages`), as Stages like the built-in ones (stages/user.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import CaseFileError
from ...core.stage_declarations import DeclaredStage, current_session, declared_stages
from .base import Stage
from .user import user_stage

STAGES: dict[str, Stage] = {}
# The user's stages among STAGES, by name: the declaration each was registered from.
USER_STAGES: dict[str, DeclaredStage] = {}

# Suite fields that configure one stage: giving one without running the stage is a mistake.
STAGE_OPTIONS = {
    "graph": "graph",
    "graph_schema": "graph_schema",
    "citations": "citations",
    "answer_schema": "schema",
    "rubric": "rubric",
}


def register(stage: Stage) -> Stage:
    STAGES[stage.name] = stage
    return stage


def prepare_stages(suite: object, runs: list[str], rootdir: Path) -> None:
    """Once per suite, at collection: each stage it runs checks or loads its suite options.
    Raises CaseFileError (without the file's name: the caller adds it)."""
    for option, stage in STAGE_OPTIONS.items():
        if getattr(suite, option) is not None and stage not in runs:
            raise CaseFileError(
                f'"{option}" configures the {stage} stage, which this suite does not run: add '
                f'"{stage}" to "stages" or "report_only", or remove the option'
            )
    for name in runs:
        prepare = STAGES[name].prepare
        if prepare is not None:
            prepare(suite, rootdir)  # type: ignore[arg-type]


@dataclass(slots=True)
class _Adoption:
    """How far the declarations have been adopted, and the names two places claim."""

    seen: int = 0  # declarations looked at (they are only ever appended)
    session: int = -1  # the session whose leftovers were last forgotten
    clashes: dict[str, tuple[int, str]] | None = None  # name -> (session, message)


_ADOPTION = _Adoption()


def adopt_declared_stages() -> None:
    """Register the user's stages declared since the last call. Raises CaseFileError (without
    the file's name: the caller adds it) naming both places when a name is taken, by a built-in
    stage or by another declaration of this session; every suite collected gets it, so the
    clash is seen whichever suites run. Costs a length check when nothing new was declared."""
    declared = declared_stages()
    session = current_session()
    if _ADOPTION.session != session:
        _forget_unloaded(session)
        _ADOPTION.session = session
    while _ADOPTION.seen < len(declared):
        _adopt(declared[_ADOPTION.seen])
        _ADOPTION.seen += 1
    clashes = [message for when, message in (_ADOPTION.clashes or {}).values() if when == session]
    if clashes:
        raise CaseFileError("; ".join(clashes))


def _adopt(new: DeclaredStage) -> None:
    name = new.name
    known = USER_STAGES.get(name)
    if name in STAGES and known is None:
        score = STAGES[name].score
        code = getattr(score, "__code__", None)
        line = f", line {code.co_firstlineno}" if code is not None else ""
        _clash(
            new,
            f"stage name {name!r} is a built-in stage's (module "
            f"{getattr(score, '__module__', 'pytest_evalcases')}{line}), declared again at "
            f"{new.place}; rename yours",
        )
        return
    if known is not None and known.session == new.session and _place(known) != _place(new):
        _clash(
            new,
            f"stage name {name!r} is declared twice: at {known.place} and at {new.place}; "
            "a stage name names one stage: rename one",
        )
        return
    # New, declared again from its own place (a module imported again), or left by an
    # earlier pytest session of this process: this declaration's stage.
    USER_STAGES[name] = new
    STAGES[name] = user_stage(new)


def _place(declared: DeclaredStage) -> tuple[str, int]:
    return declared.file, declared.line


def _clash(new: DeclaredStage, message: str) -> None:
    if _ADOPTION.clashes is None:
        _ADOPTION.clashes = {}
    earlier = _ADOPTION.clashes.get(new.name)
    if earlier is None or earlier[0] != new.session:  # the first clash of a session is named
        _ADOPTION.clashes[new.name] = (new.session, message)


def _forget_unloaded(session: int) -> None:
    """A new pytest session in this process: the user stages of earlier ones whose module is
    no longer loaded (a test run's conftest, forgotten with its run) leave the registry."""
    for name, known in list(USER_STAGES.items()):
        if known.session == session:
            continue
        module = sys.modules.get(known.module)
        if module is None or getattr(module, "__dict__", None) is not known.namespace:
            del USER_STAGES[name]
            STAGES.pop(name, None)


def stage_field_names(runs: Iterable[str]) -> tuple[frozenset[str], frozenset[str]]:
    """The case fields the user stages among `runs` read: (kept from the system, shared with
    it). A field some stage shares is shared. Once per suite, at collection."""
    hidden: set[str] = set()
    shared: set[str] = set()
    for name in runs:
        declared = USER_STAGES.get(name)
        if declared is not None:
            (shared if declared.share_with_system else hidden).update(declared.reads)
    return frozenset(hidden - shared), frozenset(shared)
