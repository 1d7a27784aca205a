"""A suite user in this run: the ingestion its cases run on, and what this run did with it. The
suite's shared documents are such a unit too (`SuiteUser.shared`): every function here takes the
unit, by default the context's user.

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
from ..domain.ingestion_phases import PREPARATION
from ..store.files import shown_path
from ..store.keys import (
    documents_ingestion_key,
    ingested_field,
    preparation_key,
    user_ingestion_key,
)
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
    # The shared documents' phase it is ("documents", "preparation"): their figures say so
    # (`documents`: the phase), so the reports count them apart from the users.
    phase: str | None = None
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
        if self.phase is not None:
            self.figures["documents"] = self.phase
        if change is not None:
            self.figures["change"] = change


_RUNS: weakref.WeakKeyDictionary[SuiteUser, UserRun] = weakref.WeakKeyDictionary()
_RUNS_LOCK = threading.Lock()


def run_of(user: SuiteUser) -> UserRun:
    """The user's state in this run (made on first use)."""
    with _RUNS_LOCK:
        found = _RUNS.get(user)
        if found is None:
            found = _RUNS[user] = UserRun(phase=user.phase and user.phase.id)
        return found


def ingestion_units(ctx: SuiteContext) -> list[SuiteUser]:
    """The ingestions the context's cases run on, in the order they are ingested: the suite's
    shared documents' preparation and ingestion, then the cases' user."""
    units = []
    if ctx.preparation is not None and ingests(ctx, ctx.preparation):  # a system without
        units.append(ctx.preparation)  # prepare_documents has no preparation phase
    if ctx.documents is not None:
        units.append(ctx.documents)
    if ctx.user is not None:
        units.append(ctx.user)
    return units


def named(unit: SuiteUser) -> str:
    """`user 'u-ana'`, `the documents`: how messages name an ingestion."""
    return unit.phase.noun if unit.phase is not None else f"user {unit.id!r}"


def unit_label(unit: SuiteUser) -> str:
    """How a line names the unit after its suite: `u-ana`, `documents`, `documents
    (preparation)`."""
    return f"documents ({PREPARATION.recording})" if unit.phase is PREPARATION else unit.id


def _unit(ctx: SuiteContext, unit: SuiteUser | None) -> SuiteUser:
    chosen = ctx.user if unit is None else unit
    assert chosen is not None
    return chosen


def ingestion_key(
    ctx: SuiteContext, unit: SuiteUser | None = None
) -> tuple[dict[str, str], dict[str, str]]:
    """The key (and labels) of the ingestion recording of `unit` (the context's user by
    default, or the suite's documents): the one place it is computed."""
    unit = _unit(ctx, unit)
    if unit.phase is PREPARATION:
        return preparation_key(ctx.key_fields, ctx.key_labels, ctx.input_fields)
    if unit.phase is not None:  # the documents' ingestion, and the preparation it read
        fields, labels = documents_ingestion_key(ctx.key_fields, ctx.key_labels, ctx.input_fields)
        if ctx.preparation is not None:
            prepared, prepared_labels = _unit_fields(ctx, ctx.preparation, repairs=True)
            fields.update(prepared)
            labels.update(prepared_labels)
        return fields, labels
    return user_ingestion_key(ctx.key_fields, ctx.key_labels, unit.key_field, ctx.input_fields)


def user_pair(ctx: SuiteContext, unit: SuiteUser | None = None) -> RecordingPair:
    """The recording of the unit's ingestion variant (the suite's `ingestion` settings, or the
    documents'): kept in `users/variants/<variant>/` when it is not the variant last recorded,
    else at `users/<id>.json` (which holds the last variant recorded, or none yet); the
    documents' in `documents/`. Resolved once per unit per process."""
    unit = _unit(ctx, unit)
    run = run_of(unit)
    if run.pair is None:
        variant = variant_of(ingestion_key(ctx, unit)[0], unit.phase and unit.phase.id)
        kept = RecordingPair.of_user(
            ctx.cassette_root, ctx.suite.name, unit.id, variant, unit.recording
        )
        run.pair = kept if os.path.lexists(kept.json_path) else last_recorded_pair(ctx, unit)
    return run.pair


