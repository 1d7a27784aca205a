"""The system under test: resolving `module:attribute`, running it (sync or async), fingerprint."""

from __future__ import annotations

import contextvars
import copy
import importlib
import inspect
import sys
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import CaseFileError, SystemTimeout, UserCodeExit, UserInterrupt
from ..core.hook_threads import start_daemon
from ..core.schema import SYSTEM_HIDDEN_FIELDS, Case


class AttributeMapping(dict):
    """A dict whose keys also read as attributes (`case.input`, `case["input"]`): what user code
    receives from the plugin."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        try:
            return self[name]
        except KeyError:
            raise AttributeError(name) from None


class CaseInput(AttributeMapping):
    """What the system receives: `input`, `id` and the case's extra fields. Expectations are
    left out, so a system cannot peek at the answer and editing them never stales a
    recording."""

    __slots__ = ()


class ConfiguredCaseInput(CaseInput):
    """A case's view with `run_config`, the authored input manifest's values: the suite keys
    them as `run_config.<name>` (manifest/authored.py), so the case's key leaves them out."""

    __slots__ = ()


RUN_CONFIG = "run_config"


def system_view(case: Case, run_config: Mapping[str, Any] | None = None) -> CaseInput:
    view = (CaseInput if run_config is None else ConfiguredCaseInput)(id=case.id, input=case.input)
    if case.user is not None:  # whose memory the system answers from
        view["user"] = case.user
    if case.extra:
        view.update(case.extra)
    if case.turns is not None:  # the whole conversation: every user message, nothing before it
        view["turns"] = [turn.input for turn in case.turns]
        view["history"] = []
    if run_config is not None:  # a copy per case: a system that edits it changes no other case
        view[RUN_CONFIG] = AttributeMapping(copy.deepcopy(dict(run_config)))
    return view


def key_view(view: Mapping[str, Any]) -> dict[str, Any]:
    """The part of the system's view that goes into the key: not the id (it names the cassette)."""
    hidden = (RUN_CONFIG,) if isinstance(view, ConfiguredCaseInput) else ()
    return {
        name: value
        for name, value in view.items()
        if name not in SYSTEM_HIDDEN_FIELDS and name not in hidden
    }


