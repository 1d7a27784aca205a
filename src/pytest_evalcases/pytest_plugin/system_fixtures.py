"""Systems built by pytest fixtures: `"system": "fixture:NAME"`, and a conftest's
`evalcases_system(request)` fixture for the suites that name no system.

At collection the fixture is only looked up, never called: its definition says where it is (an
unknown name errors the suite, with the name it is close to), and its file with the project
modules that file imports goes into the key. A run that runs the system (--live, --replay-http)
builds it with pytest's own fixture machinery, on the main thread before the case that needs it:
its own fixtures are requested like any test's, its teardown runs at the end of the session. A
plain replay never builds it.

Scopes: a session- or package-scoped fixture is pytest's own, built once per process (each
xdist worker is one) and shared with every suite and test that requests it. A narrower one
(module, class, function: pytest's default) and `evalcases_system` are built once for each suite
(case file) whose system they are; `evalcases_system` reads that suite as `request.param`.
"""

from __future__ import annotations

import copy
import difflib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from _pytest.compat import NOTSET
from _pytest.fixtures import FixtureLookupError, FuncFixtureInfo, SubRequest, TopRequest
from _pytest.outcomes import OutcomeException
from _pytest.scope import Scope

from ..core.errors import CaseFileError
from ..core.names import shown_file
from ..core.suite_schema import Suite
from ..domain.system import FIXTURE_PREFIX, System, SystemOnDemand, fixture_name

SYSTEM_FIXTURE = "evalcases_system"
_NODES = pytest.StashKey[dict[Path, pytest.Collector]]()  # case file -> its collector


@dataclass(frozen=True, slots=True)
class FixtureSystem:
    """A suite's system built by a fixture, and the file whose code goes into its key."""

    system: System
    module: str  # the fixture file as a dotted name under the rootdir (`tests.conftest`)
    path: Path | None  # None: defined outside the rootdir (an installed plugin): no code key


def default_spec(config: pytest.Config, path: Path, node: pytest.Collector | None) -> str | None:
    """`fixture:evalcases_system` when a fixture of that name is visible from the case file,
    else None. Called for the suites that name no system (it comes before the ini's
    eval_system: a conftest is closer to the suite)."""
    node = _node_of(config, path, node)
    if node is None:
        return None
    found = node.session._fixturemanager.getfixturedefs(SYSTEM_FIXTURE, node)
    return FIXTURE_PREFIX + SYSTEM_FIXTURE if found else None


def fixture_system(
    spec: str,
    suite: Suite,
    path: Path,
    node: pytest.Collector | None,
    config: pytest.Config,
    systems: dict[str, Any],
) -> FixtureSystem:
    """The system `fixture:NAME` names for this suite (found, not built). CaseFileError for an
    unknown or parametrized fixture."""
    name = fixture_name(spec)
    assert name is not None
    node = _node_of(config, path, node)
    if node is None:
        raise CaseFileError(
            f"system {spec!r}: the fixture is looked up from the case file's folder, and this "
            "run did not collect the file; run it with the case file selected"
        )
    definitions = node.session._fixturemanager.getfixturedefs(name, node)
    if not definitions:
        raise CaseFileError(_unknown_fixture(spec, name, node))
    definition = definitions[-1]  # the closest: a conftest below overrides one above
    where = _where(definition.func, config.rootpath)
    if definition.params is not None:
        raise CaseFileError(
            f"system {spec!r}: fixture {name!r} ({where}) is parametrized; a system fixture "
            "builds one system: take out its params (evalcases_system reads the suite as "
            "request.param)"
        )
    shared = name != SYSTEM_FIXTURE and definition._scope >= Scope.Package
    cache_key = f"{spec} {where}" if shared else f"{spec} {where} {path}"
    system = systems.get(cache_key)
    if system is None:
        per_suite = None if shared else suite
        system = systems[cache_key] = SystemOnDemand(
            spec, _builder(spec, definition, node, per_suite, where)
        )
    module, file = _code_of(definition.func, config.rootpath)
    return FixtureSystem(system, module, file)


def remember_case_file(config: pytest.Config, path: Path, node: pytest.Collector) -> None:
    """Collection tells where each case file's fixtures are looked up (the run manifest reads
    the suites again after collection)."""
    config.stash.setdefault(_NODES, {})[path] = node


def _node_of(
    config: pytest.Config, path: Path, node: pytest.Collector | None
) -> pytest.Collector | None:
    """Where the case file's fixtures are looked up: its collector; for a file this run did
    not collect (the run manifest describes every suite), the deepest collected folder above
    it (the conftests pytest loaded for it)."""
    if node is not None:
        return node
    collected = config.stash.get(_NODES, {})
    known = collected.get(path)
    if known is not None:
        return known
    best: pytest.Collector | None = None
    for other in collected.values():
        for parent in other.listchain():
            folder = getattr(parent, "path", None)
            if (
                isinstance(parent, pytest.Directory)
                and folder is not None
                and path.is_relative_to(folder)
                and (best is None or len(folder.parts) > len(best.path.parts))
            ):
                best = parent
    return best