def last_recorded_pair(ctx: SuiteContext, unit: SuiteUser | None = None) -> RecordingPair:
    """`users/<id>.json` (`documents/ingestion.json`): the recording of the variant last
    recorded (the name the unit's ingestions lock on, whatever their variant)."""
    unit = _unit(ctx, unit)
    return RecordingPair.of_user(ctx.cassette_root, ctx.suite.name, unit.id, shared=unit.recording)


def ingests(ctx: SuiteContext, unit: SuiteUser | None = None) -> bool:
    """Whether the context's cases run on an ingestion of their user (its system has
    `setup_user`), or of the documents (`setup_documents`)."""
    unit = ctx.user if unit is None else unit
    if unit is None:
        return False
    if not ctx.system.built:  # a fixture's system, never built to replay: as recorded
        path = user_pair(ctx, unit).json_path
        known = _RECORDED_USERS.get(path)
        if known is None:
            known = _RECORDED_USERS[path] = path.is_file()
        return known
    return callable(getattr(ctx.system.target, unit.hooks.setup, None))


# Whether a user's ingestion recording exists, by its path: asked once per process.
_RECORDED_USERS: dict[Path, bool] = {}


def recorded_ingestion(ctx: SuiteContext, unit: SuiteUser | None = None) -> UserRecording:
    """The unit's ingestion recording on disk, read and checked as a pair once per process;
    MissingRecording, CassetteError (corrupt, NewerCassette) or TornPair naming the file and
    the next step."""
    unit = _unit(ctx, unit)
    run = run_of(unit)
    if run.recording is not None:  # ingested (or reused) by this run, or read before
        return run.recording
    if not run.checked:
        pair = user_pair(ctx, unit)
        try:
            found = load_user_recording(pair.json_path, ctx.rootdir)
            if found is None:
                whose = "the suite's cases run" if unit.shared else "its cases run"
                raise MissingRecording(
                    f"no ingestion recording of {named(unit)} "
                    f"({shown_path(pair.json_path, ctx.rootdir)}): {whose} on the "
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
    """The case key's fields naming the ingestions the context's cases run on,
    `documents.ingested` and `ingested.<user>`: each a short hash of its recording's result
    and HTTP exchanges (`UserRecording.identity`), and its label (the result, when short).
    None for an ingestion the system has no hook for. `repairs` (--live, --live-stale): a
    recording that cannot be used reads as UNKNOWN_INGESTION (the case is recorded again,
    after the unit is ingested again); otherwise its problem is raised."""
    units = ingestion_units(ctx)
    if len(units) == 1:  # the common case: the fields asked for are copied once
        return _unit_fields(ctx, units[0], repairs)
    fields: dict[str, str] = {}
    labels: dict[str, str] = {}
    for unit in units:
        more_fields, more_labels = _unit_fields(ctx, unit, repairs)
        fields.update(more_fields)
        labels.update(more_labels)
    return fields, labels


def _unit_fields(
    ctx: SuiteContext, unit: SuiteUser, repairs: bool
) -> tuple[dict[str, str], dict[str, str]]:
    if not ingests(ctx, unit):
        return {}, {}
    name = unit.phase.ingested if unit.phase is not None else ingested_field(unit.id)
    try:
        recording = recorded_ingestion(ctx, unit)
    except EvalCaseError:
        if repairs:
            return {name: UNKNOWN_INGESTION}, {}
        raise
    run = run_of(unit)
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


def ingestion_figures(ctx: SuiteContext, unit: SuiteUser | None = None) -> dict[str, Any] | None:
    """The unit's (by default the user's) ingestion figures for the reports: this run's; or,
    when this run did not ingest it (a replay, --live-judges, cases all current), its
    recording's, if current (a broken one shows none: its cases errored). None after a failed
    ingestion: nothing came of it."""
    unit = ctx.user if unit is None else unit
    if unit is None or unit.failed:
        return None
    run = run_of(unit)
    if run.figures is None and ingests(ctx, unit):
        try:
            recording = recorded_ingestion(ctx, unit)
        except EvalCaseError:
            return None
        if recording.key == ingestion_key(ctx, unit)[0]:
            run.took(recording, REPLAYED)
    return run.figures
