"""Suite users (a memory agent's tenants): their files key their cases, `setup_user` ingests them.

A suite declares `"users": [{"id": "u-ana", "conversations": "data/ana/chats.json", ...}]`; a
case names its `"user"`. Each user's files form one key field, `user.<id>`, of that user's cases
only, so editing Ana's chats stales Ana's cases and no one else's. Everything here is computed
once per user per run, at collection: a suite without users never reaches this module.

The suite's shared documents (`"documents"`, Zep's document graph) are ingested the same way,
once for all its cases, by `setup_documents(documents)`, after an optional preparation of them
(`prepare_documents(documents)`, Zep's chunk set) recorded and reused as a phase of its own:
each a `SuiteUser` with a `SharedPhase` (`build_documents`), whose hooks, recording and
messages are that phase's.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import CaseFileError, EvalCaseError, UserCodeExit
from ..core.hashing import LABEL_CHARS, SHOW_CHARS, content_hash
from ..core.names import shown_name, unsafe_id_reason
from .ingestion_phases import (
    DOCUMENTS,
    DOCUMENTS_FILES_FIELD,
    DOCUMENTS_ID,
    PREPARATION,
    PREPARATION_ID,
    USER_HOOKS,
    HookNames,
    SharedPhase,
    hook_call,
    others_run,
    whose_cases,
)
from .retries import NO_RETRIES, Attempts, RetriesSpent, Retry, RetryPolicy
from .system import (
    TIMEOUT_OPTION,
    AttributeMapping,
    Unfinished,
    call_within,
    run_in_daemon_thread,
)

USER_FIELD_PREFIX = "user."
DEFAULT_READY_TIMEOUT = 600.0  # seconds (--eval-ingest-timeout): a user's graph may take minutes
FIRST_POLL = 0.05  # seconds before the second look at ready(); doubled each time, up to LAST_POLL
LAST_POLL = 5.0
LAST_CALL = 0.5  # seconds a hook called with less of --eval-ingest-timeout left is given


class UserData(AttributeMapping):
    """What `setup_user(user)` receives: `id` and each named file field as absolute paths (a
    `Path`, or a list of them where the suite lists several), with attribute access
    (`user.id`, `user["conversations"]`); and, as an attribute only (the mapping holds the
    files), the suite's `ingestion` settings (None when it declares none) and `run_config`, the
    authored input manifest's values (None without one)."""

    __slots__ = ("_ingestion", "_prepared", "_run_config")

    def __init__(
        self,
        *args: Any,
        ingestion: dict[str, Any] | None = None,
        run_config: dict[str, Any] | None = None,
        **fields: Any,
    ):
        super().__init__(*args, **fields)
        self._ingestion = ingestion
        self._run_config = run_config
        self._prepared: Any = None

    @property
    def prepared(self) -> Any:
        """The shared documents' preparation's result (`prepare_documents`' recorded return
        value), handed to `setup_documents`; None otherwise."""
        return self._prepared

    def hand_prepared(self, result: Any) -> None:
        self._prepared = result

    @property
    def ingestion(self) -> dict[str, Any] | None:
        return self._ingestion

    @property
    def run_config(self) -> dict[str, Any] | None:
        return self._run_config


