"""Housekeeping of the cassette folders: which recordings are orphans (their case or suite is
gone), which a --live run may delete, --live-prune, and the suite names of the case files a run
does not collect (two files declaring one suite are refused whatever the selection)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pytest

from ..core.modes import RunMode
from ..core.names import shown_file
from ..store.files import CASE_FILE_CAP, problem_of, read_bounded
from ..store.folders import (
    VARIANTS_FOLDER,
    documents_recording_stems,
    left_alone,
    scan_recordings,
    user_recording_stem,
)

if TYPE_CHECKING:
    from .session import EvalSession


def _ids_by_suite(per_file: dict[Path, tuple[str, list[str]]]) -> dict[str, list[str]]:
    suites: dict[str, list[str]] = {}
    for name, ids in per_file.values():
        suites.setdefault(name, []).extend(ids)
    return suites


def remove_orphans(paths: list[Path]) -> None:
    """Delete orphaned recordings, and the folder of a gone suite once it is empty. A path that
    is (or has become) a symlink, or sits in a symlinked folder, is left alone."""
    for path in paths:
        if not (path.is_symlink() or path.parent.is_symlink()):
            path.unlink(missing_ok=True)
    # Deepest first: a gone suite's `users/` folder goes before the suite's own folder, a kept
    # variant's folder before `users/variants/`.
    folders = {path.parent for path in paths}
    kept = [folder.parent for folder in folders if folder.parent.name == VARIANTS_FOLDER]
    folders |= {*kept, *(variants.parent for variants in kept)}
    for folder in sorted(folders, key=lambda f: -len(f.parts)):
        try:
            if not folder.is_symlink():
                folder.rmdir()  # only when empty
        except OSError:
            pass


def outside_rootdir_note(rootdir: Path, cassette_root: Path) -> str | None:
    """Why nothing under the cassette folder may be deleted (it resolves outside the rootdir:
    not ours), or None."""
    if cassette_root.is_relative_to(rootdir.resolve()):
        return None
    return (
        f"the cassette folder resolves to {cassette_root}, outside the rootdir: "
        "pytest-evalcases deletes nothing there"
    )


def left_alone_line(rootdir: Path, found: list[tuple[Path, str]]) -> str | None:
    """One line naming what under the cassette folder was neither walked nor deleted (symlinks,
    files that are not regular files: `store.folders.left_alone`), and why; None when there is
    nothing such."""
    if not found:
        return None
    shown = ", ".join(f"{shown_file(path, rootdir)} ({why})" for path, why in found)
    return (
        f"left alone: {shown}: not walked for orphans and nothing behind it deleted (a symlink "
        "or a file that is not a regular file under the cassette folder is not ours to touch)"
    )


def prune_orphans(config: pytest.Config) -> int:
    """--live-prune: delete every recording whose case (or suite) no longer exists, list what was
    deleted, and run nothing else. Refuses while a case file cannot be read (its cassettes would
    look orphaned)."""
    flags = [
        flag
        for flag, dest in (
            ("--live", "eval_live"),
            ("--live-stale", "eval_live_stale"),
            ("--live-judges", "eval_live_judges"),
        )
        if config.getoption(dest)
    ]
    if flags:
        raise pytest.UsageError(
            f"--live-prune deletes orphaned recordings and runs nothing; it cannot be combined "
            f"with {', '.join(flags)}: run them one after the other"
        )
    rootdir = Path(config.rootpath)
    case_dirs = [(rootdir / p).resolve() for p in config.getini("eval_cases")]
    cassette_root = (rootdir / config.getini("eval_cassettes")).resolve()
    outside = outside_rootdir_note(rootdir, cassette_root)
    if outside:
        raise pytest.UsageError(f"--live-prune deleted nothing: {outside}")
    per_file, unreadable = scan_suites(case_dirs, cassette_root, {})
    if unreadable:
        names = ", ".join(
            f"{shown_file(p, rootdir)} ({problem_of(p) or 'not a readable suite'})"
            for p in unreadable
        )
        raise pytest.UsageError(
            f"--live-prune deleted nothing: cannot read the case file(s) {names}, whose "
            "recordings would look orphaned; fix or remove them, then prune again"
        )
    orphans, left_alone_found = scan_recordings(cassette_root, _ids_by_suite(per_file))
    remove_orphans(orphans)  # regular files only: what is left alone stays as it was listed
    count = len(orphans)
    print(
        f"--live-prune: deleted {count} orphaned recording{'s' * (count != 1)}"
        + (":" if orphans else f" (none under {shown_file(cassette_root, rootdir)})")
    )
    for path in orphans:
        print(f"  {shown_file(path, rootdir)}")
    left = left_alone_line(rootdir, left_alone_found)
    if left:
        print(left)
    return int(pytest.ExitCode.OK)


def case_files(case_dirs: list[Path], cassette_root: Path) -> Iterator[Path]:
    """Every case file of the case folders (`*.json` outside the cassettes), folder by folder,
    sorted: what collection takes, what orphan detection, the manifest and --markers read."""
    for folder in case_dirs:
        for path in sorted(_json_entries_under(folder, frozenset())) if folder.is_dir() else []:
            if not path.is_relative_to(cassette_root):
                yield path


def _json_entries_under(folder: Path, ancestors: frozenset[str]) -> Iterator[Path]:
    """The `*.json` entries (of any kind) under `folder`, walking symlinked folders as pytest's
    collection does: a case file behind one is collected, so its recordings are not orphans.
    A folder that is its own ancestor (a symlink loop) is not walked again."""
    real = os.path.realpath(folder)
    if real in ancestors:
        return
    try:
        entries = list(os.scandir(folder))
    except OSError:  # unreadable folder: collection reports what it can
        return
    for entry in entries:
        if entry.name.endswith(".json"):
            yield Path(entry.path)
        try:
            is_folder = entry.is_dir()
        except OSError:  # a symlink loop
            continue
        if is_folder:
            yield from _json_entries_under(Path(entry.path), ancestors | {real})


def scan_suites(
    case_dirs: list[Path],
    cassette_root: Path,
    known: dict[Path, tuple[str, list[str]]],
    skip: set[Path] | frozenset[Path] = frozenset(),
) -> tuple[dict[Path, tuple[str, list[str]]], list[Path]]:
    """Case file -> (suite name, case ids and the `user_recording_stem`s of its users) for
    every case file under the case folders (`known`
    ones are not read again, `skip` ones are left out), and the files that could not be read
    (then no cassette can safely be called an orphan)."""
    suites: dict[Path, tuple[str, list[str]]] = {}
    unreadable: list[Path] = []
    for path in case_files(case_dirs, cassette_root):
        if path in skip:
            continue
        if path in known:
            suites[path] = known[path]
            continue
        try:
            doc = json.loads(read_bounded(path, CASE_FILE_CAP))
            ids = [
                c["id"]
                for c in doc["cases"]
                if isinstance(c, dict) and isinstance(c.get("id"), str)
            ]
            ids += [
                user_recording_stem(u["id"])
                for u in doc.get("users") or ()
                if isinstance(u, dict) and isinstance(u.get("id"), str)
            ]
            if isinstance(doc.get("documents"), dict):
                ids += documents_recording_stems()
            name = doc["name"]
            if not isinstance(name, str):
                raise TypeError("the suite name is not a string")
            suites[path] = (name, ids)
        except Exception:  # anything a hostile file raises (RecursionError, a FIFO, 1 GB...)
            unreadable.append(path)
    return suites, unreadable


def case_markers(case_dirs: list[Path], cassette_root: Path) -> set[str]:
    """Every category and mark the case files name (for `pytest --markers`, which collects
    nothing). A file that cannot be read names none: collection reports it."""
    found: set[str] = set()
    for path in case_files(case_dirs, cassette_root):
        try:
            cases = json.loads(read_bounded(path, CASE_FILE_CAP))["cases"]
            for case in cases:
                names = [case.get("category"), *(case.get("marks") or [])]
                found.update(n for n in names if isinstance(n, str) and n.isidentifier())
        except Exception:  # anything a hostile file raises
            continue
    return found


def claim_uncollected_suites(state: EvalSession) -> None:
    """After collection: claim the suite names of the case files this run did not collect
    (a node id or a folder selected part of them), so that a suite whose name another file
    also declares is refused whatever the selection. Their case ids are kept for orphan
    detection, which then need not read them again."""
    if not state.seen_case_files:  # no eval case in this run: read nothing
        return
    suites, _ = scan_suites(
        state.settings.case_dirs, state.settings.cassette_root, {}, state.seen_case_files
    )
    for path, (name, ids) in suites.items():
        state.claim_suite_name(name, shown_file(path, state.settings.rootdir))
        state.collected_suites[path] = (name, ids)


class FolderReport(NamedTuple):
    """What the summary says of the cassette folder: the orphans as shown, a note on what was
    done with them, and the line naming what was left alone (or None)."""

    orphans: list[str]
    note: str
    left_alone: str | None


def orphan_report(state: EvalSession) -> FolderReport:
    """Recordings with no case (as shown: relative paths, `(deleted)` when this run deleted
    them), and a note on what was done with them; and what was left alone, from the same
    listing of the folders. A `--live` run deletes the orphans of each suite it selected every
    case of, whatever selected them; those of a suite that is gone when it selected every case
    of every suite."""
    settings = state.settings
    per_file, unreadable = scan_suites(
        settings.case_dirs, settings.cassette_root, state.collected_suites
    )
    if unreadable:
        names = ", ".join(shown_file(p, settings.rootdir) for p in unreadable[:3])
        left = left_alone_line(settings.rootdir, left_alone(settings.cassette_root))
        return FolderReport([], f" (not checked: unreadable case file {names})", left)
    orphans, found = scan_recordings(settings.cassette_root, _ids_by_suite(per_file))
    left = left_alone_line(settings.rootdir, found)  # orphans are regular files: not among them
    if not orphans:
        return FolderReport([], "", left)
    outside = outside_rootdir_note(settings.rootdir, settings.cassette_root)
    live = (
        settings.mode == RunMode.LIVE and not settings.dry_run and not outside
    )  # a dry run writes and deletes nothing
    deletable = set(_deletable(state, orphans, per_file)) if live else set()
    remove_orphans(sorted(deletable))
    shown = [
        shown_file(path, settings.rootdir) + (" (deleted)" if path in deletable else "")
        for path in orphans
    ]
    kept = len(orphans) - len(deletable)
    if outside:
        return FolderReport(shown, f" (not deleted: {outside})", left)
    if not kept:
        return FolderReport(
            shown, " (deleted: this --live run selected every case of their suites)", left
        )
    if deletable:
        return FolderReport(
            shown,
            f" ({len(deletable)} deleted: this --live run selected every case of their "
            "suites; --live-prune deletes the rest)",
            left,
        )
    return FolderReport(
        shown,
        " (--live-prune deletes them, as does a --live run that selects every case of their suite)",
        left,
    )


def _deletable(
    state: EvalSession, orphans: list[Path], per_file: dict[Path, tuple[str, list[str]]]
) -> list[Path]:
    """The orphans this --live run may delete: those of the suites whose every case it
    selected (a suite two files declare never: nothing of it is recorded either)."""
    files_of: dict[str, list[Path]] = {}
    for path, (name, _) in per_file.items():
        files_of.setdefault(name, []).append(path)
    complete_files = {path for path, (_, ids) in per_file.items() if _selects(state, path, ids)}
    complete = {
        name for name, files in files_of.items() if len(files) == 1 and files[0] in complete_files
    }
    # A gone suite's folder: when every case of every suite was selected (a full run), as
    # long as it selected any case at all.
    everything = bool(state.selected) and all(
        path in complete_files or not _cases_of(ids) for path, (_, ids) in per_file.items()
    )
    return [
        path
        for path in orphans
        if path.parent.name in complete or (path.parent.name not in files_of and everything)
    ]


def _selects(state: EvalSession, path: Path, ids: list[str]) -> bool:
    """Whether every case of the case file at `path` was selected (an empty file: no)."""
    prefix = shown_file(path, state.settings.rootdir) + "::"
    cases = _cases_of(ids)
    return bool(cases) and all(prefix + case_id in state.selected for case_id in cases)


def _cases_of(ids: list[str]) -> list[str]:
    """A suite's case ids, without its users' recording stems (`users/<id>`: a case id never
    holds a `/`)."""
    return [case_id for case_id in ids if "/" not in case_id]
