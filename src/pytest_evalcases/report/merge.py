"""Merge the results.json documents of CI shards into one (pure)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from .aggregate import aggregate

_START_KEYS = ("started_at", "started")
_FINISH_KEYS = ("finished_at", "finished")


class MergeError(ValueError):
    """Shards cannot be merged (not results documents, or the same case twice)."""


def merge_results(docs: Sequence[Mapping[str, Any]], names: Sequence[str] | None = None) -> dict:
    """One results document for all shards, equal to aggregating every case at once.

    names label the shards in error messages (the CLI passes file paths). The
    shards' own baseline sections are dropped: a comparison is only valid over the
    merged cases, so the caller recomputes it if wanted.
    """
    if not docs:
        raise MergeError("nothing to merge: no shard results given")
    labels = list(names) if names is not None else [f"shard {i + 1}" for i in range(len(docs))]
    if len(labels) != len(docs):
        raise MergeError(f"{len(docs)} shards but {len(labels)} names")
    owner: dict[str, str] = {}
    cases: list[dict] = []
    for doc, label in zip(docs, labels, strict=True):
        if not isinstance(doc, Mapping) or not isinstance(doc.get("cases"), list):
            raise MergeError(f"{label}: not a results.json (no 'cases' list)")
        for case in doc["cases"]:
            nodeid = case.get("nodeid") if isinstance(case, Mapping) else None
            if not isinstance(nodeid, str):
                raise MergeError(f"{label}: a case has no nodeid")
            if nodeid in owner:
                # Shards must partition the cases; a duplicate means overlapping
                # selections, and silently picking one would hide a result.
                raise MergeError(
                    f"case {nodeid!r} is in both {owner[nodeid]} and {label}; "
                    "shards must not overlap"
                )
            owner[nodeid] = label
            cases.append(case)
    order = merge_orders([list(d.get("stage_order") or []) for d in docs])
    try:
        return aggregate(cases, merge_runs([d.get("run") or {} for d in docs]), order)
    except ValueError as exc:
        raise MergeError(str(exc)) from None


def merge_orders(orders: Sequence[Sequence[str]]) -> list[str]:
    """Union of stage orders; a stage only some shards have goes after its predecessor."""
    merged: list[str] = []
    for order in orders:
        for i, name in enumerate(order):
            if name in merged:
                continue
            at = merged.index(order[i - 1]) + 1 if i and order[i - 1] in merged else len(merged)
            merged.insert(at, name)
    return merged


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    # Naive and aware datetimes do not compare; treat naive as UTC-less wall time.
    return parsed.replace(tzinfo=None) if parsed.tzinfo is None else parsed


def _pick(values: list[Any], latest: bool) -> Any:
    parsed = [(p, v) for v in values if (p := _parse_time(v)) is not None]
    if parsed and len({p.tzinfo is None for p, _ in parsed}) == 1:
        return (max if latest else min)(parsed, key=lambda pv: pv[0])[1]
    present = [v for v in values if v is not None]
    return (max if latest else min)(present, key=str) if present else None


def merge_runs(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Earliest start, latest finish, shard count; other keys kept when all shards agree.

    Keys whose values differ between shards (e.g. the shard's selection args) are
    collected under ``shard_runs`` as the full per-shard run dicts.
    """
    merged: dict[str, Any] = {}
    keys: list[str] = []
    for run in runs:
        keys += [k for k in run if k not in keys]
    differing = False
    for key in keys:
        if key in ("shards", "shard_runs"):
            continue
        values = [run.get(key) for run in runs]
        if key in _START_KEYS:
            merged[key] = _pick(values, latest=False)
        elif key in _FINISH_KEYS:
            merged[key] = _pick(values, latest=True)
        elif all(v == values[0] for v in values):
            merged[key] = values[0]
        else:
            differing = True
    # Re-merging merged documents adds up their shard counts.
    merged["shards"] = sum(int(r.get("shards") or 1) for r in runs)
    if differing:
        merged["shard_runs"] = [dict(r) for r in runs]
    return merged
