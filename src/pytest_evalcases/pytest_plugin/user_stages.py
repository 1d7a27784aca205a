"""Where a suite's own stages come from, at collection: the conftest files pytest imported (their
`@ev.stage` declarations are recorded as they load), the suite's `"stage_modules"` (imported
here with the rootdir on sys.path, as the system's module is), and stage packs installed with
pip, through the entry-point group `pytest_evalcases.stages` (each entry point named after its
stage, loaded only when a suite names a stage no other source has: a run that does not need
one never reads the installed packages' metadata).

Every function raises CaseFileError without the file's name: the caller adds it."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from ..core.errors import CaseFileError, UserInterrupt
from ..core.suite_schema import Suite
from ..domain.stages.registry import STAGES, adopt_declared_stages

ENTRY_POINT_GROUP = "pytest_evalcases.stages"


def gather_stages(suite: Suite, rootdir: Path, imported: dict[str, Any]) -> None:
    """Make every stage the suite names known: import its stage modules (once per session:
    `imported` holds each module's outcome), register what was declared, then load the
    entry points of the names still unknown. A name no source has is left for the caller's
    unknown-stage message."""
    for module in suite.stage_modules:
        _import_stage_module(module, rootdir, imported)
    adopt_declared_stages()
    own = {*suite.judged_stages, *suite.metrics}  # the suite's own judged stages: no pack's
    missing = [
        name
        for name in (*suite.stages, *suite.report_only)
        if name not in STAGES and name not in own
    ]
    if missing:
        _load_entry_points(missing)


def _import_stage_module(name: str, rootdir: Path, imported: dict[str, Any]) -> None:
    known = imported.get(name)
    if isinstance(known, CaseFileError):
        raise CaseFileError(str(known))
    if known is not None:
        return
    root = str(rootdir)
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        imported[name] = importlib.import_module(name)
    except KeyboardInterrupt:
        raise UserInterrupt(f"KeyboardInterrupt at import of the stage module {name!r}") from None
    except BaseException as exc:  # the user's module: this suite's error, not the session's
        if isinstance(exc, ModuleNotFoundError) and exc.name == name.split(".")[0]:
            hint = f"it is looked up with the rootdir {rootdir} on sys.path: fix the name"
        else:
            hint = "the module raised while being imported; fix it"
        failure = CaseFileError(
            f'cannot import the stage module {name!r} ("stage_modules"): '
            f"{type(exc).__name__}: {exc}; {hint}"
        )
        imported[name] = failure
        raise CaseFileError(str(failure)) from None


def _stage_entry_points() -> list[Any]:
    from importlib.metadata import entry_points  # only for a stage no other source has

    return list(entry_points(group=ENTRY_POINT_GROUP))


def _load_entry_points(names: list[str]) -> None:
    """Load the entry point of each name in `names` that a stage pack declares: importing it
    declares its stages (a pack module may declare several)."""
    wanted = set(names)
    for entry_point in _stage_entry_points():
        if entry_point.name not in wanted or entry_point.name in STAGES:
            continue
        source = _entry_point_source(entry_point)
        try:
            loaded = entry_point.load()
        except KeyboardInterrupt:
            raise UserInterrupt(f"KeyboardInterrupt at the load of {source}") from None
        except BaseException as exc:  # an installed package's code: this suite's error
            raise CaseFileError(
                f"cannot load the stage {entry_point.name!r} from {source}: "
                f"{type(exc).__name__}: {exc}; fix or reinstall the package"
            ) from None
        adopt_declared_stages()
        if entry_point.name not in STAGES:
            raise CaseFileError(
                f"{source} was loaded ({loaded!r}) but declared no stage {entry_point.name!r}: "
                f'the entry point names a function decorated with @ev.stage("{entry_point.name}")'
            )


def _entry_point_source(entry_point: Any) -> str:
    """`the entry point sql_rows = "pack.sql:sql_rows" of myteam-checks 1.0`."""
    dist = getattr(entry_point, "dist", None)
    package = f" of {dist.name} {dist.version}" if dist is not None else ""
    return f'the entry point {entry_point.name} = "{entry_point.value}"{package}'


def known_stage_names() -> list[str]:
    """Every stage a suite may name: built-in, declared, and those stage packs offer (their
    entry points' names, read without importing them)."""
    names = dict.fromkeys(STAGES)
    names.update(dict.fromkeys(entry_point.name for entry_point in _stage_entry_points()))
    return list(names)
