"""A suite user's ingestion as a recorded phase: `setup_user(user)` runs once per user before its
first case, its HTTP exchanges and what it returned are recorded under
`<cassettes>/<suite>/users/<id>.json` (and `.http.json`), and later runs reuse or replay it.

- live (--live, --live-stale, --eval-ingest-only): a user whose recording is current is not
  ingested again when the system's `user_ready(user, result)` says its ingested state is still
  there; without `user_ready`, --live ingests again and --live-stale (and --eval-ingest-only)
  reuse it. Otherwise `setup_user` runs with its HTTP recorded, `ready(user, result)` is polled,
  and the recording is written (nothing is written when only timings and volatile values differ).
- --replay-http: `setup_user` runs offline, its HTTP served from the recording (`ready` is not
  polled: the processing it waits for happened when it was recorded).
- plain replay runs no ingestion: the recording is read for its figures alone.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import CassetteError, EvalCaseError, MissingRecording, StaleRecording
from ..core.hashing import content_hash
from ..domain.users import call_hook
from ..http.rerecord import keep_old_volatile
from ..http.router import CaseHttp, UnservedRequest
from ..http.usage import exchanges_usage
from ..http.volatile import Volatility, replay_ignored
from ..store.cassette import shown_path
from ..store.http import http_document, interactions_hash, load_http, save_http
from ..store.keys import REPLAY_HTTP_RUNS, changed_fields, stored_labels, user_ingestion_key
from ..store.redaction import redact_secrets
from ..store.user_recordings import (
    DRY_RUN,
    RECORDED,
    REPLAYED_HTTP,
    REUSED,
    build_user_recording,
    check_writable,
    figures_of,
    load_user_recording,
    save_user_recording,
    user_http_path,
    user_recording_path,
)
from .limits import Interrupted
from .save import ignored_paths

if TYPE_CHECKING:
    from ..domain.context import SuiteContext
    from ..domain.users import SuiteUser
    from ..http.router import HttpLayer

RESULT_CAP = 1_000_000  # characters of JSON: a result is ids, counts and usage, not the data


def ingest_live(
    ctx: SuiteContext,
    http: HttpLayer | None,
    redo: bool,
    dry_run: bool,
    spend: Callable[[float], None] = lambda usd: None,
) -> None:
    """Ingest the context's user for a live run, once per user per process (see the module's
    docstring). `redo` (--live): ingest again unless `user_ready` says the state is still
    there. `dry_run`: write nothing. `spend` (--eval-budget) gets what the ingestion cost,
    as recorded, once, even when it failed after paying."""
    user = ctx.user
    assert user is not None
    try:
        user.once(lambda: _ingest_live(ctx, user, http, redo, dry_run), ctx.suite.name)
    finally:
        spend(user.take_spent())


async def aingest_live(
    ctx: SuiteContext,
    http: HttpLayer | None,
    redo: bool,
    dry_run: bool,
    spend: Callable[[float], None] = lambda usd: None,
) -> None:
    """`ingest_live` for the event loop (in a worker thread the first time); `spend` is
    called in the loop's thread."""
    user = ctx.user
    assert user is not None
    try:
        await user.aonce(lambda: _ingest_live(ctx, user, http, redo, dry_run), ctx.suite.name)
    finally:
        spend(user.take_spent())


def ingest_offline(ctx: SuiteContext, http: HttpLayer) -> None:
    """--replay-http: run the context's user's ingestion offline, once, its HTTP served from
    its recording. StaleRecording when it asks for what the recording does not hold."""
    user = ctx.user
    assert user is not None
    user.once(lambda: _ingest_offline(ctx, user, http), ctx.suite.name)


class ReusedIngestionError(Exception):
    """A case's run failed after its user's ingestion was reused on trust (no `user_ready`)."""


