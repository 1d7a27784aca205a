"""The ingestion figures: what each suite user's ingestion (`setup_user`, and the `ready()` wait)
took and cost, as its recording holds them, per user and in total. Pure: per-case result dicts in.

A case whose suite user has an ingestion record carries it as `"ingestion"`; every case of the
user carries the same record, and under xdist or a shard merge the cases of one user may come
from several workers, so the records are deduplicated by (suite, user). When two records of a
user disagree, the one that spent the most in this run wins (`recorded` over `replayed_http`
over `reused` over `replayed`), then the one of the user's first case in collection order: the
figures never depend on the order the results arrive in.

Figures are those of the recording (a reused or replayed user's were spent when it was
recorded); an unknown figure stays null, and a total is the sum of the known ones.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from .formatting import fmt_int, fmt_seconds, fmt_usd

# Where this run's ingestion of a user came from, in the order the terminal line and the
# total's `sources` count them.
SOURCE_ORDER: tuple[str, ...] = ("recorded", "dry_run", "reused", "replayed_http", "replayed")
# When a user's records disagree, the one that spent the most in this run wins.
PRECEDENCE: tuple[str, ...] = ("recorded", "dry_run", "replayed_http", "reused", "replayed")
# How the terminal line names a source (the others as they are).
SOURCE_WORDS = {"dry_run": "ingested by a dry run (not written)"}
# The sources of an ingestion this run paid for: their figures are this run's spend.
PAID = ("recorded", "dry_run")
_TOKENS = ("prompt_tokens", "completion_tokens", "total_tokens")
# A case's record of its suite's shared documents' ingestion (`"user": "documents"`), beside
# its user's `ingestion`: counted as one more row.
DOCUMENTS_RECORD = "documents_ingestion"
PREPARATION_RECORD = "documents_preparation"  # ... and of their preparation (`"documents":
# "preparation"`)
# Every ingestion record a case may carry, in the order they ran.
RECORD_FIELDS = (PREPARATION_RECORD, DOCUMENTS_RECORD, "ingestion")


def ingestion_records(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The ingestion records a case carries: its suite's documents' phases', its user's (none
    for a case of a suite with neither: three lookups)."""
    return [record for name in RECORD_FIELDS if (record := case.get(name)) is not None]


def recording_name(record: Mapping[str, Any], case: Mapping[str, Any]) -> str:
    """Where an ingestion record's recording is, under its suite's folder, as the terminal
    names it: `users/u-ana`, `documents`, `documents/preparation`."""
    phase = record.get("documents")
    if phase:
        return "documents/preparation" if phase == "preparation" else "documents"
    return f"users/{record.get('user') or case.get('user')}"


# A case's place in collection order: (file, index, node id).
CaseOrder = tuple[str, int, str]