class SuiteUser:
    """One declared user of a suite: its key field and label, its data, and its ingestion in
    this run (done once per user, in worker threads: `once`). With `shared`, the suite's shared
    documents, ingested once for all its cases by the documents' hooks."""

    def __init__(
        self,
        user_id: str,
        key_field: str,
        key_hash: str,
        label: str | None,
        data: UserData,
        ready_timeout: float = DEFAULT_READY_TIMEOUT,
        phase: SharedPhase | None = None,
    ) -> None:
        self.id = user_id
        self.phase = phase
        self.key_field = key_field
        self.key_hash = key_hash
        self.label = label
        self.data = data
        self.ready_timeout = ready_timeout
        # This user's state in a run (the ingestion its cases run on, its figures, what it
        # spent) is the engine's: engine/user_runs.py. Only the ingestion's once-per-process
        # guard is here.
        self._lock = threading.Lock()
        self._done = False
        self._error: BaseException | None = None

    def once(self, work: Callable[[], None], suite_name: str) -> None:
        """Run `work` (this user's ingestion) the first time; re-raise its error after. An
        error of the system's code fails this user's cases only; a recording's (stale,
        missing, broken) is the cases' own error."""
        with self._lock:
            if not self._done:
                try:
                    work()
                except KeyboardInterrupt as exc:  # the run stops: a case waiting here too
                    self._error, self._done = exc, True
                    raise
                except IngestTimeout as exc:
                    self._error = UserSetupError(
                        f"{self.called(self.hooks.ready)} of suite {suite_name!r} {exc}; none "
                        f"of {whose_cases(self.id, self.shared)} is recorded (raise "
                        "--eval-ingest-timeout if the system's processing is this slow)"
                    )
                except BaseException as exc:  # user code: fail this user's cases only
                    self._error = _setup_error(
                        self.id, suite_name, exc, self.hooks.setup, self.shared
                    )
                self._done = True
        if self._error is not None:
            raise self._error

    async def aonce(self, work: Callable[[], None], suite_name: str) -> None:
        """`once` for the event loop: waited for in a daemon thread the first time (it may
        ingest a lot; a Ctrl-C's cancelling stops the wait at once, and no thread of the loop's
        pool is left waiting), inline afterwards."""
        if self._done:
            self.once(work, suite_name)
        else:
            await run_in_daemon_thread(
                lambda _: self.once(work, suite_name), None, self.hooks.setup
            )

    @property
    def shared(self) -> bool:
        """A phase of the suite's shared documents, not a user."""
        return self.phase is not None

    @property
    def hooks(self) -> HookNames:
        return self.phase.hooks if self.phase is not None else USER_HOOKS

    @property
    def recording(self) -> str | None:
        """A shared phase's recording's name in `<suite>/documents/` (None: a user's, named by
        its id in `users/`)."""
        return self.phase.recording if self.phase is not None else None

    def called(self, hook: str) -> str:
        """`setup_user('u-ana')`, `setup_documents(documents)`."""
        return hook_call(hook, self.id, self.shared)

    def signature(self, hook: str) -> str:
        """A result hook as a message names it: `user_ready(user, result)`,
        `documents_ready(documents, result)`."""
        return f"{hook}({'documents' if self.shared else 'user'}, result)"

    @property
    def failed(self) -> bool:
        """Whether this run's ingestion of the user ended in an error."""
        return self._error is not None

    def ingestion_wait(
        self, suite_name: str, call_timeout: float | None, retries: RetryPolicy = NO_RETRIES
    ) -> IngestionWait:
        """The bounds of this user's ingestion, starting now: `call_timeout` (--eval-timeout,
        the suite's "timeout") for each call of a hook, --eval-ingest-timeout for them all;
        `retries`: how a hook's call that failed with a transient error is tried again."""
        return IngestionWait(
            self.id,
            suite_name,
            call_timeout,
            self.ready_timeout,
            retries=retries,
            shared=self.shared,
        )

    def set_up(
        self, system_target: Any, wait: IngestionWait, failed: Callable[[], None] = lambda: None
    ) -> tuple[Any, float]:
        """Call the system's `setup_user(user)` (`setup_documents(documents)`) when it has one,
        bounded by `wait`: (what it returned, the seconds it took). `failed()` after each
        attempt that is tried again."""
        method = getattr(system_target, self.hooks.setup, None)
        started = time.perf_counter()
        if callable(method):
            result = wait.bounded(self.hooks.setup, method, self.data, failed=failed)
        else:
            result = None
        return result, time.perf_counter() - started

    def wait_ready(
        self, system_target: Any, suite_name: str, result: Any, wait: IngestionWait
    ) -> float | None:
        """Poll the system's `ready(user, result)` (when it has one) until it is true, each look
        bounded by `wait` and the polling ending with the user's ingestion time: the seconds
        it was polled (None without `ready`); its error is said as `ready`'s."""
        ready = getattr(system_target, self.hooks.ready, None) if self.hooks.ready else None
        if not callable(ready):
            return None

        def looked(user: Any, result: Any) -> Any:
            return call_hook(self.hooks.ready, self, suite_name, ready, result, wait)

        return wait_until_ready(looked, self.data, result, wait.remaining())