@contextmanager
def reuse_explained(ctx: SuiteContext) -> Iterator[None]:
    """A system run that fails after its user's ingestion was reused without `user_ready` may
    have found nothing in memory (an in-process index is gone in a new process): say so."""
    try:
        yield
    except (EvalCaseError, Interrupted):  # ours: a timeout, a stale request, a Ctrl-C
        raise
    except Exception as exc:
        user = ctx.user
        if user is None or not user.reused_unchecked:
            raise
        raise ReusedIngestionError(
            f"{type(exc).__name__}: {exc} — user {user.id!r}'s ingestion was reused from its "
            "recording, so setup_user did not run in this process (the system has no "
            "user_ready(user, result) to say whether its ingested state is still there); if "
            "the system keeps its memory in the process, give it a user_ready, or re-record "
            "with --live (docs/memory.md)"
        ) from exc


def _ingest_live(
    ctx: SuiteContext, user: SuiteUser, http: HttpLayer | None, redo: bool, dry_run: bool
) -> None:
    target = ctx.system.target
    if not callable(getattr(target, "setup_user", None)):
        return  # nothing to ingest: the system reads its users' files itself
    if not callable(getattr(target, "user_ready", None)):
        # Nothing can tell whether another process's ingestion is there for this one (an
        # in-process memory is not): each process ingests for itself.
        return _ingest_or_reuse(ctx, user, target, http, redo, dry_run, turn_taken=False)
    # Under xdist, the workers running one user's cases take turns: the first ingests and
    # records, the others find its recording current and ask user_ready, which may reuse it.
    with _processes_taking_turns(_path(ctx, user)):
        return _ingest_or_reuse(ctx, user, target, http, redo, dry_run, turn_taken=True)


def _ingest_or_reuse(
    ctx: SuiteContext,
    user: SuiteUser,
    target: Any,
    http: HttpLayer | None,
    redo: bool,
    dry_run: bool,
    turn_taken: bool,
) -> None:
    """`turn_taken`: this process holds the user's turn already (never taken twice: two
    opens of one lock file exclude each other, even in one process)."""
    key, labels = user_ingestion_key(
        ctx.key_fields, ctx.key_labels, user.key_field, ctx.input_fields
    )
    old, before = _recording_there(ctx, user)
    if old is not None and before is not None and old["key"] == key:
        user_ready = getattr(target, "user_ready", None)
        if callable(user_ready):  # the system knows whether its ingested state is still there
            result = old.get("result")
            reuse = bool(call_hook("user_ready", user, ctx.suite.name, user_ready, result))
        else:
            reuse = not redo
        if reuse:
            user.result = old.get("result")
            user.figures = figures_of(old, REUSED)
            user.reused_unchecked = not callable(user_ready)
            return
    if http is None:  # no HTTP layer (never in a live run that records): nothing to record
        user.set_up(target)
        user.wait_ready(target, ctx.suite.name)
        return
    case_http = CaseHttp(_where(ctx, user))
    cost: float | None = None
    try:
        with http.case(case_http):
            duration = user.set_up(target)
        # Outside the recording: how often ready() looks differs from run to run.
        user.wait_ready(target, ctx.suite.name)
        exchanges = case_http.interactions
        result = _recordable(user.result, ctx, user)
        spent = exchanges_usage(exchanges)
        usage, reported_cost = _reported_usage(result)
        cost = reported_cost if reported_cost is not None else spent.cost_usd
        figures = {
            "duration_s": round(duration, 3),
            "ready_wait_s": None if user.ready_wait is None else round(user.ready_wait, 3),
            "requests": spent.requests,
            "usage": usage if usage is not None else spent.usage,
            "cost_usd": cost,
        }
        doc = _save(
            ctx, user, key, labels, result, exchanges, figures, old, before, dry_run, turn_taken
        )
        user.figures = figures_of(doc, DRY_RUN if dry_run else RECORDED)
    finally:  # paid for, even when a later step failed: --eval-budget counts it
        if cost is None:
            cost = exchanges_usage(case_http.interactions).cost_usd
        user.unpaid += cost or 0.0


