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

The suite's shared documents are ingested the same way by `setup_documents(documents)` (their
hooks `documents_processed` and `documents_ready` in place of `ready` and `user_ready`),
recorded under `<suite>/documents/ingestion.json`: every function takes the unit to ingest, by
default the context's user.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..core.errors import (
    CassetteError,
    EvalCaseError,
    MissingRecording,
    NewerCassette,
    StaleRecording,
)
from ..domain.ingestion_phases import DOCUMENTS
from ..domain.retries import RetriesSpent
from ..domain.returned_traces import json_problem
from ..domain.users import call_hook
from ..http.rerecord import keep_old_volatile
from ..http.router import CaseHttp, UnservedRequest
from ..http.usage import exchanges_usage
from ..http.volatile import Volatility, replay_ignored
from ..store.files import shown_path
from ..store.http import http_document, interactions_hash
from ..store.keys import REPLAY_HTTP_RUNS, changed_fields, stored_labels
from ..store.pair import RecordingPair, exclusive
from ..store.redaction import redact_secrets
from ..store.user_recordings import (
    DRY_RUN,
    RECORDED,
    REPLAYED_HTTP,
    REUSED,
    UserRecording,
    build_user_recording,
    load_user_recording,
)
from ..telemetry.phases import timed
from .diff import describe_http_changes, describe_ingestion_changes
from .limits import Interrupted
from .retried_run import failed_attempt_dropped
from .save import ignored_paths
from .shared_ingestion import SharedIngestion
from .user_runs import (
    ingestion_key,
    ingestion_units,
    last_recorded_pair,
    named,
    run_of,
    user_pair,
)

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
    unit: SuiteUser | None = None,
) -> None:
    """Ingest the context's user (or `unit`, the documents) for a live run, once per process
    (see the module's docstring). `redo` (--live): ingest again unless `user_ready` says the
    state is still there. `dry_run`: write nothing. `spend` (--eval-budget) gets what the
    ingestion cost, as recorded, once, even when it failed after paying."""
    user = ctx.user if unit is None else unit
    assert user is not None
    try:
        user.once(lambda: _ingest_live(ctx, user, http, redo, dry_run), ctx.suite.name)
    finally:
        spend(run_of(user).take_spent())


async def aingest_live(
    ctx: SuiteContext,
    http: HttpLayer | None,
    redo: bool,
    dry_run: bool,
    spend: Callable[[float], None] = lambda usd: None,
    unit: SuiteUser | None = None,
) -> None:
    """`ingest_live` for the event loop (waited for in a daemon thread the first time);
    `spend` is called in the loop's thread."""
    user = ctx.user if unit is None else unit
    assert user is not None
    try:
        await user.aonce(lambda: _ingest_live(ctx, user, http, redo, dry_run), ctx.suite.name)
    finally:
        spend(run_of(user).take_spent())


def ingest_offline(ctx: SuiteContext, http: HttpLayer, unit: SuiteUser | None = None) -> None:
    """--replay-http: run the context's user's (or `unit`'s) ingestion offline, once, its HTTP
    served from its recording. StaleRecording when it asks for what the recording does not
    hold."""
    user = ctx.user if unit is None else unit
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
    except (EvalCaseError, Interrupted, RetriesSpent):  # ours: a timeout, a stale request,
        raise  # a Ctrl-C, a transient error retried in vain (no memory lost makes a 503)
    except Exception as exc:
        unchecked = [unit for unit in ingestion_units(ctx) if run_of(unit).reused_unchecked]
        if not unchecked:
            raise
        unit = unchecked[-1]
        hooks = unit.hooks
        raise ReusedIngestionError(
            f"{type(exc).__name__}: {exc} — {named(unit)}'s ingestion was reused from its "
            f"recording, so {hooks.setup} did not run in this process (the system has no "
            f"{unit.signature(hooks.still_there)} to say whether its ingested state is still "
            f"there); if the system keeps its memory in the process, give it a "
            f"{hooks.still_there}, or re-record with --live (docs/memory.md)"
        ) from exc