class System:
    """A resolved system: `run(case)`, optional `fingerprint()` and `setup(suite)`."""

    def __init__(self, spec: str, target: Any) -> None:
        self.spec = spec
        self._fingerprint: dict[str, Any] | None = None
        self._fingerprint_stuck: str | None = None  # why fingerprint() never returned
        self._set_up = False
        self._setup_error: BaseException | None = None
        self._setup_lock = threading.Lock()  # setup runs in worker threads, once
        self._bind(target)

    @property
    def built(self) -> bool:
        """Whether the object `system` names exists yet (a fixture's is built on demand)."""
        return True

    def _bind(self, target: Any) -> None:
        spec = self.spec
        run = getattr(target, "run", None)
        if run is None and callable(target):
            run = target
        if not callable(run):
            raise CaseFileError(
                f"system {spec!r} has no run(case) method and is not callable; point 'system' at "
                "an object with run(case) or at a function"
            )
        self._run: Callable[[Any], Any] = run
        # Conversation cases: the plugin drives the turns itself when the system has run_turn.
        run_turn = getattr(target, "run_turn", None)
        self.run_turn: Callable[[Any, list[dict[str, str]]], Any] | None = (
            run_turn if callable(run_turn) else None
        )
        self._target = target

    @property
    def target(self) -> Any:
        """The object `system` names (its optional hooks, e.g. `setup_user`, are read off it)."""
        return self._target

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self._run)

    def fingerprint(self, timeout: float | None = None) -> dict[str, Any]:
        """Computed once per session: it may read prompts or config files. With `timeout`, a
        fingerprint() that has not returned by then is an error (and stays one: the next suite
        of this system does not wait again)."""
        if self._fingerprint_stuck is not None:
            raise CaseFileError(self._fingerprint_stuck)
        if self._fingerprint is None:
            method = getattr(self._target, "fingerprint", None)
            try:
                value = (
                    call_within(method, timeout, f"fingerprint() of system {self.spec!r}")
                    if callable(method)
                    else {}
                )
            except Unfinished:
                self._fingerprint_stuck = (
                    f"system {self.spec!r}: fingerprint() did not finish in {timeout:g} s "
                    f"(--eval-timeout); {_SLOW_HINT}"
                )
                raise CaseFileError(self._fingerprint_stuck) from None
            except KeyboardInterrupt:
                raise UserInterrupt(
                    f"KeyboardInterrupt in fingerprint() of the system {self.spec!r}"
                ) from None
            except BaseException as exc:  # user code: report it on the suite, not as a crash
                raise CaseFileError(
                    f"system {self.spec!r}: fingerprint() raised {type(exc).__name__}: {exc}"
                ) from None
            if not isinstance(value, dict):
                raise CaseFileError(f"system {self.spec!r}: fingerprint() must return a dict")
            self._fingerprint = value
        return self._fingerprint

    def setup(self, suite: Any, timeout: float | None = None) -> None:
        """Called once, before the first live case; if it raised, every later case gets the same
        error (the system is not set up, so none of its cases can be recorded). With `timeout`
        (the suite's, --eval-timeout), a setup that has not returned by then is that error (its
        thread is left behind: nothing can stop it from outside); a Ctrl-C ends the wait."""
        with self._setup_lock:
            if not self._set_up:
                method = getattr(self._target, "setup", None)
                if callable(method):
                    hook = f"setup(suite) of suite {suite.name!r}"
                    try:
                        call_within(lambda: method(suite), timeout, hook)
                    except Unfinished:
                        assert timeout is not None
                        self._setup_error = SystemTimeout(
                            f"{hook} did not finish within {timeout:g} s ({TIMEOUT_OPTION}); "
                            f"the system {self.spec!r} is not set up, so none of its cases "
                            "can run; raise the limit if it is slow (its thread is left "
                            "behind: a hook cannot be stopped from outside)"
                        )
                    except (KeyboardInterrupt, Exception) as exc:
                        if isinstance(exc, KeyboardInterrupt):
                            raise
                        self._setup_error = carried("setup(suite)", exc)
                    except BaseException as exc:
                        # SystemExit & co. would end the session; an unserved --replay-http
                        # request keeps its own type, so the case reads as stale.
                        exit_like = type(exc).__name__ != "UnservedRequest"
                        self._setup_error = (
                            UserCodeExit(exit_message("setup(suite)", exc)) if exit_like else exc
                        )
                self._set_up = True  # only now: `asetup` reads it without the lock
        if self._setup_error is not None:
            raise self._setup_error

    async def asetup(self, suite: Any, timeout: float | None = None) -> None:
        """`setup` for the event loop: waited for in a daemon thread the first time (it may
        block; a Ctrl-C's cancelling stops the wait at once, and no thread of the loop's pool is
        left waiting), inline once it has run (then it only re-raises its error, if any: no
        thread hop per case)."""
        if self._set_up:
            self.setup(suite, timeout)
        else:
            await run_in_daemon_thread(lambda s: self.setup(s, timeout), suite, "setup(suite)")

    def call(self, case: CaseInput) -> Any:
        """`run(case)` as written: a value, or an awaitable for an async system."""
        try:
            return self._run(case)
        except StopIteration as exc:
            raise carried("run(case)", exc) from exc
        except (KeyboardInterrupt, Exception):
            raise
        except BaseException as exc:  # SystemExit & co. would end the whole session
            raise UserCodeExit(exit_message("run(case)", exc)) from exc

    async def arun(self, case: CaseInput, where: str | None = None) -> Any:
        """Run one case; a sync system runs in a daemon thread of its own, so cases overlap and
        a system that hangs past its timeout is left behind without holding up the exit
        (`where`, the case's `suite::id`, names it then)."""
        try:
            if self.is_async:
                try:
                    return await self._run(case)
                except RuntimeError as exc:  # PEP 479 wraps a coroutine's StopIteration
                    if not isinstance(exc.__cause__, StopIteration):
                        raise
                    raise carried("run(case)", exc.__cause__) from exc.__cause__
            hook = f"run(case) of {where or repr(case.get('id'))}"
            result = await run_in_daemon_thread(self._run, case, hook=hook)
            if inspect.isawaitable(result):
                result = await result
            return result
        except (KeyboardInterrupt, Exception):
            raise
        except BaseException as exc:
            if type(exc).__name__ == "CancelledError":  # a timeout or Ctrl-C cancelling us
                raise
            raise UserCodeExit(exit_message("run(case)", exc)) from exc


FIXTURE_PREFIX = "fixture:"


def fixture_name(spec: str) -> str | None:
    """The pytest fixture a `fixture:NAME` system names, or None for another form."""
    return spec[len(FIXTURE_PREFIX) :] if spec.startswith(FIXTURE_PREFIX) else None