def _ingest_offline(ctx: SuiteContext, user: SuiteUser, http: HttpLayer) -> None:
    target = ctx.system.target
    if not callable(getattr(target, "setup_user", None)):
        return
    path, http_file = _path(ctx, user), _http_path(ctx, user)
    shown = shown_path(path, ctx.rootdir)
    old = load_user_recording(path, ctx.rootdir)
    exchanges: list[dict[str, Any]] = []
    if old is not None:
        key, labels = user_ingestion_key(
            ctx.key_fields, ctx.key_labels, user.key_field, ctx.input_fields
        )
        # The code runs today (as for a case under --replay-http): its change is no reason.
        stale = changed_fields(
            _without_code(old["key"]), _without_code(key), stored_labels(old, "key"), labels
        )
        if stale:
            raise StaleRecording(
                f"stale ingestion recording of user {user.id!r} ({shown}): {'; '.join(stale)}; "
                "re-record it with --eval-ingest-only (or the user's cases with --live)"
            )
        exchanges = load_http(http_file, shown_path(http_file, ctx.rootdir)) or []
        if interactions_hash(exchanges) != old["integrity"]["http"]:
            raise CassetteError(
                f"ingestion recording edited by hand: {shown_path(http_file, ctx.rootdir)} is "
                f"not the HTTP recording {shown} names; re-record it with --eval-ingest-only"
            )
    suite = ctx.suite
    case_http = CaseHttp(_where(ctx, user), exchanges, replay_ignored(suite), suite.allow_hosts)
    with http.case(case_http, sole=True):
        try:
            user.set_up(target)
        except UnservedRequest:
            pass  # said below, whatever setup_user made of it
    if case_http.problem:
        if old is None:
            raise MissingRecording(
                f"no ingestion recording of user {user.id!r} ({shown}) to serve setup_user's "
                f"requests ({case_http.problem.split(' — ')[0]}); record it with "
                "--eval-ingest-only (or the user's cases with --live)"
            )
        raise StaleRecording(f"stale ingestion recording of user {user.id!r}: {case_http.problem}")
    if old is not None:
        user.figures = figures_of(old, REPLAYED_HTTP)