def _ingest_live(
    ctx: SuiteContext, user: SuiteUser, http: HttpLayer | None, redo: bool, dry_run: bool
) -> None:
    target = ctx.system.target
    if not callable(getattr(target, user.hooks.setup, None)):
        return  # nothing to ingest: the system reads its users' files itself
    # Under xdist, the workers running one user's cases take turns: the first ingests and
    # records, the others find its recording current and reuse it (user_ready says so, or
    # --live-stale trusts it), or ingest for themselves and must come to the same ingestion.
    with (
        timed(
            "ingestion", f"{ctx.suite.name}/{user.id}", suite=ctx.suite.name, user=user.id
        ) as notes,
        exclusive(str(last_recorded_pair(ctx, user).json_path.resolve())),
    ):
        _ingest_or_reuse(ctx, user, target, http, redo, dry_run)
        notes["ingestion.source"] = (run_of(user).figures or {}).get("source")


def _ingest_or_reuse(
    ctx: SuiteContext,
    user: SuiteUser,
    target: Any,
    http: HttpLayer | None,
    redo: bool,
    dry_run: bool,
) -> None:
    run = run_of(user)
    _hand_prepared(ctx, user)
    key, labels = ingestion_key(ctx, user)
    old, before = _recording_there(ctx, user)
    wait = user.ingestion_wait(ctx.suite.name, ctx.timeout, ctx.retries)  # each hook: bounded
    if old is not None and before is not None and old.key == key:
        still_there = user.hooks.still_there
        user_ready = getattr(target, still_there, None)
        if callable(user_ready):  # the system knows whether its ingested state is still there
            result = old.result
            reuse = bool(call_hook(still_there, user, ctx.suite.name, user_ready, result, wait))
        else:
            reuse = not redo
        if reuse:
            run.took(old, REUSED)
            run.reused_unchecked = not callable(user_ready)
            return
    if http is None:  # no HTTP layer (never in a live run that records): nothing to record
        returned, _ = user.set_up(target, wait)
        run.ready_wait = user.wait_ready(target, ctx.suite.name, returned, wait)
        return
    case_http = CaseHttp(_where(ctx, user))
    cost: float | None = None
    try:
        with http.case(case_http):  # a failed attempt's exchanges are dropped: retried_run
            returned, duration = user.set_up(
                target, wait, failed_attempt_dropped(case_http, run.paid)
            )
        # Outside the recording: how often ready() looks differs from run to run.
        run.ready_wait = user.wait_ready(target, ctx.suite.name, returned, wait)
        exchanges = case_http.interactions
        result = _recordable(returned, ctx, user)
        spent = exchanges_usage(exchanges)
        usage, reported_cost = _reported_usage(result)
        cost = reported_cost if reported_cost is not None else spent.cost_usd
        figures = {
            "duration_s": round(duration, 3),
            "ready_wait_s": None if run.ready_wait is None else round(run.ready_wait, 3),
            "requests": spent.requests,
            "usage": usage if usage is not None else spent.usage,
            "cost_usd": cost,
        }
        doc, change = _save(
            ctx, user, key, labels, result, exchanges, figures, old, before, dry_run
        )
        run.took(doc, DRY_RUN if dry_run else RECORDED, change)
        if wait.retried and run.figures is not None:  # this run's, not the recording's
            run.figures["retries"] = len(wait.retried)
    finally:  # paid for, even when a later step failed: --eval-budget counts it
        if cost is None:
            cost = exchanges_usage(case_http.interactions).cost_usd
        run.paid(cost or 0.0)


