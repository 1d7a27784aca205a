"""A suite user in this run: the ingestion its cases run on, and what this run did with it.

A `SuiteUser` (domain/users.py) is what the suite declares; a `UserRun` is this process's state of
it: the ingestion recording its cases run on (recorded, reused or read), its figures for the
reports, and whether it was reused on trust. Here too are the one place that computes a user's
ingestion key and the one that says which ingestion a case runs on (`ingestion_fields`, the
`ingested.<user>` key field): a case recorded on another ingestion (a service that makes a
fresh memory id per ingestion) is then stale, named, in every mode.

The user's recording on disk is read and checked as a pair once per user per process, for every
user whose system has `setup_user`, whether or not any of its cases needs recording: a missing,
corrupt or torn one errors that user's cases (replay, --replay-http, --live-judges) or is
repaired by ingesting again (--live, --live-stale, --eval-ingest-only); never a silent drop.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.errors import EvalCaseError, MissingRecording
from ..core.hashing import LABEL_CHARS
from ..store.files import shown_path
from ..store.keys import ingested_field, user_ingestion_key
from ..store.pair import RecordingPair
from ..store.user_recordings import (
    REPLAYED,
    UserRecording,
    figures_of,
    load_user_recording,
    variant_of,
)

if TYPE_CHECKING:
    from ..domain.context import SuiteContext
    from ..domain.users import SuiteUser

# The `ingested.<user>` value of a case whose user's recording cannot be used yet (a live run
# that repairs it): never a recording's identity, so the case is recorded again.
UNKNOWN_INGESTION = "-"


@dataclass(slots=True)
class UserRun:
    """One user in this process's run."""

    # The ingestion this run's cases run on: recorded or reused by this run, or read from disk.
    recording: UserRecording | None = None
    # How it reached this run, as each of its cases' results carries it (`figures_of`).
    figures: dict[str, Any] | None = None
    checked: bool = False  # the recording on disk was read and checked (once per process)
    problem: EvalCaseError | None = None  # why the recording on disk cannot be used
    reused_unchecked: bool = False  # reused with no `user_ready` to say its state is there
    recording_unchanged: bool = False  # ingested again, to the recording there was
    ready_wait: float | None = None  # seconds `ready` was polled in this run
    unpaid: float = 0.0  # USD the ingestion spent that --eval-budget has not counted yet
    # The `ingested.<user>` field and label of `recording`, hashed once per recording (every
    # case of the user asks for them on replay)
    fields: tuple[UserRecording, dict[str, str], dict[str, str]] | None = None
    pair: RecordingPair | None = None  # the recording of its ingestion variant (`user_pair`)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def paid(self, usd: float) -> None:
        with self.lock:
            self.unpaid += usd

    def take_spent(self) -> float:
        """What the ingestion spent and no caller has counted yet (then 0: counted once)."""
        with self.lock:
            spent, self.unpaid = self.unpaid, 0.0
        return spent

    def took(
        self, recording: UserRecording, source: str, change: dict[str, Any] | None = None
    ) -> None:
        """This run's cases run on `recording`, which reached the run as `source` (recorded,
        dry_run, reused, replayed_http, replayed): the one place a user's figures are set.
        `change`: what recording it changed (an ingestion this run made), for the `recording
        changes` section."""
        self.recording = recording
        self.figures = figures_of(recording, source)
        if change is not None:
            self.figures["change"] = change


_RUNS: weakref.WeakKeyDictionary[SuiteUser, UserRun] = weakref.WeakKeyDictionary()
_RUNS_LOCK = threading.Lock()


def run_of(user: SuiteUser) -> UserRun:
    """The user's state in this run (made on first use)."""
    with _RUNS_LOCK:
        found = _RUNS.get(user)
        if found is None:
            found = _RUNS[user] = UserRun()
        return found


def ingestion_key(ctx: SuiteContext) -> tuple[dict[str, str], dict[str, str]]:
    """The key (and labels) of the context's user's ingestion recording: the one place it is
    computed."""
    assert ctx.user is not None
    return user_ingestion_key(ctx.key_fields, ctx.key_labels, ctx.user.key_field, ctx.input_fields)


