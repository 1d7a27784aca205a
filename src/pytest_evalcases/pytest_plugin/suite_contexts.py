"""Suite contexts, built from a case file: read and parse it, validate the suite, resolve its
system, hash its inputs and code, pick its judge. Collection, calibration collection and the run
manifest all build contexts here, so the manifest describes exactly what the cases run with."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from ..core.errors import CaseFileError, UserInterrupt
from ..core.hashing import LABEL_CHARS, file_hash
from ..core.names import shown_file, shown_name, unsafe_suite_name_reason
from ..core.suite_schema import Suite
from ..core.validation import format_validation_error
from ..domain.calibration_schema import CalibrationSuite
from ..domain.context import CalibrationContext, SuiteContext
from ..domain.ingestion_phases import SHARED_PHASES
from ..domain.retries import RetryPolicy, policy_of
from ..domain.system import fixture_name, resolve_system
from ..domain.totals import resolve_totals
from ..domain.users import SuiteUser, build_documents, build_users
from ..domain.verdicts import JUDGE_INI, JUDGE_OPTION, JUDGE_SUITE, judge_options, judged_stages
from ..judges import JudgeConfigError
from ..judges.spec import canonical_judge
from ..manifest.authored import run_config_key_fields
from ..store.files import CASE_FILE_CAP, RefusedFile, read_bounded
from ..store.keys import (
    DOCUMENTS_INGESTION_PREFIX,
    DOCUMENTS_PREPARATION_PREFIX,
    fingerprint_label,
    ingestion_key,
    suite_key_fields,
    suite_key_labels,
)
from ..store.user_recordings import UnknownVariant, variant_settings
from .suite_stages import check_free_criteria_judge, check_suite_stages
from .system_fixtures import default_spec, fixture_system

if TYPE_CHECKING:
    from .session import EvalSession


def _json_error(nodeid: str, exc: json.JSONDecodeError) -> str:
    return f"{nodeid}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"


def _parse_case_file(nodeid: str, text: str) -> Any:
    """The file's JSON; anything the parser raises is a CaseFileError naming the file, so one
    hostile file (100,000 nested arrays, a 5,000-digit number) never aborts collection."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CaseFileError(_json_error(nodeid, exc)) from None
    except RecursionError:
        raise CaseFileError(
            f"{nodeid}: the JSON nests deeper than Python's parser can read; flatten it"
        ) from None
    except ValueError as exc:  # an integer longer than sys.get_int_max_str_digits()
        raise CaseFileError(
            f"{nodeid}: cannot read the JSON: {str(exc).split(';')[0]}; write numbers this long "
            "as strings"
        ) from None


def _input_outside_rootdir(name: str, rootdir: Path) -> str | None:
    """Why an `inputs` entry is not a file inside the rootdir, or None. Symlinks are followed: the
    key must depend only on files every checkout of the project has."""
    if Path(name).is_absolute():
        return "is an absolute path"
    try:
        real = (rootdir / name).resolve()
        root = rootdir.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # a symlink loop, a NUL byte
        return f"cannot be resolved ({exc})"
    if not real.is_relative_to(root):
        return f"resolves to {real}, outside the rootdir"
    return None


def hash_inputs(
    names: Iterable[str], state: EvalSession, where: str, listed_in: str = '"inputs"'
) -> dict[str, str]:
    """Key fields of `inputs` entries: path -> hash of the file's bytes (each file hashed once
    per run, in chunks: a data file may be any size). CaseFileError, starting with `where`, for
    an entry outside the rootdir, unreadable, or not a regular file (a FIFO would block the run,
    a device never ends: refused before reading; the next step names `listed_in`)."""
    hashes = {}
    rootdir = state.settings.rootdir
    for name in names:
        outside = _input_outside_rootdir(name, rootdir)
        if outside:
            raise CaseFileError(
                f"{where}input {name!r} {outside}; inputs are hashed into every "
                f"recording's key, so they must be files inside the rootdir {rootdir} "
                "(copy the file into the project and name it relative to the rootdir)"
            )
        try:
            hashes[name] = state.input_hash(name, file_hash)
        except RefusedFile as exc:
            raise CaseFileError(
                f"{where}input {name!r} {exc.reason}, not a regular file: nothing was read "
                "from it (inputs are hashed into the recordings' keys); make it a regular file, "
                f"or take it out of {listed_in}"
            ) from None
        except OSError as exc:
            raise CaseFileError(
                f"{where}input file {name!r} cannot be read ({exc.strerror}); "
                f"inputs are paths relative to the rootdir {rootdir}: fix the path or "
                "add the file"
            ) from None
    return hashes