def _ingest_offline(ctx: SuiteContext, user: SuiteUser, http: HttpLayer) -> None:
    target = ctx.system.target
    if not callable(getattr(target, user.hooks.setup, None)):
        return
    _hand_prepared(ctx, user)
    pair = user_pair(ctx, user)
    shown = shown_path(pair.json_path, ctx.rootdir)
    old = load_user_recording(pair.json_path, ctx.rootdir)
    exchanges: list[dict[str, Any]] = []
    if old is not None:
        key, labels = ingestion_key(ctx, user)
        # The code runs today (as for a case under --replay-http): its change is no reason.
        stale = changed_fields(
            _without_code(old.key), _without_code(key), stored_labels(old.labels, "key"), labels
        )
        if stale:
            raise StaleRecording(
                f"stale ingestion recording of {named(user)} ({shown}): {'; '.join(stale)}; "
                f"re-record it with --eval-ingest-only (or {_whose(user)} cases with --live)"
            )
        exchanges = pair.checked_http(old.http, ctx.rootdir)
    suite = ctx.suite
    case_http = CaseHttp(_where(ctx, user), exchanges, replay_ignored(suite), suite.allow_hosts)
    with http.case(case_http, sole=True):
        try:
            user.set_up(target, user.ingestion_wait(suite.name, ctx.timeout))
        except UnservedRequest:
            pass  # said below, whatever setup_user made of it
    if case_http.problem:
        if old is None:
            raise MissingRecording(
                f"no ingestion recording of {named(user)} ({shown}) to serve "
                f"{user.hooks.setup}'s requests ({case_http.problem.split(' — ')[0]}); record "
                f"it with --eval-ingest-only (or {_whose(user)} cases with --live)"
            )
        raise StaleRecording(f"stale ingestion recording of {named(user)}: {case_http.problem}")
    if old is not None:
        run_of(user).took(old, REPLAYED_HTTP)


def _recording_there(
    ctx: SuiteContext, user: SuiteUser
) -> tuple[UserRecording | None, list[dict[str, Any]] | None]:
    """The recording there is (None when there is none, or it cannot be read: a live run
    records it anew) and its HTTP exchanges (None when the pair does not hold: a write
    interrupted between the two files, or one edited by hand). NewerCassette when a newer
    pytest-evalcases wrote it: never ingested over."""
    pair = user_pair(ctx, user)
    try:
        old = load_user_recording(pair.json_path, ctx.rootdir)
    except NewerCassette:
        raise
    except CassetteError:
        return None, None
    if old is None:
        return None, None
    exchanges, torn = pair.paired_http(old.http, ctx.rootdir)
    return old, None if torn is not None else exchanges


def _save(
    ctx: SuiteContext,
    user: SuiteUser,
    key: dict[str, str],
    labels: dict[str, str],
    result: Any,
    exchanges: list[dict[str, Any]],
    figures: dict[str, Any],
    old: UserRecording | None,
    before: list[dict[str, Any]] | None,
    dry_run: bool,
) -> tuple[UserRecording, dict[str, Any]]:
    """Write the recording and its HTTP file as one pair (store/pair.py). Secrets are redacted
    first. The values a service makes fresh on every call (the built-in list and the suite's
    `http_volatile`) take their old form again whenever there are old exchanges, as in a case's
    re-record (engine/save.py): a re-ingestion after a data change shows that change alone.
    Nothing is written when the same result came back over the same exchanges but for timings
    and those values; the result itself is never rewritten: a new memory id is the service's
    state, not noise. Returns the recording and what changed (the `recording changes` section's
    entry: `{"kind": "new" | "changed" | "unchanged", "details": [...]}`)."""
    (result, exchanges, labels), _ = redact_secrets([result, exchanges, labels])
    volatility, ignore = Volatility(ctx.suite.http_volatile), ignored_paths(ctx)
    rerecorded = None
    if before is not None:
        # A fresh value the result holds (a new memory id) is the service's state the cases
        # use: its old form would make --replay-http return another result.
        keep_new = _strings(result) - (_strings(old.result) if old is not None else set())
        rerecorded = keep_old_volatile(before, exchanges, volatility, ignore, keep_new)
        exchanges = rerecorded.exchanges
    same_result = old is not None and before is not None and old.key == key and old.result == result
    http_hash = interactions_hash(exchanges)
    doc = build_user_recording(
        ctx.suite.name,
        user.id,
        key,
        {"key": labels} if labels else {},
        result,
        figures,
        http_hash,
        user.data.ingestion,
        user.phase and user.phase.id,
    )
    unchanged = same_result and old is not None and old.http == http_hash
    run_of(user).recording_unchanged = unchanged
    change: dict[str, Any] = {"kind": "unchanged" if unchanged else "new"}
    if old is not None and not unchanged:
        http_changes: list[str] = []
        if old.http != http_hash:
            before_count = None if before is None else len(before)
            http_changes = describe_http_changes(
                before_count, rerecorded, len(exchanges), volatility, ignore
            )
        change = {"kind": "changed", "details": describe_ingestion_changes(old, doc, http_changes)}
    if dry_run:
        return doc, change
    shared = SharedIngestion(ctx, user)
    shared.check(doc)  # under xdist: the ingestion another worker of this run recorded
    if not unchanged:
        if old is not None and before is not None and old.variant != doc.variant:
            _keep_variant(ctx, user, old, before)
        # An ingestion that now makes no request: its exchanges go (no file reads as none).
        http_doc = http_document(ctx.suite.name, user.id, exchanges) if exchanges else None
        user_pair(ctx, user).write(doc, ctx.rootdir, http_doc, drop_http=not exchanges)
    shared.note(doc)
    return doc, change