def _number(value: Any) -> float | None:
    """A finite int or float (a bool, a NaN or a string is unknown)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return value


def _case_order(case: Mapping[str, Any]) -> CaseOrder:
    index = case.get("index")
    return (
        str(case.get("file") or ""),
        index if isinstance(index, int) and not isinstance(index, bool) else -1,
        str(case.get("nodeid") or case.get("id") or ""),
    )


def _rank(record: Mapping[str, Any]) -> int:
    source = record.get("source")
    return PRECEDENCE.index(source) if source in PRECEDENCE else len(PRECEDENCE)


class UserRecords:
    """Each (suite, user)'s ingestion record, gathered one case at a time.

    Callers look the record up themselves (`case.get("ingestion")`) and add only the cases that
    have one: a suite without users pays one dict lookup a case, nothing more."""

    __slots__ = ("_paid", "_records", "_written")

    def __init__(self) -> None:
        self._records: dict[tuple[str, str], tuple[int, CaseOrder, Mapping[str, Any]]] = {}
        # Each ingestion this run paid for, by its `ingestion_id`: under xdist every worker
        # that runs a user's cases ingests that user, and each one was paid for.
        self._paid: dict[tuple[str, str], dict[str, Mapping[str, Any]]] = {}
        # The users whose recording an ingestion of this run wrote (new or changed).
        self._written: set[tuple[str, str]] = set()

    def add(self, case: Mapping[str, Any], record: Any) -> None:
        if not isinstance(record, Mapping):
            return
        user = record.get("user") or case.get("user")
        if user in (None, ""):
            return
        key = (str(case.get("suite") or ""), str(user))
        ingestion_id = record.get("ingestion_id")
        if record.get("source") in PAID and isinstance(ingestion_id, str):
            self._paid.setdefault(key, {})[ingestion_id] = record
            change = record.get("change")
            if not isinstance(change, Mapping) or change.get("kind") != "unchanged":
                self._written.add(key)
        candidate = (_rank(record), _case_order(case), record)
        kept = self._records.get(key)
        if kept is None or candidate[:2] < kept[:2]:
            self._records[key] = candidate

    def __bool__(self) -> bool:
        return bool(self._records)

    def unchanged(self) -> set[tuple[str, str]]:
        """The (suite, user)s this run ingested again to the recording there was: nothing
        written."""
        return {key for key in self._paid if key not in self._written}

    def users(self) -> list[dict[str, Any]]:
        """One row a user, sorted by (suite, user) (`user_row`)."""
        rows = []
        for (suite, user), (_, _, record) in sorted(self._records.items()):
            paid = list(self._paid.get((suite, user), {}).values())
            if len(paid) > 1:  # ingested by several workers: the row is what they all spent
                row = _summed_row([user_row(suite, user, r) for r in paid])
            else:
                row = user_row(suite, user, record)
            row["ingestions"] = len(paid)
            rows.append(row)
        return rows


def user_row(suite: str, user: str, record: Mapping[str, Any]) -> dict[str, Any]:
    """A user's row of the section: its record's figures, flat, unknowns null."""
    usage = record.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    prompt, completion = (
        _number(usage.get("prompt_tokens")),
        _number(usage.get("completion_tokens")),
    )
    total = _number(usage.get("total_tokens"))
    if total is None and prompt is not None and completion is not None:
        total = prompt + completion
    requests = _number(record.get("requests"))
    recorded_at = record.get("recorded_at")
    source = record.get("source")
    variant = record.get("variant")  # recorded by a version that keeps variants
    row: dict[str, Any] = {
        "suite": suite,
        "user": user,
        "source": str(source) if source is not None else None,
        "recorded_at": recorded_at if isinstance(recorded_at, str) else None,
        "duration_s": _number(record.get("duration_s")),
        "ready_wait_s": _number(record.get("ready_wait_s")),
        "requests": int(requests) if requests is not None else 0,
        "prompt_tokens": int(prompt) if prompt is not None else None,
        "completion_tokens": int(completion) if completion is not None else None,
        "total_tokens": int(total) if total is not None else None,
        "cost_usd": _number(record.get("cost_usd")),
    }
    if isinstance(variant, str):
        row["variant"] = variant
    if record.get("documents"):  # a phase of the suite's shared documents, not a user
        row["documents"] = record["documents"]
    return row


def _summed_row(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One user's row over several ingestions of it: the figures summed (unknown stays
    unknown only when no ingestion knows it)."""
    row = dict(rows[0])
    for key in ("duration_s", "ready_wait_s"):
        row[key] = _known_sum((r[key] for r in rows), 6)
    row["requests"] = sum(r["requests"] for r in rows)
    for key in _TOKENS:
        row[key] = _known_sum(r[key] for r in rows)
    row["cost_usd"] = _known_sum((r["cost_usd"] for r in rows), 10)
    return row


def _known_sum(values: Iterable[Any], digits: int | None = None) -> float | int | None:
    """The sum of the known values, None when none is known. fsum + rounding: a sum of many
    small costs or times should not print as 0.0036000000000000003."""
    known = [v for v in values if v is not None]
    if not known:
        return None
    if digits is None:
        return sum(known)
    return round(math.fsum(known), digits)


