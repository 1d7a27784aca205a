"""A suite's named totals, resolved once per suite: which of its cases each total counts.

A total leaves cases out by category and/or by id; ids may be given inline or as a JSON array in
a file named relative to the rootdir (read here, at collection, so a bad file errors the suite
before any case runs). Each case's result then says, per total of its suite, whether it counts
(`"totals": {"categories 1-4": true}`), and the report sums them (report/totals.py).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import CaseFileError
from ..core.files import MB, RefusedFile, read_bounded
from ..core.names import shown_name
from ..core.schema import Case
from ..core.suite_schema import Suite

# An ids file is a JSON list of case ids: 100,000 ids of 50 characters make 5 MB.
IDS_FILE_CAP = 10 * MB
# A did-you-mean compares one name with every id: an ids file of thousands of typos names a few.
UNKNOWN_NAMES_SHOWN = 3


@dataclass(frozen=True, slots=True)
class TotalRule:
    name: str
    categories: frozenset[str]
    ids: frozenset[str]

    def counts(self, case: Case) -> bool:
        return case.category not in self.categories and case.id not in self.ids


def resolve_totals(suite: Suite, rootdir: Path) -> tuple[TotalRule, ...]:
    """The suite's totals with their id files read. Raises CaseFileError naming the total."""
    rules = []
    raw_cases = [case for case in suite.cases if isinstance(case, dict)] if suite.totals else []
    case_ids = {case["id"] for case in raw_cases if isinstance(case.get("id"), str)}
    categories = {case["category"] for case in raw_cases if isinstance(case.get("category"), str)}
    for total in suite.totals:
        where = f'total {total.name!r}: "exclude": '
        ids = total.exclude.ids
        ids_from = f'{{"ids": {ids!r}}}' if isinstance(ids, str) else '"ids"'
        if isinstance(ids, str):
            ids = _read_ids(rootdir, ids, total.name)
        # A name no case has excludes nothing: the total would equal the overall figure, silently.
        _check_known(total.exclude.category, categories, "category", where + '"category"')
        _check_known(ids or (), case_ids, "id", where + ids_from)
        rules.append(TotalRule(total.name, frozenset(total.exclude.category), frozenset(ids or ())))
    return tuple(rules)


def _check_known(names: list[str] | tuple[()], known: set[str], what: str, where: str) -> None:
    unknown = [name for name in dict.fromkeys(names) if name not in known]
    if not unknown:
        return
    shown = [_with_close_match(name, known) for name in unknown[:UNKNOWN_NAMES_SHOWN]]
    more = len(unknown) - len(shown)
    if more:
        shown.append(f"and {more} more")
    raise CaseFileError(
        f"{where}: no case of the suite has the {what} {', '.join(shown)}, so the total would "
        f"exclude nothing by it; fix the {what} or remove it from the total"
    )


def _with_close_match(name: str, known: set[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    return f"{shown_name(name)} (did you mean {close[0]!r}?)" if close else shown_name(name)


def _read_ids(rootdir: Path, name: str, total: str) -> list[str]:
    path = (rootdir / name).resolve()
    where = f'total {total!r}: "exclude": {{"ids": {name!r}}}'
    if not path.is_relative_to(rootdir.resolve()):
        raise CaseFileError(
            f"{where} resolves outside the rootdir {rootdir}; keep it in the project"
        )
    try:
        doc = json.loads(read_bounded(path, IDS_FILE_CAP).decode("utf-8"))
    except RefusedFile as exc:  # a FIFO would block collection, a device never ends
        what = " for an ids file" if exc.too_big else ", not a regular file"
        raise CaseFileError(
            f"{where}: {name} {exc.reason}{what}: nothing was read from it; name a JSON array "
            "of case ids in a regular file"
        ) from None
    except OSError as exc:
        raise CaseFileError(f"{where}: cannot read {name} ({exc.strerror})") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CaseFileError(f"{where}: {name} is not a JSON array of case ids ({exc})") from None
    if not isinstance(doc, list) or not all(isinstance(item, str) for item in doc):
        raise CaseFileError(f"{where}: {name} must be a JSON array of case ids (strings)")
    return doc