def build_now(system: System) -> None:
    """Build a fixture's system here, on the main thread, before a case needs it (a live batch
    would build it in a worker thread; --replay-http under the case's recorded HTTP). Its error
    is kept: `setup(suite)` raises it for every case of the suite."""
    if isinstance(system, SystemOnDemand) and not system.built:
        try:
            system.build()
        except Exception:  # kept by the system, raised for each of its cases
            pass


def _builder(
    spec: str, definition: Any, node: pytest.Collector, suite: Suite | None, where: str
) -> Callable[[], Any]:
    """What builds the system: the fixture run through pytest's machinery. `suite`: a fixture
    built for this suite alone (a copy of its definition, whose value and teardown are this
    suite's; `evalcases_system` reads the suite as request.param)."""
    name = definition.argname

    def build() -> Any:
        session = node.session
        state = session._setupstate
        if session not in state.stack:  # a live batch runs before the first item's setup
            state.setup(session)  # the session's finalizers are what tear fixtures down
        if not hasattr(node, "_fixtureinfo"):  # what a top request reads off its node
            node._fixtureinfo = FuncFixtureInfo(  # type: ignore[attr-defined]
                argnames=(), initialnames=(), names_closure=[], name2fixturedefs={}
            )
        used = definition
        param: Any = NOTSET
        if suite is not None:
            used = copy.copy(definition)
            used.cached_result, used._finalizers = None, []
            if name == SYSTEM_FIXTURE:
                param = suite
        top = TopRequest(node, _ispytest=True)  # type: ignore[arg-type]
        request = SubRequest(top, Scope.Session, param, 0, used, _ispytest=True)
        try:
            return used.execute(request)
        except FixtureLookupError as exc:
            raise CaseFileError(
                f"system {spec!r}: fixture {name!r} ({where}) requests fixture "
                f"{exc.argname!r}, which is not defined where the case file is; "
                f"{exc.msg or 'define it in a conftest.py above the case file'}"
            ) from None
        except OutcomeException as exc:  # pytest.fail/skip, a ScopeMismatch
            message = str(exc.msg or type(exc).__name__).splitlines()[0]
            hint = (
                "; a system fixture runs once for the session: the fixtures it requests must "
                "be session-scoped (tmp_path_factory, not tmp_path)"
                if "ScopeMismatch" in message
                else ""
            )
            raise CaseFileError(
                f"system {spec!r}: fixture {name!r} ({where}): {message}{hint}"
            ) from None
        except Exception as exc:
            at = _raised_at(exc, node.config.rootpath)
            raise CaseFileError(
                f"system {spec!r}: fixture {name!r} ({where}) raised {type(exc).__name__}: "
                f"{exc}{f' (at {at})' if at else ''}; none of this suite's cases can run the "
                "system until it builds"
            ) from exc

    return build


def _raised_at(exc: BaseException, rootdir: Path) -> str | None:
    """`evals/conftest.py:11 in orders_db`: the project's last line the exception came
    through (a fixture the system's fixture requests, the agent's constructor)."""
    root = rootdir.resolve()
    last = None
    traceback = exc.__traceback__
    while traceback is not None:
        file = Path(traceback.tb_frame.f_code.co_filename)
        if file.is_absolute() and file.resolve().is_relative_to(root):
            last = traceback
        traceback = traceback.tb_next
    if last is None:
        return None
    file = Path(last.tb_frame.f_code.co_filename).resolve()
    return f"{shown_file(file, root)}:{last.tb_lineno} in {last.tb_frame.f_code.co_name}"


def _unknown_fixture(spec: str, name: str, node: pytest.Collector) -> str:
    manager = node.session._fixturemanager
    known = {
        other
        for table in ("_arg2fixturedefs", "_arg2node2fixturedefs", "_arg2nodeid2fixturedefs")
        for other in getattr(manager, table, {})
    }
    visible = sorted(other for other in known if manager.getfixturedefs(other, node))
    close = difflib.get_close_matches(name, visible, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return (
        f"system {spec!r}: no fixture {name!r} is visible from this case file{hint}; define "
        f"@pytest.fixture def {name}(): ... in a conftest.py in its folder or above it"
    )


def _function(func: Any) -> Any:
    return inspect.unwrap(getattr(func, "__func__", func))


def _where(func: Any, rootdir: Path) -> str:
    """`tests/conftest.py:12`: where a fixture is defined, as messages show it."""
    code = getattr(_function(func), "__code__", None)
    if code is None:
        return "<unknown>"
    return f"{shown_file(Path(code.co_filename), rootdir)}:{code.co_firstlineno}"


def _code_of(func: Any, rootdir: Path) -> tuple[str, Path | None]:
    """The fixture's file as a dotted module name under the rootdir, and its path (None outside
    the rootdir: an installed plugin's code is its version, not the project's)."""
    code = getattr(_function(func), "__code__", None)
    path = Path(code.co_filename).resolve() if code is not None else None
    root = rootdir.resolve()
    if path is None or not path.is_relative_to(root) or path.suffix != ".py":
        return getattr(_function(func), "__module__", "") or "", None
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__" and len(parts) > 1:
        parts.pop()
    return ".".join(parts), path
