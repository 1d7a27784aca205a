"""Recording keys: the named short hashes a recording depends on, their readable labels, and the
check that names every changed field when a key no longer matches.

Replay recomputes a case's key and compares it with the recorded one field by field, so a stale
recording says exactly which input changed (and, with labels, from what to what).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any

from ..core.errors import CaseFileError, StaleRecording
from ..core.hashing import (
    LABEL_CHARS,
    SHOW_CHARS,
    content_hash,
    fingerprint_label,
    is_long_label,
    name_label,
    value_label,
)
from ..core.word_diff import word_diff
from ..domain.ingestion_phases import DOCUMENTS, DOCUMENTS_FILES_FIELD, PREPARATION
from ..domain.users import USER_FIELD_PREFIX, changed_user_files

INGESTION_PREFIX = "ingestion."
# A user's case: which ingestion of its user it ran on (engine/user_runs.py), `ingested.<user>`.
INGESTED_PREFIX = "ingested."
# The suite's shared documents (`"documents"`), in the key of every case of the suite: their
# files, their ingestion's settings and which recorded ingestion of them the case ran on.
DOCUMENTS_FILES = DOCUMENTS_FILES_FIELD
DOCUMENTS_INGESTION_PREFIX = DOCUMENTS.settings_prefix
DOCUMENTS_INGESTED = DOCUMENTS.ingested
# ... and their preparation's (a phase of its own, whose result their ingestion reads)
DOCUMENTS_PREPARATION_PREFIX = PREPARATION.settings_prefix
DOCUMENTS_PREPARED = PREPARATION.ingested
# run_config.: the authored input manifest's values setup_user gets (`user.run_config`)
_SHARED_KEY_PREFIXES = ("fingerprint.", "code.", "run_config.")
_INGESTION_KEY_PREFIXES = (*_SHARED_KEY_PREFIXES, INGESTION_PREFIX)
_DOCUMENTS_KEY_PREFIXES = (
    *_SHARED_KEY_PREFIXES,
    DOCUMENTS_INGESTION_PREFIX,
    DOCUMENTS_PREPARATION_PREFIX,
)
_PREPARATION_KEY_PREFIXES = (*_SHARED_KEY_PREFIXES, DOCUMENTS_PREPARATION_PREFIX)
# Key fields whose long labels (a prompt, an ontology, a judged stage's own criteria) show as
# the words that changed.
_TEXT_PREFIXES = (
    "fingerprint.",
    INGESTION_PREFIX,
    DOCUMENTS_INGESTION_PREFIX,
    DOCUMENTS_PREPARATION_PREFIX,
    "criteria",
    "steps",
    "reads",
    "rubric",
)

# Bump when the cassette layout or the meaning of a key field changes: every recording goes stale.
# 2: code fingerprints in the key, content hashes of the trace and verdicts, HTTP recordings.
CASSETTE_FORMAT = 2


# A cassette's `labels`: beside each key hash, what a person can read (a judge spec, a model
# name, a path). Never compared: only read to word a stale message, once a key differs.
Labels = Mapping[str, str]


def suite_key_fields(
    system_spec: str, input_hashes: Mapping[str, str], fingerprint: Mapping[str, Any]
) -> dict[str, str]:
    """The key fields shared by every case of a suite: computed once per suite, not per case."""
    key = {"format": str(CASSETTE_FORMAT), "system": content_hash(system_spec)}
    key.update(input_hashes)
    for name, value in fingerprint.items():
        try:
            key[f"fingerprint.{name}"] = content_hash(value)
        except (TypeError, ValueError) as exc:
            raise CaseFileError(
                f"system {system_spec!r}: fingerprint entry {name!r} is not JSON ({exc}); "
                "return plain JSON values "
                "(str, number, bool, list, dict) from fingerprint()"
            ) from None
    return key


def ingestion_key(
    settings: Mapping[str, Any], prefix: str = INGESTION_PREFIX
) -> tuple[dict[str, str], dict[str, str]]:
    """A suite's `"ingestion"` settings (ontology, instructions, chunk size, ...) as key fields
    `ingestion.<name>` and their labels: a changed setting stales every case of the suite's
    users and the message names it, as it names a changed fingerprint entry. The shared
    documents' settings are `documents.ingestion.<name>` (`prefix`), of every case."""
    fields = {f"{prefix}{name}": content_hash(value) for name, value in settings.items()}
    labels = {f"{prefix}{name}": fingerprint_label(value) for name, value in settings.items()}
    return fields, {name: label for name, label in labels.items() if label is not None}