def _judge_of(
    state: EvalSession, suite_judge: str | None, nodeid: str
) -> tuple[str | None, str | None]:
    """The judge a suite's cases are judged with (--eval-judge, else the suite's, else the ini's)
    and where it came from; CaseFileError for a suite judge of no known form."""
    try:
        own = canonical_judge(suite_judge) if suite_judge else None
    except JudgeConfigError as exc:
        raise CaseFileError(f'{nodeid}: "judge": {exc}') from None
    settings = state.settings
    if settings.judge_override:
        return settings.judge_override, JUDGE_OPTION
    if own:
        return own, JUDGE_SUITE
    if settings.default_judge:
        return settings.default_judge, JUDGE_INI
    return None, None


def load_suite_context(state: EvalSession, path: Path) -> SuiteContext | CalibrationContext:
    """A case file's suite context outside collection, exactly as collection builds it (the run
    manifest describes every suite of the case folders, collected or not): a SuiteContext, or a
    calibration suite's CalibrationContext. Its raw cases stay on `suite.cases`. Raises what
    loading raises (CaseFileError for a bad file)."""
    nodeid = shown_file(path, state.settings.rootdir)
    raw = read_suite_file(path, nodeid)
    if isinstance(raw, dict) and raw.get("kind") == "calibration":
        return calibration_context(state, raw, path, nodeid)
    return suite_context(state, raw, path, nodeid)


def calibration_context(
    state: EvalSession, raw: dict[str, Any], path: Path, nodeid: str
) -> CalibrationContext:
    """The context of a calibration suite file's cases. Raises CaseFileError naming the file."""

    try:
        suite = CalibrationSuite.model_validate(raw)
    except ValidationError as exc:
        raise CaseFileError(
            f"{nodeid}: invalid calibration suite\n{format_validation_error(exc)}"
        ) from None
    reason = unsafe_suite_name_reason(suite.name)
    if reason:
        raise CaseFileError(
            f"{nodeid}: suite name {shown_name(suite.name)} cannot name a folder: "
            f"{reason}; rename the suite"
        )
    judge_spec, judge_from = _judge_of(state, suite.judge, nodeid)
    return CalibrationContext(
        path=path,
        suite=suite,
        cassette_dir=str(state.settings.cassette_root / suite.name),
        rootdir=state.settings.rootdir,
        judge_spec=judge_spec,
        judge_from=judge_from,
    )