class SystemOnDemand(System):
    """A system a pytest fixture builds: nothing of it runs at collection (its key holds the
    fixture's code, not a fingerprint() of its value) and a plain replay never builds it.
    `build` (the pytest layer's) returns the fixture's value, the same kind of object a
    `module:attribute` names; what it raised is the error of every case of the suite."""

    def __init__(self, spec: str, build: Callable[[], Any]) -> None:
        super().__init__(spec, _unbuilt)
        self._build = build
        self._built = False
        self._build_error: BaseException | None = None
        self._build_lock = threading.Lock()

    @property
    def built(self) -> bool:
        return self._built

    def build(self) -> None:
        """Build it once, in the calling thread; every later call re-raises the build's error."""
        with self._build_lock:
            if not self._built and self._build_error is None:
                try:
                    self._bind(self._build())
                    self._built = True
                except KeyboardInterrupt:
                    raise
                except BaseException as exc:  # SystemExit & co. of a fixture: this suite's error
                    self._build_error = exc
        if self._build_error is not None:
            raise self._build_error

    @property
    def target(self) -> Any:
        self.build()
        return self._target

    def fingerprint(self, timeout: float | None = None) -> dict[str, Any]:
        """Read at collection, where no fixture is built: the fixture's code is in the key."""
        return {}

    def setup(self, suite: Any, timeout: float | None = None) -> None:
        self.build()
        super().setup(suite, timeout)


def _unbuilt(case: Any) -> Any:  # run(case) of a SystemOnDemand before build(): never called
    raise RuntimeError("the system's fixture was not built before its first case ran")


class UserStopIteration(RuntimeError):
    """User code raised StopIteration (`next()` on an exhausted iterator). It cannot cross a
    Future or a coroutine (asyncio refuses it, or turns it into another error), so it is
    carried as this ordinary exception from where the user's function was called."""


def carried(what: str, exc: Exception) -> Exception:
    """`exc` as it can travel to the awaiting task: a StopIteration becomes UserStopIteration
    (naming the hook), any other exception is itself."""
    if not isinstance(exc, StopIteration):
        return exc
    carrier = UserStopIteration(
        f"{what} raised StopIteration({', '.join(map(repr, exc.args))}): next() on an "
        "exhausted iterator or generator in the system's code; give next() a default or "
        "catch StopIteration there"
    )
    carrier.__cause__, carrier.__suppress_context__ = exc, True  # as `raise … from exc`
    return carrier


def exit_message(what: str, exc: BaseException) -> str:
    return (
        f"{what} raised {type(exc).__name__}({', '.join(map(repr, exc.args))}): a system may "
        "not end the test session; raise an exception instead"
    )


async def run_in_daemon_thread(
    function: Callable[[Any], Any],
    argument: Any,
    what: str = "run(case)",
    hook: str | None = None,
) -> Any:
    """`function(argument)` in a new daemon thread, with this context (so a request it makes
    belongs to this case). Unlike a thread pool's worker, a thread that never returns does not
    hold up the end of the run: the interpreter does not wait for daemon threads, and a
    cancelled task (a timeout, a Ctrl-C) stops waiting for it at once. `what` names the hook in
    the error of a StopIteration, which a Future cannot carry; `hook` (user code: "run(case) of
    s::c1") is what the run says it left behind if the thread is still running at its end."""
    import asyncio

    loop = asyncio.get_running_loop()
    future = loop.create_future()
    context = contextvars.copy_context()

    def settle(outcome: tuple[bool, Any]) -> None:
        if not future.done():
            ok, value = outcome
            future.set_result(value) if ok else future.set_exception(value)

    def target() -> None:
        try:
            outcome: tuple[bool, Any] = (True, context.run(function, argument))
        except Exception as exc:  # handed to the awaiting task, which decides
            outcome = (False, carried(what, exc))
        except BaseException as exc:
            outcome = (False, exc)
        try:
            loop.call_soon_threadsafe(settle, outcome)
        except RuntimeError:  # the loop is gone: nobody waits for this case any more
            pass

    start_daemon(target, "evalcases-system", hook)
    return await future


# The bound of one call of user code, as a message names it.
TIMEOUT_OPTION = '--eval-timeout, or the suite\'s "timeout"'


class Unfinished(Exception):  # noqa: N818 (not an error of ours: user code that did not return)
    """`call_within`'s function had not returned when the time was up."""