@contextmanager
def _processes_taking_turns(path: Path) -> Iterator[None]:
    """An exclusive lock, across processes, named after the recording at `path` (in the
    temporary folder, never beside the recordings). Where there is no `fcntl` (Windows), none:
    each process ingests for itself, as under --live."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - POSIX here
        yield
        return
    folder = Path(tempfile.gettempdir()) / "pytest-evalcases-locks"
    try:
        folder.mkdir(exist_ok=True)
        handle = open(folder / f"{content_hash(str(path.resolve()))}.lock", "a")  # noqa: SIM115
    except OSError:  # another account's lock file, a read-only temp folder: no turns
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # released when the file closes, or the process ends
        yield


def _recording_there(
    ctx: SuiteContext, user: SuiteUser
) -> tuple[dict[str, Any] | None, list[dict[str, Any]] | None]:
    """The recording there is (None when there is none, or it cannot be read: a live run
    records it anew) and its HTTP exchanges (None when the pair does not hold: a write
    interrupted between the two files, or one edited by hand)."""
    try:
        old = load_user_recording(_path(ctx, user), ctx.rootdir)
        if old is None:
            return None, None
        http_file = _http_path(ctx, user)
        before = load_http(http_file, shown_path(http_file, ctx.rootdir)) or []
    except CassetteError:
        return None, None
    if interactions_hash(before) != old["integrity"]["http"]:
        return old, None
    return old, before


def _save(
    ctx: SuiteContext,
    user: SuiteUser,
    key: dict[str, str],
    labels: dict[str, str],
    result: Any,
    exchanges: list[dict[str, Any]],
    figures: dict[str, Any],
    old: dict[str, Any] | None,
    before: list[dict[str, Any]] | None,
    dry_run: bool,
    turn_taken: bool = False,
) -> dict[str, Any]:
    """Write the HTTP file, then the recording naming its hash (a kill between the two leaves
    a pair the next run re-records). Secrets are redacted first. Nothing is written when the
    same result came back over the same exchanges but for timings and a provider's fresh
    values (those take their old form again); the result itself is never rewritten: a new
    memory id is the service's state, not noise."""
    (result, exchanges, labels), _ = redact_secrets([result, exchanges, labels])
    same_result = (
        old is not None and before is not None and old["key"] == key and old.get("result") == result
    )
    if same_result:
        assert before is not None
        volatility = Volatility(ctx.suite.http_volatile)
        exchanges = keep_old_volatile(before, exchanges, volatility, ignored_paths(ctx)).exchanges
    http_hash = interactions_hash(exchanges)
    doc = build_user_recording(
        ctx.suite.name, user.id, key, {"key": labels} if labels else {}, result, figures, http_hash
    )
    unchanged = same_result and old is not None and old["integrity"]["http"] == http_hash
    user.recording_unchanged = unchanged
    if dry_run or unchanged:
        return doc
    path, http_file = _path(ctx, user), _http_path(ctx, user)
    check_writable(path)  # before the first write: nothing goes through a symlinked folder
    # Under xdist two workers may record one user (each ingests for itself without
    # user_ready): the pair is written by one at a time.
    try:
        with nullcontext() if turn_taken else _processes_taking_turns(path):
            if exchanges:
                written = save_http(http_file, http_document(ctx.suite.name, user.id, exchanges))
                doc["integrity"]["http"] = written
            elif http_file.is_file() and not http_file.is_symlink():
                http_file.unlink()  # an ingestion that now makes no request: its exchanges go
            save_user_recording(path, doc)
    except OSError as exc:  # ours, not setup_user's: say which file
        raise CassetteError(
            f"cannot record the ingestion of user {user.id!r}: {shown_path(path, ctx.rootdir)}: "
            f"{exc.strerror or exc}; make {shown_path(path.parent, ctx.rootdir)} a writable "
            "folder"
        ) from None
    return doc


def _recordable(result: Any, ctx: SuiteContext, user: SuiteUser) -> Any:
    """What `setup_user` returned, as JSON; None (said in the docs) when it is not JSON, e.g.
    a client object. CassetteError when it is too big to be a summary."""
    try:
        text = json.dumps(result, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    if len(text) > RESULT_CAP:
        raise CassetteError(
            f"setup_user({user.id!r}) of suite {ctx.suite.name!r} returned {len(text):,} "
            f"characters of JSON (at most {RESULT_CAP:,}); return a summary (a memory id, "
            "counts, usage), not the data"
        )
    return json.loads(text)


def _reported_usage(result: Any) -> tuple[dict[str, int] | None, float | None]:
    """The usage and cost `setup_user` reported in its result (`{"usage": {...}, "cost_usd":
    ...}`), which win over what its HTTP exchanges say (they may miss a provider's shape)."""
    if not isinstance(result, dict):
        return None, None
    usage = result.get("usage")
    counts = None
    if isinstance(usage, dict):
        prompt, completion = (usage.get(name) for name in ("prompt_tokens", "completion_tokens"))
        if all(type(n) is int and n >= 0 for n in (prompt, completion)):
            counts = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
    cost = result.get("cost_usd")
    known = type(cost) in (int, float) and cost >= 0 and cost == cost
    return counts, float(cost) if known else None


def _without_code(key: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in key.items() if not name.startswith(REPLAY_HTTP_RUNS)}


def _where(ctx: SuiteContext, user: SuiteUser) -> str:
    return f"{ctx.suite.name}::users/{user.id} (ingestion)"


def _path(ctx: SuiteContext, user: SuiteUser) -> Path:
    return user_recording_path(ctx.cassette_root, ctx.suite.name, user.id)


def _http_path(ctx: SuiteContext, user: SuiteUser) -> Path:
    return user_http_path(ctx.cassette_root, ctx.suite.name, user.id)
