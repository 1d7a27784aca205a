"""The phases of a suite's ingestion, by what the system does in each: a user's
(`setup_user`, `ready`, `user_ready`), and the shared documents' two (their preparation,
`prepare_documents`, Zep's chunk set; their ingestion, `setup_documents`, Zep's document graph).
Names, hooks and wording only: domain/users.py runs them."""

from __future__ import annotations

from dataclasses import dataclass

DOCUMENTS_ID = "documents"  # the shared documents' name in figures and recordings
PREPARATION_ID = "preparation"  # their preparation's (no user of such a suite may have either)
DOCUMENTS_FILES_FIELD = "documents.files"  # their files' key field, in every case of the suite


@dataclass(frozen=True, slots=True)
class HookNames:
    """The system's hooks of one kind of ingestion: the one that ingests, the one polled until
    the processing is done (None: none), and the one that says whether a recorded ingestion's
    state is still there (so it is reused)."""

    setup: str
    ready: str | None
    still_there: str


USER_HOOKS = HookNames("setup_user", "ready", "user_ready")
DOCUMENT_HOOKS = HookNames("setup_documents", "documents_processed", "documents_ready")
PREPARATION_HOOKS = HookNames("prepare_documents", None, "documents_prepared")


@dataclass(frozen=True, slots=True)
class SharedPhase:
    """A phase of the suite's shared documents, ingested once for all its cases: its name in
    figures and reports, its recording's name in `<suite>/documents/`, its hooks, how messages
    name it, the case key's field naming the recording a case ran on, and the key fields of
    its settings (what makes a variant of it)."""

    id: str
    recording: str
    hooks: HookNames
    noun: str
    ingested: str
    settings_prefix: str


DOCUMENTS = SharedPhase(
    DOCUMENTS_ID,
    "ingestion",
    DOCUMENT_HOOKS,
    "the documents",
    "documents.ingested",
    "documents.ingestion.",
)
PREPARATION = SharedPhase(
    PREPARATION_ID,
    "preparation",
    PREPARATION_HOOKS,
    "the documents' preparation",
    "documents.prepared",
    "documents.preparation.",
)
SHARED_PHASES = {phase.id: phase for phase in (DOCUMENTS, PREPARATION)}


def hook_call(hook: str, unit_id: str, shared: bool) -> str:
    """How a message names a hook's call: `setup_user('u-ana')`, `setup_documents(documents)`."""
    return f"{hook}(documents)" if shared else f"{hook}({unit_id!r})"


def whose_cases(unit_id: str, shared: bool) -> str:
    """`none of user 'u-ana''s cases ...`, `none of the suite's cases ...`."""
    return "the suite's cases" if shared else f"user {unit_id!r}'s cases"


def others_run(shared: bool) -> str:
    return "" if shared else " (the other users' cases run)"