def documents_ingestion_key(
    key_fields: Mapping[str, str], labels: Labels, input_fields: Collection[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """The key of the shared documents' ingestion recording, out of a case's key: their files,
    the system, its fingerprint and code, and the documents' own ingestion and preparation
    settings; not a user's files or settings (a user's graph and the document graph are
    ingested apart, as in Zep's harness), not what a case adds. (Which preparation it read,
    `documents.prepared`, is added by the engine: it is known once the preparation ran.)"""
    return _selected(key_fields, labels, input_fields, DOCUMENTS_FILES, _DOCUMENTS_KEY_PREFIXES)


def preparation_key(
    key_fields: Mapping[str, str], labels: Labels, input_fields: Collection[str] = ()
) -> tuple[dict[str, str], dict[str, str]]:
    """The key of the shared documents' preparation recording (Zep's chunk set): their files,
    the system, its fingerprint and code, and the preparation's settings; not the documents'
    ingestion settings, so every variant of their ingestion reuses one preparation."""
    return _selected(key_fields, labels, input_fields, DOCUMENTS_FILES, _PREPARATION_KEY_PREFIXES)


def _selected(
    key_fields: Mapping[str, str],
    labels: Labels,
    input_fields: Collection[str],
    files_field: str,
    prefixes: tuple[str, ...],
) -> tuple[dict[str, str], dict[str, str]]:
    """An ingestion recording's key out of a case's: the format, the system, the ingested
    files' field and the fields of `prefixes`, never a case's own input files."""
    names = [
        name
        for name in key_fields
        if name not in input_fields
        and (name in ("format", "system", files_field) or name.startswith(prefixes))
    ]
    return (
        {name: key_fields[name] for name in names},
        {name: labels[name] for name in names if name in labels},
    )


def user_ingestion_key(
    key_fields: Mapping[str, str],
    labels: Labels,
    user_field: str,
    input_fields: Collection[str] = (),
) -> tuple[dict[str, str], dict[str, str]]:
    """The key of a user's ingestion recording, out of one of its cases' key: what
    `setup_user` depends on (the user's files, the system and its fingerprint, the code, the
    suite's ingestion settings), not what a case adds (its input, `input_fields` (the data
    files, named by their paths, whatever their names look like), the judge). Every field of
    it is a field of each of the user's cases too, so a change stales both."""
    return _selected(key_fields, labels, input_fields, user_field, _INGESTION_KEY_PREFIXES)


def ingested_field(user_id: str) -> str:
    """The key field of a user's case naming the ingestion it ran on: a short hash of the
    user's recording's result and HTTP exchanges. Not a field of the user's own recording."""
    return f"{INGESTED_PREFIX}{user_id}"


def recording_key(
    suite_fields: Mapping[str, str], system_view: Mapping[str, Any]
) -> dict[str, str]:
    """The trace's key: the suite's fields plus the hash of what the system gets of this case."""
    key = dict(suite_fields)
    key["case"] = content_hash(system_view)
    return key


def suite_key_labels(
    system_spec: str,
    inputs: Iterable[str],
    fingerprint: Mapping[str, Any],
    code_paths: Mapping[str, str],
) -> dict[str, str]:
    """Labels of the key fields a suite shares (the `case` label is per case: `case_key_label`)."""
    found = {"system": name_label(system_spec)}
    found.update((name, name_label(name)) for name in inputs)
    found.update((f"fingerprint.{name}", fingerprint_label(v)) for name, v in fingerprint.items())
    found.update((name, name_label(path)) for name, path in code_paths.items())
    return {name: label for name, label in found.items() if label is not None}


def case_key_label(key_view: Mapping[str, Any]) -> str | None:
    """The `case` field's label: the input alone when the system gets nothing else, else the
    fields as compact JSON, when short enough."""
    if key_view.keys() == {"input"}:
        return value_label(key_view["input"])
    try:
        text = json.dumps(key_view, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return None
    return text if len(text) <= LABEL_CHARS else None


def stored_labels(labels: Any, *path: str) -> dict[str, str] | None:
    """The labels a recording holds (its `labels`) at `path` (e.g. "key", or "verdicts",
    stage), or None for one recorded before labels (its messages then show hashes, as they
    always did)."""
    found: Any = labels
    for part in path:
        found = found.get(part) if isinstance(found, dict) else None
    if not isinstance(found, dict):
        return None
    return {name: label for name, label in found.items() if isinstance(label, str)}


def changed_fields(
    recorded: Mapping[str, str],
    current: Mapping[str, str],
    recorded_labels: Labels | None = None,
    current_labels: Labels | None = None,
) -> list[str]:
    """`name changed (old -> new)` for every differing field, in a stable order. With the
    recorded cassette's labels, a side with a label shows it (`judge changed (lexical ->
    openai:gpt-4o-mini)`); without them (an older cassette), or when both labels read the
    same (an input file's path), the short hashes. A `fingerprint.*` value too long to show
    (a prompt) or made of fields (a tool) shows the words that changed: `fingerprint.prompt
    changed: "…in one sentence, only…" -> "…in two short sentences, only…"`."""
    changes = []
    names = sorted(recorded.keys() | current.keys())
    # A user's case: its ingestion settings changed are said as a change of that ingestion.
    users = [name for name in current if name.startswith(USER_FIELD_PREFIX)]
    owner = users[0][len(USER_FIELD_PREFIX) :] if len(users) == 1 else None
    labelled = recorded_labels is not None
    if labelled and _differs("judge", recorded, current):
        names = [name for name in names if name != "judge_version"]  # it follows the judge
    for name in names:
        old, new = recorded.get(name), current.get(name)
        if old != new:
            # An ingestion setting of a user's case is said as that user's ingestion. It is
            # labelled by its JSON value; a data file named `ingestion.md` by its own path, or
            # (a path too long to show) not at all, as is a setting too long to keep.
            label = (current_labels or {}).get(name)
            setting = owner if label is not None and label != name else None
            verb = "added" if old is None else "removed" if new is None else "changed"
            shown_old, shown_new = _short(old), _short(new)
            if labelled:
                label_old = (recorded_labels or {}).get(name) if old is not None else None
                label_new = (current_labels or {}).get(name) if new is not None else None
                if name.startswith(_TEXT_PREFIXES) and (
                    is_long_label(label_old) or is_long_label(label_new)
                ):
                    words = text_change(label_old, label_new)
                    if words is not None:
                        changes.append(_change(name, words, setting, words=True))
                        continue
                    # one side has no readable text: a long text is never shown whole
                    label_old = None if is_long_label(label_old) else label_old
                    label_new = None if is_long_label(label_new) else label_new
                if (label_old or shown_old) != (label_new or shown_new):
                    shown_old, shown_new = label_old or shown_old, label_new or shown_new
                if (
                    (name.startswith("user.") or name == DOCUMENTS_FILES)
                    and label_old
                    and label_new
                ):
                    # a stale user: name the files that changed
                    files = changed_user_files(label_old, label_new)
                    if files is not None:
                        changes.append(f"{name} changed ({files})")
                        continue
            if verb == "changed":
                changes.append(_change(name, f"{shown_old} -> {shown_new}", setting))
            else:
                changes.append(f"{name} {verb} ({shown_old} -> {shown_new})")
    return changes


def _change(name: str, detail: str, owner: str | None, words: bool = False) -> str:
    """`<name> changed (<old> -> <new>)`, or `<name> changed: <words>`; a setting of user
    `owner`'s ingestion as a change of that ingestion: `ingestion.u-ana changed:
    ingestion.ontology "…people…" -> "…people, pets…"`."""
    if owner is not None and name.startswith(INGESTION_PREFIX):
        return f"{INGESTION_PREFIX}{owner} changed: {name} {detail}"
    return f"{name} changed: {detail}" if words else f"{name} changed ({detail})"


def text_change(label_old: str | None, label_new: str | None) -> str | None:
    """Two fingerprint labels (JSON texts) as the words that changed: two strings as a word
    diff (`"…one sentence…" -> "…two short sentences…"`), two objects field by field
    (`description "…knowledge base…" -> "…help center…"`); None when they cannot be read so."""
    if label_old is None or label_new is None:
        return None
    try:
        old, new = json.loads(label_old), json.loads(label_new)
    except ValueError:  # a label redacted or cut: the hashes say it
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        parts = []
        for field in sorted(old.keys() | new.keys()):
            if old.get(field) != new.get(field):
                if field not in old or field not in new:
                    verb = "added" if field not in old else "removed"
                    parts.append(f"{field} {verb}")
                else:
                    parts.append(f"{field} {_words(old[field], new[field])}")
        return ", ".join(parts) or None
    return _words(old, new)


def _words(old: Any, new: Any) -> str:
    """`"…old words…" -> "…new words…"`: strings as they read, other values as JSON."""
    if isinstance(old, str) and isinstance(new, str):
        shown_old, shown_new = word_diff(old, new)
        return f'"{shown_old}" -> "{shown_new}"'
    old, new = (json.dumps(v, sort_keys=True, ensure_ascii=False) for v in (old, new))
    shown_old, shown_new = word_diff(old, new)
    return f"{shown_old} -> {shown_new}"


def _differs(name: str, recorded: Mapping[str, str], current: Mapping[str, str]) -> bool:
    return recorded.get(name) != current.get(name)


def _short(value: str | None) -> str:
    return "-" if value is None else str(value)[:SHOW_CHARS]


# The key fields --replay-http does not compare: it runs today's code, so a change there is
# checked by running it (its HTTP served from the recording), not refused.
REPLAY_HTTP_RUNS = "code."


def replay_http_can_check(changed: Iterable[str]) -> bool:
    """Whether `--replay-http` can check a recording whose key differs in `changed`: only when
    every changed field is one it runs today (code); any other (a fingerprint, an input file,
    the case, the judge) it refuses as stale too, so only a re-record helps."""
    names = list(changed)
    return bool(names) and all(name.startswith(REPLAY_HTTP_RUNS) for name in names)


# The labels of both sides, asked for only once a key differs (never on the passing path).
LabelSource = Callable[[], tuple[Labels | None, Labels | None]]


def check_key(
    recorded: Any,
    current: Mapping[str, str],
    what: str,
    rerecord: str,
    ignore_prefix: str | None = None,
    labels: LabelSource | None = None,
    advice: Callable[[set[str]], str | None] | None = None,
) -> None:
    """Raise StaleRecording naming every changed field, or return when the key matches. Fields
    starting with `ignore_prefix` are not compared (e.g. code hashes, when the code runs).
    `labels` gives the recorded and current labels for the message; `advice`, given the names
    of the changed fields, may replace the closing `re-record with ...`."""
    if recorded == current:  # every replay that passes: one dict comparison, no sorting
        return
    if not isinstance(recorded, dict):
        recorded = {}
    if ignore_prefix is not None:
        recorded = {k: v for k, v in recorded.items() if not k.startswith(ignore_prefix)}
        current = {k: v for k, v in current.items() if not k.startswith(ignore_prefix)}
        if recorded == current:
            return
    recorded_labels, current_labels = labels() if labels is not None else (None, None)
    changes = changed_fields(recorded, current, recorded_labels, current_labels)
    names = {
        name for name in recorded.keys() | current.keys() if recorded.get(name) != current.get(name)
    }
    closing = advice(names) if advice is not None else None
    if closing is None:
        if rerecord == "--live" and replay_http_can_check(names):
            rerecord = "--live, or check it offline with --replay-http"
        closing = f"re-record with {rerecord}"
    raise StaleRecording(f"stale recording{what}: {'; '.join(changes)}; {closing}")