class IngestionWait:
    """The bounds of one user's ingestion: each call of a system's hook (`user_ready`,
    `setup_user`, a look at `ready`) runs in a daemon thread of its own and is waited for at
    most `call_timeout` seconds (--eval-timeout, the suite's "timeout"), and all of them
    together at most `whole` seconds (--eval-ingest-timeout) from the start. Past either, the
    hook's thread is left behind (nothing can stop it from outside) and HookTimeout names the
    hook and the bound; a Ctrl-C ends the wait at once."""

    def __init__(
        self,
        user_id: str,
        suite_name: str,
        call_timeout: float | None,
        whole: float,
        clock: Callable[[], float] = time.monotonic,
        retries: RetryPolicy = NO_RETRIES,
        sleep: Callable[[float], None] = time.sleep,
        shared: bool = False,
    ) -> None:
        self.user_id, self.suite_name, self.shared = user_id, suite_name, shared
        self.call_timeout, self.whole = call_timeout, whole
        self._clock = clock
        self._started = clock()
        # A hook's call that failed with a transient error is tried again (domain/retries.py),
        # every attempt and wait within --eval-ingest-timeout; `retried` notes each retry.
        self.retries, self._sleep = retries, sleep
        self.retried: list[Retry] = []

    def remaining(self) -> float:
        """Seconds left of --eval-ingest-timeout."""
        return max(self.whole - (self._clock() - self._started), 0.0)

    def bounded(
        self,
        hook: str,
        method: Callable[..., Any],
        *args: Any,
        failed: Callable[[], None] = lambda: None,
    ) -> Any:
        """`method(*args)` within the bounds, tried again on a transient error (`failed()` after
        each attempt that is): its value, what it raised, HookTimeout, or a UserSetupError when
        the retries were spent."""
        what = f"{hook_call(hook, self.user_id, self.shared)} of suite {self.suite_name!r}"
        bound = f"the {self.whole:g} s of --eval-ingest-timeout"
        deadline = self._started + self.whole
        attempts = Attempts(self.retries, what, bound, deadline, self._clock)
        try:
            once = functools.partial(self._bounded_once, hook, method, *args)
            return attempts.call(once, self._sleep, failed)
        except RetriesSpent as exc:
            last = attempts.policy.reason(exc.__cause__) if exc.__cause__ else None
            raise UserSetupError(
                f"{exc}; last error: {last}; none of {whose_cases(self.user_id, self.shared)} "
                f"can be recorded until it succeeds{others_run(self.shared)}"
            ) from exc.__cause__
        finally:
            self.retried += attempts.retries

    def _bounded_once(self, hook: str, method: Callable[..., Any], *args: Any) -> Any:
        # A call made as the time runs out (ready's last look) still gets a moment to return.
        left = max(self.remaining(), LAST_CALL)
        per_call = self.call_timeout is not None and self.call_timeout <= left
        timeout = self.call_timeout if per_call and self.call_timeout is not None else left
        what = f"{hook_call(hook, self.user_id, self.shared)} of suite {self.suite_name!r}"
        try:
            return call_within(lambda: method(*args), timeout, what)
        except Unfinished:
            bound = (
                f"{timeout:g} s ({TIMEOUT_OPTION})"
                if per_call
                else f"{self.whole:g} s (--eval-ingest-timeout, the whole wait of a user)"
            )
            raise HookTimeout(
                f"{what} did not finish within {bound}; none of "
                f"{whose_cases(self.user_id, self.shared)} can be recorded"
                f"{others_run(self.shared)}; raise the limit if it is slow (the hook's thread "
                "is left behind: it cannot be stopped from outside)"
            ) from None


class UserSetupError(CaseFileError):
    """`setup_user` raised: every case of that user errors with this, the others run."""