def user_pair(ctx: SuiteContext) -> RecordingPair:
    """The recording of the context's user's ingestion variant (the suite's `ingestion`
    settings): kept in `users/variants/<variant>/` when it is not the variant last recorded,
    else at `users/<id>.json` (which holds the last variant recorded, or none yet). Resolved
    once per user per process."""
    assert ctx.user is not None
    run = run_of(ctx.user)
    if run.pair is None:
        variant = variant_of(ingestion_key(ctx)[0])
        kept = RecordingPair.of_user(ctx.cassette_root, ctx.suite.name, ctx.user.id, variant)
        run.pair = kept if os.path.lexists(kept.json_path) else last_recorded_pair(ctx)
    return run.pair


def last_recorded_pair(ctx: SuiteContext) -> RecordingPair:
    """`users/<id>.json`: the recording of the user's variant last recorded (the name a user's
    ingestions lock on, whatever their variant)."""
    assert ctx.user is not None
    return RecordingPair.of_user(ctx.cassette_root, ctx.suite.name, ctx.user.id)


def ingests(ctx: SuiteContext) -> bool:
    """Whether the context's cases run on an ingestion of their user (its system has
    `setup_user`)."""
    if ctx.user is None:
        return False
    if not ctx.system.built:  # a fixture's system, never built to replay: as recorded
        path = user_pair(ctx).json_path
        known = _RECORDED_USERS.get(path)
        if known is None:
            known = _RECORDED_USERS[path] = path.is_file()
        return known
    return callable(getattr(ctx.system.target, "setup_user", None))


# Whether a user's ingestion recording exists, by its path: asked once per process.
_RECORDED_USERS: dict[Path, bool] = {}


def recorded_ingestion(ctx: SuiteContext) -> UserRecording:
    """The user's ingestion recording on disk, read and checked as a pair once per process;
    MissingRecording, CassetteError (corrupt, NewerCassette) or TornPair naming the file and
    the next step."""
    assert ctx.user is not None
    run = run_of(ctx.user)
    if run.recording is not None:  # ingested (or reused) by this run, or read before
        return run.recording
    if not run.checked:
        pair = user_pair(ctx)
        try:
            found = load_user_recording(pair.json_path, ctx.rootdir)
            if found is None:
                raise MissingRecording(
                    f"no ingestion recording of user {ctx.user.id!r} "
                    f"({shown_path(pair.json_path, ctx.rootdir)}): its cases run on the "
                    "ingestion it holds; record it with --eval-ingest-only --live"
                )
            pair.checked_http(found.http, ctx.rootdir)
            run.recording = found
        except EvalCaseError as exc:  # missing, corrupt, newer, torn
            run.problem = exc
        run.checked = True
    if run.recording is None:
        assert run.problem is not None
        raise run.problem
    return run.recording


def ingestion_fields(ctx: SuiteContext, repairs: bool) -> tuple[dict[str, str], dict[str, str]]:
    """The case key's field naming the ingestion the context's cases run on,
    `ingested.<user>`: a short hash of its recording's result and HTTP exchanges
    (`UserRecording.identity`), and its label (the result, when short). None for a user whose
    system has no `setup_user`. `repairs` (--live, --live-stale): a recording that cannot be
    used reads as UNKNOWN_INGESTION (the case is recorded again, after the user is ingested
    again); otherwise its problem is raised."""
    if not ingests(ctx):
        return {}, {}
    assert ctx.user is not None
    name = ingested_field(ctx.user.id)
    try:
        recording = recorded_ingestion(ctx)
    except EvalCaseError:
        if repairs:
            return {name: UNKNOWN_INGESTION}, {}
        raise
    run = run_of(ctx.user)
    cached = run.fields
    if cached is None or cached[0] is not recording:
        label = _result_label(recording.result)
        cached = run.fields = (
            recording,
            {name: recording.identity},
            {name: label} if label is not None else {},
        )
    return dict(cached[1]), dict(cached[2])


def _result_label(result: Any) -> str | None:
    try:
        text = json.dumps(result, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return text if len(text) <= LABEL_CHARS else None


def ingestion_figures(ctx: SuiteContext) -> dict[str, Any] | None:
    """The user's ingestion figures for the reports: this run's; or, when this run did not
    ingest it (a replay, --live-judges, cases all current), its recording's, if current (a
    broken one shows none: its cases errored). None after a failed ingestion: nothing came of
    it."""
    user = ctx.user
    if user is None or user.failed:
        return None
    run = run_of(user)
    if run.figures is None and ingests(ctx):
        try:
            recording = recorded_ingestion(ctx)
        except EvalCaseError:
            return None
        if recording.key == ingestion_key(ctx)[0]:
            run.took(recording, REPLAYED)
    return run.figures