def read_suite_file(path: Path, nodeid: str) -> Any:
    """A case file's JSON; CaseFileError (naming the file) when it cannot be read or parsed, is
    not a regular file (a FIFO would block the run) or is over the case files' size cap."""
    try:
        text = read_bounded(path, CASE_FILE_CAP).decode("utf-8")
    except RefusedFile as exc:
        raise CaseFileError(f"{nodeid}: {refused_case_file(exc)}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise CaseFileError(f"{nodeid}: cannot read the file as UTF-8 text ({exc})") from None
    return _parse_case_file(nodeid, text)


def refused_case_file(refused: RefusedFile) -> str:
    """Why a case file was not read, and the next step."""
    if refused.too_big:
        return f"{refused.reason}; split the suite into several case files"
    return (
        f"{refused.reason}, not a case file: nothing was read from it; make it a regular JSON "
        "file, or remove it"
    )


def suite_context(
    state: EvalSession, raw: Any, path: Path, nodeid: str, node: Any = None
) -> SuiteContext:
    """The context of a suite file's cases, exactly as collection and the manifest see it
    (`node`: the case file's collector, where its fixtures are looked up). Raises
    CaseFileError naming the file."""
    if not isinstance(raw, dict):
        raise CaseFileError(f"{nodeid}: a case file holds one JSON object (a suite)")
    if isinstance(raw.get("name"), str):
        # Claimed before validation: a scan of the files this run does not collect reads the
        # name alone, and both must see the same two files declaring one name.
        state.claim_suite_name(raw["name"], nodeid)
    try:
        suite = Suite.model_validate(raw)
    except ValidationError as exc:
        raise CaseFileError(f"{nodeid}: invalid suite\n{format_validation_error(exc)}") from None
    check_suite_stages(state, suite, nodeid)
    if state.settings.ingestion_variant is not None and suite.users:
        suite = _on_variant(suite, state.settings.ingestion_variant, state, nodeid)
    if state.settings.documents_variant is not None and suite.documents is not None:
        suite = _on_variant(suite, state.settings.documents_variant, state, nodeid, True)
    try:
        totals = resolve_totals(suite, state.settings.rootdir)
    except CaseFileError as exc:
        raise CaseFileError(f"{nodeid}: {exc}") from None
    reason = unsafe_suite_name_reason(suite.name)
    if reason:
        raise CaseFileError(
            f"{nodeid}: suite name {shown_name(suite.name)} cannot name a folder: "
            f"{reason}; rename the suite"
        )
    spec = (
        suite.system
        or default_spec(state.config, path, node)  # a conftest's evalcases_system fixture
        or state.settings.default_system
    )
    if not spec:
        raise CaseFileError(
            f'{nodeid}: no system: set "system": "module:attribute" (or "fixture:NAME") in the '
            "suite, eval_system in the pytest ini, or define an evalcases_system fixture"
        )
    input_hashes = hash_inputs(suite.inputs, state, f"{nodeid}: ")
    timeout = state.settings.timeout_override or suite.timeout or state.settings.default_timeout
    try:
        # bounded like a run: an import or fingerprint() that hangs errors this suite alone
        built_by = (
            fixture_system(spec, suite, path, node, state.config, state.systems)
            if fixture_name(spec) is not None
            else None
        )
        with state.system_code(spec, suite.allow_hosts, suite.allow_subprocess):
            if built_by is not None:  # found, not built: a replay never builds it
                system = built_by.system
            else:
                system = resolve_system(spec, state.settings.rootdir, state.systems, timeout)
            fingerprint = system.fingerprint(timeout)
        key_fields = suite_key_fields(spec, input_hashes, fingerprint)
        code_paths: dict[str, str] = {}
        if suite.code is not None:
            code_fields = state.code_fingerprints.key_fields(suite.code, code_paths)
        elif built_by is not None:  # the fixture's file and the project modules it imports
            code_fields = {}
            if built_by.path is not None:
                code_fields = state.code_fingerprints.fixture_key_fields(
                    built_by.module, built_by.path, code_paths
                )
        else:  # the system's module and the project modules it imports
            code_fields = state.code_fingerprints.default_key_fields(spec, code_paths)
        key_fields.update(code_fields)
        key_labels = suite_key_labels(spec, input_hashes, fingerprint, code_paths)
        run_config = _run_config(state, suite.name, fingerprint, key_fields, key_labels)
        preparation, documents = _suite_documents(suite, state, run_config, key_fields, key_labels)
    except CaseFileError as exc:
        if isinstance(exc, UserInterrupt):  # the run stops once collected (hooks.py)
            state.interrupted = state.interrupted or exc.what
        raise CaseFileError(f"{nodeid}: {exc}") from None
    report_only = [name for name in suite.report_only if name not in suite.stages]

    judge_spec, judge_from = _judge_of(state, suite.judge, nodeid)
    check_free_criteria_judge(
        suite, suite.stages + suite.report_only, judge_spec, judge_from, nodeid
    )

    return SuiteContext(
        path=path,
        suite=suite,
        system=system,
        cassette_root=state.settings.cassette_root,
        cassette_dir=str(state.settings.cassette_root / suite.name),
        rootdir=state.settings.rootdir,
        key_fields=key_fields,
        input_fields=input_hashes,
        key_labels=key_labels,
        gating=list(suite.stages),
        report_only=report_only,
        judged=judged_stages(suite.stages + report_only, suite),
        judge_spec=judge_spec,
        judge_from=judge_from,
        judge_options=_judge_options(suite, state.settings.rootdir),
        timeout=timeout,
        users=_suite_users(suite, state, run_config) if suite.users else None,
        documents=documents,
        preparation=preparation,
        judge_repeats=state.settings.judge_repeats_override
        or suite.judge_repeats
        or state.settings.default_judge_repeats,
        runs=state.settings.runs_override or suite.runs,
        totals=totals,
        run_config=run_config,
        retries=_retry_policy(suite, state, nodeid),
    )


def _on_variant(
    suite: Suite, variant: str, state: EvalSession, nodeid: str, documents: bool = False
) -> Suite:
    """The suite with a recorded ingestion variant's settings in place of its own
    (--eval-ingestion): what `setup_user` gets and what its users' cases are keyed by; with
    `documents`, a variant of its shared documents' ingestion in place of theirs
    (--eval-documents, Zep's --doc-run). CaseFileError naming the file when no recording of
    the suite holds the variant."""
    root = state.settings.cassette_root
    try:
        settings = variant_settings(root, suite.name, variant, state.settings.rootdir, documents)
    except UnknownVariant as exc:
        option = "--eval-documents" if documents else "--eval-ingestion"
        raise CaseFileError(f"{nodeid}: {option} {variant}: {exc}") from None
    if not documents:
        return suite.model_copy(update={"ingestion": settings})
    assert suite.documents is not None
    shared = suite.documents.model_copy(update={"ingestion": settings})
    return suite.model_copy(update={"documents": shared})


def _run_config(
    state: EvalSession,
    suite: str,
    fingerprint: dict[str, Any],
    key_fields: dict[str, str],
    key_labels: dict[str, str],
) -> dict[str, Any] | None:
    """The authored input manifest's values for this suite's system (`case.run_config`), and
    those its fingerprint does not declare as key fields `run_config.<name>`; None without a
    manifest, or for a suite outside its split."""
    manifest = state.input_manifest
    if manifest is None or not manifest.applies_to(suite):
        return None
    fields, values = run_config_key_fields(manifest, fingerprint)
    key_fields.update(fields)
    key_labels.update(
        (name, label)
        for name, value in values.items()
        if (label := fingerprint_label(value)) is not None
    )
    return manifest.run_config()


def _retry_policy(suite: Suite, state: EvalSession, nodeid: str) -> RetryPolicy:
    """How this suite's system calls are retried on a transient error when recording."""
    try:
        return policy_of(suite.system_retries, state.settings.system_retries, os.environ)
    except CaseFileError as exc:
        raise CaseFileError(f"{nodeid}: {exc}") from None


def _judge_options(suite: Suite, rootdir: Path) -> dict[str, Any]:
    """The suite's judge options; with its own metrics, the rootdir their classes are imported
    from (never part of a verdict's key)."""
    options = judge_options(suite)
    if suite.metrics:
        options["rootdir"] = str(rootdir)
    return options


def _suite_users(
    suite: Suite, state: EvalSession, run_config: dict[str, Any] | None = None
) -> dict[str, SuiteUser | CaseFileError]:

    def hash_file(path: str, where: str) -> str:
        return hash_inputs([path], state, where, "the user's files")[path]

    return build_users(
        suite.users,
        state.settings.rootdir,
        hash_file,
        suite.ingestion,
        state.settings.ingest_timeout,
        run_config,
    )


def _suite_documents(
    suite: Suite,
    state: EvalSession,
    run_config: dict[str, Any] | None,
    key_fields: dict[str, str],
    key_labels: dict[str, str],
) -> tuple[SuiteUser | None, SuiteUser | None]:
    """The suite's shared documents as the two phases every case runs on (their preparation,
    their ingestion), their files and settings added to every case's key (`documents.files`,
    `documents.preparation.<name>`, `documents.ingestion.<name>`). (None, None) without
    `"documents"`; CaseFileError (the suite's) when a file cannot be hashed, or a user is
    named as a phase is."""
    declared = suite.documents
    if declared is None:
        return None, None
    for user in suite.users:
        if user.id in SHARED_PHASES:
            raise CaseFileError(
                f"user id {user.id!r} is the name of a phase of the suite's shared documents "
                'in its reports: rename the user (in "users" and in its cases\' "user")'
            )

    def hash_file(path: str, where: str) -> str:
        return hash_inputs([path], state, where, "the documents' files")[path]

    preparation, documents = build_documents(
        declared, state.settings.rootdir, hash_file, state.settings.ingest_timeout, run_config
    )
    key_fields[documents.key_field] = documents.key_hash
    if documents.label is not None:
        key_labels[documents.key_field] = documents.label
    for settings, prefix in (
        (declared.preparation, DOCUMENTS_PREPARATION_PREFIX),
        (declared.ingestion, DOCUMENTS_INGESTION_PREFIX),
    ):
        if settings is not None:
            fields, labels = ingestion_key(settings, prefix)
            key_fields.update(fields)
            key_labels.update(labels)
    return preparation, documents


class ContextVariants:
    """A case file's per-case contexts: one per distinct `inputs` list and one per user (and
    inputs), each shared by the cases naming it."""

    def __init__(self, state: EvalSession) -> None:
        self.state = state
        self._inputs: dict[tuple[str, ...], SuiteContext] = {}
        self._users: dict[tuple[tuple[str, ...], str], SuiteContext] = {}

    def with_inputs(self, ctx: SuiteContext, inputs: tuple[str, ...]) -> SuiteContext:
        """The suite's context with a case's own `inputs` in place of the suite's."""
        variant = self._inputs.get(inputs)
        if variant is None:
            own = hash_inputs(
                inputs, self.state, ""
            )  # before any change: an error leaves no variant
            fields = {k: v for k, v in ctx.key_fields.items() if k not in ctx.input_fields}
            fields.update(own)
            labels = {k: v for k, v in ctx.key_labels.items() if k not in ctx.input_fields}
            labels.update((name, name) for name in own if len(name) <= LABEL_CHARS)
            variant = dataclasses.replace(
                ctx, key_fields=fields, input_fields=own, key_labels=labels
            )
            self._inputs[inputs] = variant
        return variant

    def with_user(self, ctx: SuiteContext, user_id: str) -> SuiteContext:
        """The context of one user's cases: the user's files as key field `user.<id>`, and
        the suite's ingestion settings (what `setup_user` ingests with) as `ingestion.<name>`."""
        known = ctx.users or {}
        user = known.get(user_id)
        if user is None:
            declared = ", ".join(map(repr, known)) or "none"
            raise CaseFileError(
                f'user {user_id!r} is not declared by the suite (its "users": {declared}); '
                'add it to "users" with its data files, or fix the case\'s "user"'
            )
        if isinstance(user, CaseFileError):
            raise user
        # One context per user and inputs variant, shared by the cases naming both.
        shared = (tuple(ctx.input_fields), user_id)
        variant = self._users.get(shared)
        if variant is None:
            fields = {**ctx.key_fields, user.key_field: user.key_hash}
            labels = dict(ctx.key_labels)
            if user.label is not None:
                labels[user.key_field] = user.label
            if ctx.suite.ingestion is not None:
                ingestion_fields, ingestion_labels = ingestion_key(ctx.suite.ingestion)
                fields.update(ingestion_fields)
                labels.update(ingestion_labels)
            variant = dataclasses.replace(ctx, key_fields=fields, key_labels=labels, user=user)
            self._users[shared] = variant
        return variant
