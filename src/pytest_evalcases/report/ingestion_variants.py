"""The ingestion recordings of a suite's users, variant by variant (`python -m pytest_evalcases
ingestions`): each variant's settings once, then one row per recording (user, variant, when,
what it took, its file), as text or JSON. The suite's shared documents' recordings are rows of
"user" `documents`, their variants listed apart (`document_variants`): they are named by the
documents' own settings."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..domain.ingestion_phases import PREPARATION_ID
from ..store.folders import DOCUMENTS_FOLDER, USERS_FOLDER
from ..store.user_recordings import ListedRecording, list_user_recordings, settings_of
from .formatting import fmt_int, fmt_usd

NO_SETTINGS = "(no ingestion settings)"
SETTINGS_UNKNOWN = "(settings not kept: recorded before recordings held them)"


def suites_with_users(root: Path) -> list[str]:
    """The suite folders of a cassette folder that hold ingestion recordings."""
    if not root.is_dir():
        return []
    return sorted(
        folder.name
        for folder in root.iterdir()
        if folder.is_dir()
        and not folder.is_symlink()
        and ((folder / USERS_FOLDER).is_dir() or (folder / DOCUMENTS_FOLDER).is_dir())
    )


def variants_view(root: Path, suite: str, user: str | None = None) -> dict[str, Any]:
    """A suite's recordings as JSON: `variants` (name -> settings, None for none, or the
    string SETTINGS_UNKNOWN) and `recordings`, by user, the last recorded first; and when the
    suite has shared documents' recordings, `document_variants`, theirs (and
    `preparation_variants`, their preparation's)."""
    view: dict[str, Any] = {"suite": suite, "variants": {}, "recordings": []}
    for shared, variants_field in ((True, "document_variants"), (False, "variants")):
        listed = [
            entry
            for entry in list_user_recordings(root, suite, shared=shared)
            if user in (None, entry.user)
        ]
        if shared and not listed:
            continue
        view.setdefault(variants_field, {})
        for entry in listed:
            view["recordings"].append(_row(root / suite, entry))
            # a documents' preparation's variants are named by its own settings: apart too
            field = "preparation_variants" if entry.user == PREPARATION_ID else variants_field
            variants: dict[str, Any] = view.setdefault(field, {})
            if shared:
                view["recordings"][-1]["documents"] = True
            if entry.recording is None:
                continue
            known = variants.get(entry.recording.variant, SETTINGS_UNKNOWN)
            if known == SETTINGS_UNKNOWN:
                found = settings_of(entry.recording)
                variants[entry.recording.variant] = SETTINGS_UNKNOWN if found is ... else found
    return view


def _row(suite_folder: Path, entry: ListedRecording) -> dict[str, Any]:
    """One recording as JSON; `file` relative to the suite's folder."""
    row: dict[str, Any] = {
        "user": entry.user,
        "file": entry.path.relative_to(suite_folder).as_posix(),
        "last_recorded": not entry.kept,
    }
    recording = entry.recording
    if recording is None:
        row["problem"] = entry.problem
        return row
    row.update(
        variant=recording.variant,
        recorded_at=recording.recorded_at,
        result=recording.result,
        **recording.figures,
    )
    return row


def variants_lines(view: dict[str, Any]) -> list[str]:
    """The view as text: a heading, each variant's settings, a table of the recordings."""
    recordings = view["recordings"]
    users = {row["user"] for row in recordings if not row.get("documents")}
    documents = "document_variants" in view
    shared = len(view.get("document_variants", ()))
    lines = [
        f"{view['suite']}: {len(recordings)} ingestion recording"
        f"{'' if len(recordings) == 1 else 's'} of {len(users)} user"
        f"{'' if len(users) == 1 else 's'}{' and the documents' if documents else ''}, "
        f"{len(view['variants'])} variant{'' if len(view['variants']) == 1 else 's'}"
        + (f" (documents: {shared})" if documents else "")
    ]
    for name, settings in sorted(view["variants"].items()):
        shown = settings if isinstance(settings, str) else _settings_text(settings)
        lines.append(f"  variant {name}: {shown}")
    for field, kind in (
        ("document_variants", "documents"),
        ("preparation_variants", "preparation"),
    ):
        for name, settings in sorted(view.get(field, {}).items()):
            shown = settings if isinstance(settings, str) else _settings_text(settings)
            lines.append(f"  {kind} variant {name}: {shown}")
    header = ["user", "variant", "recorded at", "requests", "tokens", "cost", "file"]
    rows = [header] + [_cells(row) for row in recordings]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        lines.append("  " + "  ".join([*cells, row[-1]]).rstrip())
    return lines


def _settings_text(settings: dict[str, Any] | None) -> str:
    if not settings:
        return NO_SETTINGS
    return ", ".join(
        f"{name}={json.dumps(value, ensure_ascii=False)}" for name, value in settings.items()
    )


def _cells(row: dict[str, Any]) -> list[str]:
    last = " (last recorded)" if row["last_recorded"] else ""
    if "problem" in row:
        return [row["user"], "?", "?", "", "", "", f"{row['file']}{last}: {row['problem']}"]
    usage = row.get("usage") or {}
    tokens = usage.get("total_tokens") if isinstance(usage, dict) else None
    requests, cost = row.get("requests"), row.get("cost_usd")
    return [
        row["user"],
        row["variant"],
        row["recorded_at"] or "?",
        "?" if requests is None else fmt_int(requests),
        "?" if tokens is None else fmt_int(tokens),
        "unknown" if cost is None else fmt_usd(cost),
        row["file"] + last,
    ]
