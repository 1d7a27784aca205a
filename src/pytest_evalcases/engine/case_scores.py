"""A case's scores, computed once: a live recording's (`SavedScores`, made when it is saved and
read by the recording changes, the -x / --maxfail count and the item) or a replay's, scored
when its item runs (`scores_of`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..domain.scoring import CaseScores, RecordingScores, score_each_run, score_recording

if TYPE_CHECKING:
    from ..core.schema import Case
    from ..domain.context import SuiteContext
    from ..store.cassette import Cassette, Run
    from .recording import Recording


class SavedScores:
    """The scores of a recording a live run saved, computed on first use and then kept: the
    recording changes (its runs' stage flips), the -x / --maxfail count and the item all read
    the same scores, and a use that never comes costs nothing."""

    __slots__ = ("_case", "_ctx", "_runs", "_scored")

    def __init__(self, ctx: SuiteContext, case: Case, doc: Cassette) -> None:
        self._ctx, self._case = ctx, case
        self._runs = doc.runs  # its runs, not the cassette: the item holds it until it reports
        self._scored: RecordingScores | None = None

    def get(self) -> RecordingScores:
        if self._scored is None:  # a scoring that raises is raised again at the next use
            runs = [(run.trace, run.verdicts) for run in self._runs]
            self._scored = score_each_run(self._ctx, self._case, runs)
        return self._scored

    def of_run(self, run: Run) -> CaseScores | None:
        """`run`'s scores when it is one of this recording's runs (the same trace and verdicts),
        else None."""
        for number, own in enumerate(self._runs):
            if own.trace is run.trace and own.verdicts is run.verdicts:
                return self.get().each_run[number]
        return None


def scores_of(
    ctx: SuiteContext, case: Case, recording: Recording
) -> tuple[CaseScores, dict[str, Any] | None]:
    """How the suite scores a case's recording (`score_recording`): the scores a live run
    carried with it, else (a replay) scored now."""
    scoring = getattr(recording, "scoring", None)
    if scoring is not None:
        scored = scoring.get()
        return scored.shown, scored.runs
    return score_recording(ctx, case, recording.trace, recording.verdicts, recording.later_runs)
