"""Errors a user can hit. Each message names the file or case and says what to do next; the
item shows the message alone (no plugin traceback), because the traceback would not help."""

from __future__ import annotations


class EvalCaseError(Exception):
    """Base of the errors shown without a traceback."""


class CaseFileError(EvalCaseError):
    """A case file (or one case in it) cannot be used as written."""


class MissingRecording(EvalCaseError):
    """Replay found no cassette (or no verdict) for a case."""


class StaleRecording(EvalCaseError):
    """The recording was made under a different key."""


class PendingVerdict(EvalCaseError):
    """A recording whose judge failed when it was made: the trace is saved, a verdict is not."""


class CassetteError(EvalCaseError):
    """A cassette exists but cannot be read as a recording."""


class NewerCassette(CassetteError):
    """A cassette written by a newer version: never replayed, never rewritten."""


class TornPair(CassetteError):
    """A recording whose `.http.json` is missing, unreadable or not the one its JSON names (a
    run killed between the two writes, or an edit by hand): replay refuses it, a live run
    records it again. One wording: `problem` (what is wrong, naming the files), then
    `next_step`."""

    def __init__(self, problem: str, next_step: str) -> None:
        super().__init__(
            f"mismatched recording: {problem} (a run killed between the two writes, or a file "
            f"edited by hand?); {next_step}"
        )
        self.problem = problem


class IngestionConflict(EvalCaseError):
    """Two xdist workers of one run ingested a user to different results (a fresh memory id
    each, no `user_ready` to share one): the later one's cases are not recorded, so every
    case recorded runs on the ingestion the user's recording keeps."""


class RecordingWriteError(CassetteError):
    """The plugin could not write a recording (a folder where the file goes, a read-only
    folder, a full disk, a recording over the size cap): ours, never the system's; both files
    of the pair are left as they were."""


class TraceError(EvalCaseError):
    """The system returned something that is not a trace."""


class StageFailure(EvalCaseError):
    """A gating stage failed; the only failure an `xfail` case may absorb."""


class StageError(EvalCaseError):
    """A stage's own code failed to score a case (a user stage raised, or returned what is not
    a score): the case could not be evaluated, which is an error (never absorbed by `xfail`),
    not a stage failure."""


class JudgeFailure(EvalCaseError):
    """A gating stage has no verdict because its judge failed: the case could not be evaluated,
    which is an error (never absorbed by `xfail`), not a stage failure."""


class UserCodeExit(Exception):
    """User code raised SystemExit (or another BaseException that is not a Ctrl-C): it fails
    the case it ran for, never the session."""


class SystemTimeout(EvalCaseError):
    """The system did not answer a case within its timeout."""


class UserInterrupt(CaseFileError):
    """User code raised KeyboardInterrupt while a suite was loaded (the import of its system,
    its fingerprint()): that suite errors and the run stops as after a Ctrl-C, summary
    printed, exit code 2. `what`: what was interrupted."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what}; the run stops here, as at a Ctrl-C")
        self.what = what
