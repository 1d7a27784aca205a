"""A user's ingestion shared by the xdist workers of one run.

Without `user_ready`, nothing tells one worker whether another worker's ingestion is there for
it (an in-process memory is not), so each worker that runs the user's cases ingests for itself,
taking turns (engine/ingestion.py). When the ingestions come to the same result (the same memory
id, the same exchanges but for a provider's fresh values), the cases of both workers run on the
ingestion `users/<id>.json` keeps. When they do not (a service that makes a fresh memory id per
ingestion), the later worker's cases would be recorded against an ingestion the recording does
not keep: that worker writes nothing and its cases of the user error, saying how to share one
ingestion. The first worker leaves a note of what it recorded, named after the recording and the
xdist run (its `testrunuid`, which the pytest layer gives a worker of a live run:
`work_for_xdist_run`; not the environment, which a subprocess of a worker inherits), in the
folder of the locks.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from ..core.errors import IngestionConflict
from ..core.hashing import content_hash
from ..store.files import shown_path
from ..store.pair import checked_lock_folder, lock_folder, open_outside
from .user_runs import named, user_pair

if TYPE_CHECKING:
    from ..domain.context import SuiteContext
    from ..domain.users import SuiteUser
    from ..store.user_recordings import UserRecording


# The xdist run this process is a worker of, in a live run (None: not a worker).
_XDIST_RUN: list[str | None] = [None]


def work_for_xdist_run(run: str | None) -> None:
    """Say which xdist run this process works for (the pytest layer, at configure)."""
    _XDIST_RUN[0] = run


class SharedIngestion:
    """This run's note of a user's ingestion (none outside xdist)."""

    def __init__(self, ctx: SuiteContext, unit: SuiteUser | None = None) -> None:
        self.ctx = ctx
        self.unit = ctx.user if unit is None else unit
        run = _XDIST_RUN[0]
        path = user_pair(ctx, self.unit).json_path.resolve()
        self.note_path = (
            lock_folder() / f"{content_hash(f'{path}#{run}')}.ingested" if run else None
        )

    def check(self, recording: UserRecording) -> None:
        """IngestionConflict when another worker of this run recorded another ingestion of
        the user (this worker's `recording` is then not written)."""
        if self.note_path is None:
            return
        try:
            with open(open_outside(self.note_path, os.O_RDONLY)) as handle:
                earlier = handle.read()
        except OSError:  # the first worker to ingest the user
            return
        if earlier and earlier != recording.identity:
            unit = self.unit
            assert unit is not None
            shown = shown_path(user_pair(self.ctx, unit).json_path, self.ctx.rootdir)
            hook = unit.hooks.still_there
            cases = "cases" if unit.shared else "cases of the user"
            raise IngestionConflict(
                f"{named(unit)} was ingested by another xdist worker of this run to another "
                f"result ({shown} keeps that one); without {unit.signature(hook)} each worker "
                f"ingests for itself, and this worker's {cases} would be recorded "
                "against an ingestion the recording does not keep: they are not recorded. "
                "Ingest first with --eval-ingest-only --live, then run -n with --live-stale "
                f"(which reuses the recording); or give the system a {hook} "
                "(docs/memory.md)"
            )

    def note(self, recording: UserRecording) -> None:
        """Say which ingestion of the user this run's recording keeps."""
        if self.note_path is None:
            return
        try:
            checked_lock_folder()
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
            with open(open_outside(self.note_path, flags), "w") as handle:
                handle.write(recording.identity)
        except OSError:  # no note: the workers cannot compare (as without fcntl)
            pass