_SLOW_HINT = (
    "collection waits this long for the system's import and fingerprint(); keep them quick "
    "(build clients and read keys lazily, in setup(suite) or on the first run(case): see "
    'docs/system.md), or raise the limit with --eval-timeout (or the suite\'s "timeout")'
)


def call_within(function: Callable[[], Any], timeout: float | None, hook: str | None = None) -> Any:
    """`function()`, given `timeout` seconds (None: all the time it takes): it runs in a daemon
    thread with this context, so one that never returns is left behind without holding up the
    end of the run, and a Ctrl-C ends the wait at once (KeyboardInterrupt in the main thread).
    Returns its value, raises what it raised, or Unfinished. `hook` (user code: "setup(suite) of
    suite 's'") is what the run says it left behind if the thread is still running at its end."""
    if timeout is None:
        return function()
    outcome: list[tuple[bool, Any]] = []
    done = threading.Event()

    def target() -> None:
        try:
            outcome.append((True, function()))
        except BaseException as exc:  # handed to the caller, which decides
            outcome.append((False, exc))
        finally:
            done.set()

    context = contextvars.copy_context()
    start_daemon(lambda: context.run(target), "evalcases-hook", hook)
    if not done.wait(timeout):  # a lock's wait: a signal interrupts it (a join may not)
        raise Unfinished
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


def split_spec(spec: str) -> tuple[str, str] | None:
    """(module, attribute path) of a `module:attribute` spec, or None for another form."""
    module_name, sep, attr_path = spec.partition(":")
    return (module_name, attr_path) if sep and module_name and attr_path else None


def import_spec(module_name: str, attr_path: str, rootdir: Path) -> Any:
    """The object `module:attribute` names, imported with the rootdir on sys.path; raises
    whatever the import raises."""
    root = str(rootdir)
    if root not in sys.path:
        sys.path.insert(0, root)
    target: Any = importlib.import_module(module_name)
    for part in attr_path.split("."):
        target = getattr(target, part)
    return target


# The key of `resolve_system`'s cache under which the modules whose import never finished are
# kept (no spec reads so: a spec has a colon).
_STUCK_IMPORTS = "<imports that did not finish>"


def resolve_system(
    spec: str, rootdir: Path, cache: dict[str, Any], timeout: float | None = None
) -> System:
    """Import `module:attribute` with the rootdir on sys.path (once per spec per session). With
    `timeout`, an import that has not finished by then is an error, kept as the spec's (and its
    module's) answer: another suite neither imports it again nor waits again."""
    known = cache.get(spec)
    if isinstance(known, CaseFileError):
        raise CaseFileError(str(known))
    if known is not None:
        return known
    parts = split_spec(spec)
    if parts is None:
        raise CaseFileError(
            f"system {spec!r} must read 'module:attribute', e.g. 'demo.assistant:system'"
        )
    module_name = parts[0]
    stuck: dict[str, str] = cache.setdefault(_STUCK_IMPORTS, {})
    for name, message in stuck.items():
        if module_name == name or module_name.startswith(name + "."):
            raise CaseFileError(message)  # its import holds the module's lock: never again
    loaded = sys.modules.get(module_name)
    if loaded is not None and not getattr(getattr(loaded, "__spec__", None), "_initializing", 0):
        timeout = None  # imported already: no thread for a look-up
    try:
        target = call_within(
            lambda: import_spec(*parts, rootdir), timeout, f"the import of system {spec!r}"
        )
    except Unfinished:
        failure = CaseFileError(
            f"importing the system {spec!r} did not finish in {timeout:g} s (--eval-timeout); "
            f"{_SLOW_HINT}"
        )
        cache[spec] = failure
        stuck[module_name] = str(failure)
        raise CaseFileError(str(failure)) from None
    except KeyboardInterrupt:
        raise UserInterrupt(f"KeyboardInterrupt at import of the system {spec!r}") from None
    except BaseException as exc:  # any import-time failure of user code, SystemExit included
        if isinstance(exc, ImportError | AttributeError):
            hint = f"check the module path (imported with {rootdir} on sys.path)"
        else:  # the module was found and raised while it ran
            hint = (
                f"the module raised while being imported; a replay imports {module_name!r} to "
                "read its fingerprint but never runs it, so build clients and read keys "
                "lazily (in setup(suite) or on the first run(case)): see docs/system.md"
            )
        raise CaseFileError(
            f"cannot import system {spec!r}: {type(exc).__name__}: {exc}; {hint}"
        ) from None
    system = System(spec, target)
    cache[spec] = system
    return system