def _keep_variant(
    ctx: SuiteContext, user: SuiteUser, old: UserRecording, exchanges: list[dict[str, Any]]
) -> None:
    """Before `users/<id>.json` takes another ingestion variant, the one it holds moves to its
    variant's folder, `users/variants/<variant>/` (written whole first: a run stopped between
    the two writes leaves both, each a whole pair), so switching the settings back reuses it.
    A recording already kept there stays: it is the one a run of that variant reads (and may
    have been recorded again since the run that stopped between the two writes)."""
    kept = RecordingPair.of_user(
        ctx.cassette_root, ctx.suite.name, user.id, old.variant, user.recording
    )
    if os.path.lexists(kept.json_path):
        return
    http_doc = http_document(ctx.suite.name, user.id, exchanges) if exchanges else None
    kept.write(old, ctx.rootdir, http_doc, drop_http=not exchanges)


def _recordable(result: Any, ctx: SuiteContext, user: SuiteUser) -> Any:
    """What `setup_user` returned, as JSON; None (said in the docs) when it is not JSON, e.g.
    a client object. CassetteError when it is too big to be a summary, or is JSON no file can
    hold (a lone surrogate, nesting too deep to read back): ours to say, naming the user."""
    try:
        text: str | None = json.dumps(result, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return None
    except RecursionError:
        text = None
    problem = json_problem(result)
    if text is None or (problem is not None and ("surrogate" in problem or "deeper" in problem)):
        raise CassetteError(
            f"{user.called(user.hooks.setup)} of suite {ctx.suite.name!r} returned a result "
            f"its ingestion recording cannot hold: {problem or 'it nests too deep'}; return a "
            "small summary of plain JSON (a memory id, counts, usage), not the data"
        )
    if len(text) > RESULT_CAP:
        raise CassetteError(
            f"{user.called(user.hooks.setup)} of suite {ctx.suite.name!r} returned {len(text):,} "
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


def _strings(value: Any) -> set[str]:
    """Every string of a JSON value (its keys apart)."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set().union(*map(_strings, value.values()))
    if isinstance(value, list):
        return set().union(*map(_strings, value))
    return set()


def _without_code(key: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in key.items() if not name.startswith(REPLAY_HTTP_RUNS)}


def _where(ctx: SuiteContext, user: SuiteUser) -> str:
    if user.phase is not None:  # documents (ingestion), documents (preparation)
        return f"{ctx.suite.name}::documents ({user.phase.recording})"
    return f"{ctx.suite.name}::users/{user.id} (ingestion)"


def _hand_prepared(ctx: SuiteContext, unit: SuiteUser) -> None:
    """The documents' ingestion reads what their preparation made (`documents.prepared`):
    its recorded result, as this run reused, recorded or replayed it."""
    if unit.phase is DOCUMENTS and ctx.preparation is not None:
        prepared = run_of(ctx.preparation).recording
        unit.data.hand_prepared(prepared.result if prepared is not None else None)


def _whose(unit: SuiteUser) -> str:
    return "the suite's" if unit.shared else "the user's"
