"""Each case's HTTP, recorded and replayed through vcrpy's patches.

vcrpy patches process-wide, while cases overlap under `--eval-concurrency`: one set of patches is
installed for the run, with a router in place of vcrpy's cassette that hands every request to the
case it belongs to. A request belongs to the case whose `run(case)` made it: a `contextvars`
variable set around the system run follows asyncio tasks and `asyncio.to_thread`, and (while the
layer is on) work a case hands to a thread pool (`loop.run_in_executor`, its own
ThreadPoolExecutor). A request made outside any case (the judge's own) goes to the network
untouched.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import os
import threading
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from contextvars import ContextVar
from typing import Any
from unittest import mock

from ..store.http import playable_response, stored_request, stored_response
from ..store.redaction import redact, secret_values_from_env
from .match import closest, describe, parse_json_path, request_view, summarise
from .scrub import scrub_request, scrub_response

_CURRENT: ContextVar[CaseHttp | None] = ContextVar("evalcases_case_http", default=None)
# The suite's "allow_subprocess" for the cases replayed inside `subprocess_permission`: the
# engine builds each case's CaseHttp, the source that calls it knows the suite.
_ALLOW_SUBPROCESS: ContextVar[bool] = ContextVar("evalcases_allow_subprocess", default=False)


def context_case() -> CaseHttp | None:
    """The case the calling code runs for, by its context alone (not a sole case's threads)."""
    return _CURRENT.get()


@contextmanager
def subprocess_permission(allowed: bool) -> Iterator[None]:
    """The CaseHttp made inside let the system start subprocesses (under --replay-http) when
    `allowed`."""
    token = _ALLOW_SUBPROCESS.set(allowed)
    try:
        yield
    finally:
        _ALLOW_SUBPROCESS.reset(token)


class UnservedRequest(BaseException):  # noqa: N818 (it stops the system; it is not an error of ours)
    """Raised inside the system's HTTP client when --replay-http cannot serve a request.

    A BaseException, so an SDK's retry loop (which catches Exception) does not send it again and
    again; the case records the reason, so a system that swallows it still fails the case."""


class CaseHttp:
    """One case's HTTP: the exchanges recorded now, or the recorded ones served back."""

    def __init__(
        self,
        where: str,
        recorded: list[dict[str, Any]] | None = None,
        ignore: list[str] = (),  # type: ignore[assignment]
        allow_hosts: list[str] = (),  # type: ignore[assignment]
        allow_subprocess: bool | None = None,  # None: as `subprocess_permission` says
    ) -> None:
        self.where = where
        self.replaying = recorded is not None
        self.recorded = recorded or []
        self.ignore = [parse_json_path(path) for path in ignore]
        self.allow_hosts = list(allow_hosts)
        self.allow_subprocess = (
            _ALLOW_SUBPROCESS.get() if allow_subprocess is None else allow_subprocess
        )
        self.interactions: list[dict[str, Any]] = []  # recorded by this run
        self.problem: str | None = None  # the first request or connection replay could not serve
        self._views: list[tuple[Any, ...]] | None = None
        self._played: set[int] = set()
        self._ready: dict[int, dict[str, Any]] = {}  # id(request) -> response about to play
        self._lock = threading.Lock()
        self._secrets = secret_values_from_env(os.environ) if self.replaying else {}

    # ---- recording ----------------------------------------------------------------------------
    def record(self, request: Any, response: Mapping[str, Any]) -> None:
        self.interactions.append(
            {
                "request": stored_request(scrub_request(request._to_dict())),
                "response": stored_response(scrub_response(dict(response))),
            }
        )

    # ---- replaying ----------------------------------------------------------------------------
    def fail(self, message: str) -> UnservedRequest:
        with self._lock:
            if self.problem is None:
                self.problem = message
        return UnservedRequest(message)

    def prepare(self, request: Any) -> None:
        """Find the recorded answer to `request` (played by `play`), or stop the system."""
        live = stored_request(scrub_request(request._to_dict()))
        # The recording's copy had this process's secrets redacted when it was written.
        live, _ = redact(live, self._secrets)
        view = request_view(live, self.ignore)
        with self._lock:
            if self._views is None:
                self._views = [request_view(i["request"], self.ignore) for i in self.recorded]
            for index, recorded in enumerate(self._views):
                if index not in self._played and recorded == view:
                    self._played.add(index)
                    self._ready[id(request)] = self.recorded[index]["response"]
                    return
            views = self._views
        raise self.fail(self._unserved_message(live, view, views))

    def play(self, request: Any) -> dict[str, Any]:
        with self._lock:
            stored = self._ready.pop(id(request))
        return playable_response(stored)

    def _unserved_message(
        self, live: Mapping[str, Any], view: tuple[Any, ...], views: list[tuple[Any, ...]]
    ) -> str:
        head = f"the system sent a request that is not recorded: {describe(live)}"
        same = sum(1 for recorded in views if recorded == view)
        if same:
            return (
                f"{head}; it was recorded {same} time(s) and sent once more — re-record with --live"
            )
        nearest = closest(views, view)
        if nearest is None:
            return f"{head}; the recording holds no request — re-record with --live"
        return (
            f"{head}; closest recorded request differs at {summarise(nearest[1])} — re-record "
            "with --live"
        )


class _Router:
    """Stands where vcrpy expects its cassette: the members its stubs use, each handing the
    request to the current case (and letting requests outside any case through)."""

    _path = "evalcases"
    record_mode = "new_episodes"
    custom_patches = ()
    skip_patchers = ()
    allow_playback_repeats = False
    rewound = True
    _match_on = ()

    def __init__(self, layer: HttpLayer) -> None:
        self._layer = layer

    def __len__(self) -> int:
        return 0

    def can_play_response_for(self, request: Any) -> bool:
        case = self._layer.current()
        if case is None or not case.replaying:
            return False
        case.prepare(request)  # raises when nothing recorded fits
        return True

    def play_response(self, request: Any) -> dict[str, Any]:
        case = self._layer.current()
        assert case is not None  # vcrpy asks can_play_response_for first
        return case.play(request)

    @property
    def write_protected(self) -> bool:
        case = self._layer.current()
        return case is not None and case.replaying

    def filter_request(self, request: Any) -> Any:
        return request

    def append(self, request: Any, response: Mapping[str, Any]) -> None:
        case = self._layer.current()
        if case is not None and not case.replaying:
            case.record(request, response)

    def find_requests_with_most_matches(self, request: Any) -> list[Any]:
        return []


def _submit_in_case_context(submit: Any) -> Any:
    """`ThreadPoolExecutor.submit` that runs work submitted inside a case in a copy of the
    submitter's context, as `asyncio.to_thread` does."""

    @functools.wraps(submit)
    def submit_in_case_context(self: Any, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        if _CURRENT.get() is None:
            return submit(self, fn, *args, **kwargs)
        return submit(self, contextvars.copy_context().run, fn, *args, **kwargs)

    return submit_in_case_context


class HttpLayer:
    """vcrpy's patches for the run, and which case a request belongs to."""

    def __init__(self) -> None:
        self._patches: ExitStack | None = None
        # Under --replay-http cases run one at a time: a request from a thread the system
        # started itself (where the context variable is not set) still belongs to that case.
        self._sole: CaseHttp | None = None

    def current(self) -> CaseHttp | None:
        return _CURRENT.get() or self._sole

    def start(self) -> None:
        if self._patches is not None:
            return
        import vcr.patch
        from vcr.patch import CassettePatcherBuilder

        stack = ExitStack()
        for patcher in CassettePatcherBuilder(_Router(self)).build():
            self._bypass_outside_cases(patcher)
            stack.enter_context(patcher)
        # vcrpy's http.client/urllib3 stubs call `force_reset()` while they build and send a
        # real request: it puts every client's real classes back, process-wide, for that
        # moment. With cases overlapping in threads, another case's request made then (requests,
        # httpx, urllib...) bypassed the patches: sent, yet neither recorded nor served. The
        # stubs' real connections are the classes vcrpy saved at import, so the run's patches
        # can stay in place for everyone.
        stack.enter_context(mock.patch.object(vcr.patch, "force_reset", nullcontext))
        # A thread pool's worker starts with an empty context: a request the system made there
        # (run_in_executor, its own pool) belonged to no case, so --live sent it unrecorded and
        # --replay-http (which serves such threads) then found it missing, every time.
        submit = ThreadPoolExecutor.submit
        stack.enter_context(
            mock.patch.object(ThreadPoolExecutor, "submit", _submit_in_case_context(submit))
        )
        self._patches = stack

    def stop(self) -> None:
        if self._patches is not None:
            self._patches.close()
            self._patches = None

    def _bypass_outside_cases(self, patcher: Any) -> None:
        """A request outside any case (the judge's) skips vcrpy's stub altogether: the stub
        would copy and buffer every judge reply for nothing."""
        new = getattr(patcher, "new", None)
        if not inspect.isfunction(new):
            return  # a replacement class: the router lets its requests through
        original = getattr(patcher.getter(), patcher.attribute, None)
        if not inspect.isfunction(original):
            return
        current = self.current

        @functools.wraps(original)
        def dispatch(*args: Any, **kwargs: Any) -> Any:
            if current() is None:
                return original(*args, **kwargs)
            return new(*args, **kwargs)

        patcher.new = dispatch

    @contextmanager
    def case(self, case_http: CaseHttp, sole: bool = False) -> Iterator[CaseHttp]:
        """Attribute the requests made inside to `case_http` (`sole`: also those of threads
        the system starts, when no other case runs at the same time)."""
        token = _CURRENT.set(case_http)
        if sole:
            self._sole = case_http
        try:
            yield case_http
        finally:
            _CURRENT.reset(token)
            if sole:
                self._sole = None