class HookTimeout(UserSetupError):
    """A hook of a user's ingestion did not return within its bound (IngestionWait)."""


class IngestTimeout(Exception):
    """`ready(user, result)` stayed false for the whole --eval-ingest-timeout."""


def wait_until_ready(
    ready: Callable[[Any, Any], Any],
    user: UserData,
    result: Any,
    timeout: float,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> float:
    """Poll the system's `ready(user, result)` with back-off until it is true (as Zep's harness
    waits for a user's graph to be processed): the seconds waited. Raises IngestTimeout when it
    is still false after `timeout` seconds."""
    started = clock()
    pause = FIRST_POLL
    while not ready(user, result):
        waited = clock() - started
        if waited >= timeout:
            raise IngestTimeout(f"was still false after {waited:.1f} s (--eval-ingest-timeout)")
        sleep(min(pause, max(timeout - waited, 0.0)))
        pause = min(pause * 2, LAST_POLL)
    return clock() - started


def call_hook(
    hook: str,
    user: SuiteUser,
    suite_name: str,
    method: Callable[[Any, Any], Any],
    result: Any,
    wait: IngestionWait | None = None,
) -> Any:
    """The system's `hook(user, result)` (`user_ready`, `ready`), bounded by `wait`; its error
    is said as that hook's, naming the user."""
    try:
        if wait is None:
            return method(user.data, result)
        return wait.bounded(hook, method, user.data, result)
    except (KeyboardInterrupt, IngestTimeout, HookTimeout):
        raise
    except BaseException as exc:
        raise _setup_error(user.id, suite_name, exc, hook, user.shared) from exc


def _setup_error(
    user_id: str,
    suite_name: str,
    exc: BaseException,
    hook: str = "setup_user",
    shared: bool = False,
) -> BaseException:
    # --replay-http's unserved request reads as a stale recording; a stale, missing or broken
    # ingestion recording is an error of the recording, said as such.
    if type(exc).__name__ == "UnservedRequest" or isinstance(exc, EvalCaseError | UserCodeExit):
        return exc
    message = str(exc).strip() if isinstance(exc, Exception) else ""
    what = (
        (f"{type(exc).__name__}: {message}" if message else type(exc).__name__)
        if isinstance(exc, Exception)
        else (f"{type(exc).__name__}({', '.join(map(repr, exc.args))})")
    )
    error: BaseException = UserSetupError(
        f"{hook_call(hook, user_id, shared)} of suite {suite_name!r} raised {what}; none of "
        f"{whose_cases(user_id, shared)} can be recorded until it succeeds{others_run(shared)}"
    )
    if not isinstance(exc, Exception):  # SystemExit & co. must not end the session
        error = UserCodeExit(str(error))
    return error


def user_key_field(user_id: str) -> str:
    return f"{USER_FIELD_PREFIX}{user_id}"


def user_label(files: Mapping[str, list[tuple[str, str]]]) -> str | None:
    """`path@hash6 path@hash6`, in the suite's order, when short enough to read in a message."""
    text = " ".join(
        f"{path}@{digest[:SHOW_CHARS]}" for entries in files.values() for path, digest in entries
    )
    return text if len(text) <= LABEL_CHARS else None


def changed_user_files(old_label: str, new_label: str) -> str | None:
    """Of two `user_label`s, only the files that differ: `data/ana/chats.json@1a2b3c ->
    data/ana/chats.json@9f8e7d` (None when the labels do not read as file lists)."""

    def parse(label: str) -> dict[str, str] | None:
        entries = {}
        for token in label.split(" "):
            path, at, digest = token.rpartition("@")
            if not at or not path:
                return None
            entries[path] = digest
        return entries

    old, new = parse(old_label), parse(new_label)
    if old is None or new is None:
        return None
    gone = [f"{path}@{old[path]}" for path in old if new.get(path) != old[path]]
    came = [f"{path}@{new[path]}" for path in new if old.get(path) != new[path]]
    return f"{' '.join(gone) or '-'} -> {' '.join(came) or '-'}"


def build_users(
    users: list[Any],
    rootdir: Path,
    hash_file: Callable[[str, str], str],
    ingestion: dict[str, Any] | None = None,
    ready_timeout: float | None = None,
    run_config: dict[str, Any] | None = None,
) -> dict[str, SuiteUser | CaseFileError]:
    """Each declared user (schema.User) as a SuiteUser, or the error its cases get (a missing or
    outside file errors only that user's cases). `hash_file(path, where)` hashes one path
    relative to the rootdir, raising CaseFileError starting with `where`. `ingestion`: the
    suite's ingestion settings, handed to `setup_user` as `user.ingestion`; `run_config`, the
    authored input manifest's values, as `user.run_config`."""
    built: dict[str, SuiteUser | CaseFileError] = {}
    for user in users:
        unsafe = unsafe_id_reason(user.id)
        if unsafe:  # it names the user's ingestion recording, users/<id>.json
            built[user.id] = CaseFileError(
                f"user id {shown_name(user.id)} cannot name its ingestion recording: {unsafe}; "
                'rename the user (in "users" and in its cases\' "user")'
            )
            continue
        try:
            built[user.id] = _built_unit(
                user.id,
                user_key_field(user.id),
                user.files(),
                user.model_extra or {},
                f"user {user.id!r}",
                rootdir,
                hash_file,
                UserData(id=user.id, ingestion=ingestion, run_config=run_config),
                ready_timeout,
            )
        except CaseFileError as exc:
            built[user.id] = exc
    return built


def build_documents(
    documents: Any,
    rootdir: Path,
    hash_file: Callable[[str, str], str],
    ready_timeout: float | None = None,
    run_config: dict[str, Any] | None = None,
) -> tuple[SuiteUser, SuiteUser]:
    """The suite's shared documents (schema.Documents) as the two phases every case runs on:
    their preparation (`prepare_documents(documents)`, when the system has it) and their
    ingestion (`setup_documents(documents)`). Each gets `documents.id` ("documents"), each file
    field as absolute paths, `documents.ingestion` (the settings of its own phase:
    `"preparation"` or `"ingestion"`) and `documents.run_config`; `setup_documents` also
    `documents.prepared`, the preparation's result. CaseFileError (every case of the suite
    gets it) when a file cannot be hashed."""
    files, declared = documents.files(), documents.model_extra or {}
    ingestion = _built_unit(
        DOCUMENTS_ID,
        DOCUMENTS_FILES_FIELD,
        files,
        declared,
        "documents",
        rootdir,
        hash_file,
        UserData(id=DOCUMENTS_ID, ingestion=documents.ingestion, run_config=run_config),
        ready_timeout,
        DOCUMENTS,
    )
    preparation = SuiteUser(
        PREPARATION_ID,
        DOCUMENTS_FILES_FIELD,
        ingestion.key_hash,
        ingestion.label,
        UserData(
            {name: value for name, value in ingestion.data.items() if name != "id"},
            id=DOCUMENTS_ID,
            ingestion=documents.preparation,
            run_config=run_config,
        ),
        ingestion.ready_timeout,
        PREPARATION,
    )
    return preparation, ingestion


def _built_unit(
    unit_id: str,
    key_field: str,
    files: dict[str, list[str]],
    declared: Mapping[str, Any],
    named: str,
    rootdir: Path,
    hash_file: Callable[[str, str], str],
    data: UserData,
    ready_timeout: float | None,
    phase: SharedPhase | None = None,
) -> SuiteUser:
    hashed: dict[str, list[tuple[str, str]]] = {}
    for field, paths in files.items():
        where = f"{named}, field {field!r}: "
        hashed[field] = [(path, hash_file(path, where)) for path in paths]
    for field, paths in files.items():
        absolute = [(rootdir / path).resolve() for path in paths]
        data[field] = absolute if isinstance(declared[field], list) else absolute[0]
    return SuiteUser(
        unit_id,
        key_field,
        content_hash({field: entries for field, entries in hashed.items()}),
        user_label(hashed),
        data,
        DEFAULT_READY_TIMEOUT if ready_timeout is None else ready_timeout,
        phase,
    )
