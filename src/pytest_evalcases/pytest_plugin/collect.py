"""Collection: a case file becomes a CaseFile node whose children are CaseItems.

A problem never raises a collection error (pytest would abort the whole run): a file-level problem
becomes one item that errors in setup, a case-level problem errors only that case.
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from ..core.errors import CaseFileError, StageFailure
from ..core.names import case_ids, shown_name, unsafe_id_reason
from ..core.schema import Case, validate_case
from ..core.validation import format_validation_error, misspelled_fields
from ..domain.context import SuiteContext
from ..domain.stages.registry import stage_field_names
from ..store.folders import documents_recording_stems, user_recording_stem
from .calibration_items import collect_calibration
from .heap import keep_run_heap_out_of_gc
from .items import CaseItem, SuiteErrorItem
from .session import get_session
from .suite_contexts import ContextVariants, read_suite_file, suite_context
from .system_fixtures import remember_case_file

if TYPE_CHECKING:
    from .session import EvalSession


class CaseFile(pytest.File):
    """A suite file: `{"name", "system", "stages", "cases": [...]}`."""

    @functools.cached_property
    def item_relpath(self) -> str:
        """The file's path as its items' locations give it (pytest's own rule, computed once)."""
        return self.session._node_location_to_relpath(Path(os.path.abspath(self.path)))

    def collect(self) -> Iterator[pytest.Item]:

        state = get_session(self.config)
        if not state.seen_case_files:  # the first case file: what the run keeps, out of GC's way
            keep_run_heap_out_of_gc()
        state.seen_case_files.add(self.path)
        try:
            raw = read_suite_file(self.path, self.nodeid)
            if isinstance(raw, dict) and raw.get("kind") == "calibration":
                yield from collect_calibration(self, state, raw)
                return
            remember_case_file(self.config, self.path, self)
            ctx = suite_context(state, raw, self.path, self.nodeid, self)
        except Exception as exc:  # whatever a file holds, the other suites still run
            message = (
                str(exc)
                if isinstance(exc, CaseFileError)
                else (
                    f"{self.nodeid}: cannot load the suite ({type(exc).__name__}: {exc}); fix the "
                    "file, or report a bug if it looks right"
                )
            )
            yield SuiteErrorItem.from_parent(
                self, name="suite", message=message, suite_name=self.path.stem, index=-1
            )
            return
        # The raw cases are not kept on the suite: each item holds its validated case only.
        raw_cases, ctx.suite.cases = ctx.suite.cases, []
        # What the suite's folder of recordings may hold: its cases', its users' ingestions.
        users = [user_recording_stem(user.id) for user in ctx.suite.users or ()]
        if ctx.suite.documents is not None:
            users += documents_recording_stems()
        state.collected_suites[self.path] = (ctx.suite.name, case_ids(raw_cases) + users)
        variants = ContextVariants(state)
        seen: dict[str, int] = {}
        # The case fields the suite's own stages read: kept from the system, or shared with it
        # (either way not typos of case fields).
        hidden, shared = stage_field_names(ctx.gating + ctx.report_only)
        not_typos = [*ctx.suite.system_fields, *shared] if shared else ctx.suite.system_fields
        for index, raw in enumerate(raw_cases):
            # Each raw case let go once its item holds the validated one: the peak memory of a
            # large suite is not both at once (its freed dicts hold the next items).
            raw_cases[index] = None
            yield self._case_item(ctx, state, variants, index, raw, seen, hidden, not_typos)

    def _case_item(
        self,
        ctx: SuiteContext,
        state: EvalSession,
        variants: ContextVariants,
        index: int,
        raw: Any,
        seen: dict[str, int],
        stage_fields: frozenset[str],
        not_typos: list[str],
    ) -> pytest.Item:
        def error(name: str, message: str) -> SuiteErrorItem:
            item = SuiteErrorItem.from_parent(
                self,
                name=name,
                message=f"{self.nodeid}: {message}",
                suite_name=ctx.suite.name,
                index=index,
            )
            user = raw.get("user") if isinstance(raw, dict) else None
            if isinstance(user, str) and user:  # counted in its user's row of the reports
                item.user = user
            return item

        if not isinstance(raw, dict):
            return error(
                f"cases[{index}]",
                f'cases[{index}] is not an object: each case is {{"id": ..., "input": ...}}',
            )
        raw_id = raw.get("id")
        unsafe = unsafe_id_reason(raw_id) if isinstance(raw_id, str) else None
        name = raw_id if isinstance(raw_id, str) and raw_id and not unsafe else None
        if name is not None:
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                return error(
                    f"{name}-duplicate-{seen[name]}",
                    f"duplicate case id {name!r} "
                    f"(cases[{index}]); the first one runs, rename this one",
                )
        try:
            case = validate_case(raw)
        except ValidationError as exc:
            label = name or f"cases[{index}]"
            return error(
                label,
                f"invalid case {label}\n" + format_validation_error(exc, prefix=f"cases[{index}]"),
            )
        if stage_fields and case.extra and not stage_fields.isdisjoint(case.extra):
            case = _with_stage_fields(case, stage_fields)
        misspelled = misspelled_fields(case.extra, not_typos)
        if misspelled:
            prefix = f"cases[{index}]."
            return error(
                case.id,
                f"invalid case {case.id}\n" + "\n".join(prefix + line for line in misspelled),
            )
        if unsafe:  # case.id is raw_id, now known to be a valid string
            return error(
                f"cases[{index}]",
                f"case id {shown_name(case.id)} (cases[{index}]) cannot name a "
                f"cassette file: {unsafe}; rename it (nothing was recorded for it)",
            )
        if case.inputs is not None:
            try:
                ctx = variants.with_inputs(ctx, case.inputs)
            except CaseFileError as exc:
                return error(case.id, f"case {shown_name(case.id)} (cases[{index}]): {exc}")
        if case.user is not None:
            try:
                ctx = variants.with_user(ctx, case.user)
            except CaseFileError as exc:
                return error(case.id, f"case {shown_name(case.id)} (cases[{index}]): {exc}")
        item = CaseItem.from_parent(self, name=case.id, ctx=ctx, case=case, index=index)
        item.extra_keyword_matches.add(ctx.suite.name)  # -k <suite name> selects its cases
        for marker in filter(None, (case.category, *case.marks)):
            item.add_marker(state.marker(marker))
        if case.skip:
            item.add_marker(pytest.mark.skip(reason=case.skip))
        if case.xfail:
            # raises=StageFailure: a stale, missing or crashing case stays an error under xfail.
            item.add_marker(pytest.mark.xfail(reason=case.xfail, raises=StageFailure))
        return item


def _with_stage_fields(case: Case, names: frozenset[str]) -> Case:
    """The case with the fields its suite's own stages read (and keep from the system) moved
    out of `extra`: never given to the system, never in its recordings' key."""
    extra = case.extra or {}
    own = {name: value for name, value in extra.items() if name in names}
    rest = {name: value for name, value in extra.items() if name not in names}
    return dataclasses.replace(case, extra=rest or None, stage_fields=own)


def unreadable_case_files(folder: pytest.Directory) -> list[CaseFile]:
    """The `*.json` entries of a case folder that pytest does not collect because they are not
    regular files (a dangling symlink, a symlink loop, a folder, a FIFO, a device): each becomes
    a CaseFile whose one item errors naming why, so that none is silently not run."""
    found = []
    with os.scandir(folder.path) as entries:
        for entry in entries:
            if entry.name.endswith(".json") and not _is_file(entry):
                found.append(CaseFile.from_parent(folder, path=Path(entry.path)))
    return sorted(found, key=lambda node: node.path.name)


def _is_file(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_file()
    except OSError:  # a symlink loop
        return False