def source_counts(users: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    """Users per source, in SOURCE_ORDER (then any other source, sorted)."""
    counts: dict[str, int] = {}
    for row in users:
        source = str(row.get("source"))
        counts[source] = counts.get(source, 0) + 1
    known = [s for s in SOURCE_ORDER if s in counts]
    return {s: counts[s] for s in known + sorted(set(counts) - set(known))}


def users_total(users: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The total over users' rows: sums of the known figures, null where none is known; a cost
    with some users unknown is the known ones' sum, `cost_unknown_users` counting the others
    (unknown is not zero), and likewise `usage_unknown_users` for the tokens."""
    shared = sum(1 for u in users if u.get("documents") and u["documents"] != "preparation")
    total: dict[str, Any] = {
        "users": sum(1 for u in users if not u.get("documents")),  # the documents' rows apart
        "duration_s": _known_sum((u["duration_s"] for u in users), 6),
        "ready_wait_s": _known_sum((u["ready_wait_s"] for u in users), 6),
        "requests": sum(u["requests"] for u in users),
        "ingestions": sum(u.get("ingestions", 0) for u in users),
    }
    if shared:
        total["documents"] = shared
    for key in _TOKENS:
        total[key] = _known_sum(u[key] for u in users)
    total["usage_unknown_users"] = sum(1 for u in users if u["total_tokens"] is None)
    total["cost_usd"] = _known_sum((u["cost_usd"] for u in users), 10)
    total["cost_unknown_users"] = sum(1 for u in users if u["cost_usd"] is None)
    total["sources"] = source_counts(users)
    return total


def ingestion_section(cases: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """results.json's `ingestion`: `{"users": [...], "total": {...}}`, or {} when no case
    carries an ingestion record (a run without suite users: the document has no such key)."""
    records = UserRecords()
    for case in cases:
        for record in ingestion_records(case):
            records.add(case, record)
    if not records:
        return {}
    users = records.users()
    return {"users": users, "total": users_total(users)}


# ------------------------------------------------------------------ shown


def _cost_cell(cost: float | None, unknown: int = 0) -> str:
    if cost is None:
        return "unknown"
    return fmt_usd(cost) + (f" (+{unknown} unknown)" if unknown else "")


def _tokens_cell(tokens: int | None, unknown: int = 0) -> str:
    if tokens is None:
        return "unknown"
    return fmt_int(tokens) + (f" (+{unknown} unknown)" if unknown else "")


TABLE_HEADER: tuple[str, ...] = (
    "suite",
    "user",
    "source",
    "duration",
    "ready wait",
    "requests",
    "tokens",
    "cost",
)
TABLE_ALIGN: tuple[str, ...] = ("l", "l", "l", "r", "r", "r", "r", "r")


def table_rows(section: Mapping[str, Any]) -> list[list[str]]:
    """A row of cells a user (the columns of TABLE_HEADER), as report.md and the dashboard
    show them."""
    return [
        [
            u["suite"],
            u["user"],
            _source_cell(u),
            fmt_seconds(u["duration_s"]),
            fmt_seconds(u["ready_wait_s"]),
            fmt_int(u["requests"]),
            _tokens_cell(u["total_tokens"]),
            _cost_cell(u["cost_usd"]),
        ]
        for u in section["users"]
    ]


def _source_cell(row: Mapping[str, Any]) -> str:
    """`recorded`, or `recorded ×2` for a user ingested by two workers."""
    source = row["source"] or "–"
    count = row.get("ingestions") or 0
    return f"{source} ×{count}" if count > 1 else source


def sources_text(sources: Mapping[str, int]) -> str:
    """`2 recorded, 1 reused`."""
    return ", ".join(f"{n} {source}" for source, n in sources.items())


def total_cells(section: Mapping[str, Any]) -> list[str]:
    """The total row: users and their sources, then the summed figures."""
    t = section["total"]
    return [
        "total",
        _count_text(t["users"], t.get("documents") or 0),
        sources_text(t["sources"]),
        fmt_seconds(t["duration_s"]),
        fmt_seconds(t["ready_wait_s"]),
        fmt_int(t["requests"]),
        _tokens_cell(t["total_tokens"], t.get("usage_unknown_users") or 0),
        _cost_cell(t["cost_usd"], t.get("cost_unknown_users") or 0),
    ]


def summary_line(
    users: Sequence[Mapping[str, Any]], unchanged: Collection[tuple[str, str]] = ()
) -> str:
    """The terminal's line: `ingestion: 3 users: 1 recorded (2.1 s, 1,000 tokens, $0.0002),
    2 reused`: users per source, and what the users ingested in this run took and cost.
    `unchanged`: the (suite, user)s ingested again to the recording there was, said apart from
    those recorded (`2 ingested again, recordings unchanged (0.4 s, …)`)."""
    parts = []
    for source, n in source_counts(users).items():
        rows = [u for u in users if u["source"] == source]
        same = [u for u in rows if (u["suite"], u["user"]) in unchanged]
        if source == "recorded" and same:
            written = [u for u in rows if u not in same]
            if written:
                parts.append(_paid_part(f"{len(written)} recorded", written))
            words = f"recording{'s' * (len(same) != 1)} unchanged"
            parts.append(_paid_part(f"{len(same)} ingested again, {words}", same))
        elif source in PAID:
            parts.append(_paid_part(f"{n} {SOURCE_WORDS.get(source, source)}", rows))
        else:
            parts.append(f"{n} {SOURCE_WORDS.get(source, source)}")
    return f"ingestion: {_counted(users)}: " + ", ".join(parts)


def _counted(rows: Sequence[Mapping[str, Any]]) -> str:
    users = sum(1 for row in rows if not row.get("documents"))
    shared = sum(1 for row in rows if row.get("documents") not in (None, False, "preparation"))
    return _count_text(users, shared)


def _count_text(users: int, shared: int) -> str:
    """`3 users`, `2 users and the documents`, `2 users and the documents of 2 suites`."""
    said = f"{users} user{'s' * (users != 1)}"
    if shared:
        said += " and the documents" + (f" of {shared} suites" if shared > 1 else "")
    return said


def _paid_part(text: str, rows: Sequence[Mapping[str, Any]]) -> str:
    """`text (2.1 s, 1,000 tokens, $0.0002)`: what the users' ingestions of this run took."""
    paid = users_total(rows)
    figures = _recorded_figures(paid)
    if paid["ingestions"] > len(rows):  # under xdist each worker ingests its users' cases
        figures = f"{paid['ingestions']} ingestions, one per worker, {figures}"
    return f"{text} ({figures})" if figures else text


def _recorded_figures(total: Mapping[str, Any]) -> str:
    figures = []
    if total["duration_s"] is not None:
        figures.append(fmt_seconds(total["duration_s"]))
    if total["total_tokens"] is not None:
        figures.append(f"{fmt_int(total['total_tokens'])} tokens")
    if total["cost_usd"] is None:
        figures.append("cost unknown")
    else:
        figures.append(fmt_usd(total["cost_usd"]))
        if total["cost_unknown_users"]:  # unknown is not zero: say how many the sum leaves out
            figures.append(f"cost unknown for {total['cost_unknown_users']}")
    return ", ".join(figures)
