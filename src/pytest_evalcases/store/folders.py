"""The cassette folder as a whole: its suites' folders and their `users/` folders, the
recordings there that no case or user owns any more (orphans), what is left alone (symlinks, not
regular files), and the temp files of writes a killed process left behind."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from ..core.processes import process_alive

USERS_FOLDER = "users"  # a suite's ingestion recordings (store/user_recordings.py)
# documents/: the recordings of the suite's shared documents' phases, `ingestion.json` and
# `preparation.json`
DOCUMENTS_FOLDER = "documents"
DOCUMENTS_RECORDINGS = ("ingestion", "preparation")
# users/variants/<variant>/: the recordings of the ingestion variants not last recorded
VARIANTS_FOLDER = "variants"


def remove_dead_temp_files(root: Path) -> int:
    """Remove the `<name>.tmp.<pid>` files that processes killed mid-write left in the suites'
    folders (a live process's own are left alone); return how many were removed. A symlink
    (a suite folder or a file) is never followed nor removed: what is behind it is not ours."""
    removed = 0
    if not root.is_dir():
        return 0
    suite_folders = (
        entry.path for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False)
    )
    for folder in (path for suite in suite_folders for _, path in _recording_folders(suite)):
        for entry in os.scandir(folder):
            name, _, pid = entry.name.rpartition(".tmp.")
            if (
                name
                and pid.isdigit()
                and entry.is_file(follow_symlinks=False)
                and not process_alive(int(pid))
            ):
                try:
                    os.unlink(entry.path)
                    removed += 1
                except OSError:  # gone already, or not ours to remove: leave it
                    pass
    return removed


def user_recording_stem(user_id: str) -> str:
    """How a suite's list of expected recordings names a user's ingestion recording (a case id
    never holds a `/`, so the two never meet)."""
    return f"{USERS_FOLDER}/{user_id}"


def documents_recording_stems() -> list[str]:
    """How a suite's list of expected recordings names its shared documents' recordings (kept
    variants included: `documents/variants/<v>/ingestion.json`)."""
    return [f"{DOCUMENTS_FOLDER}/{name}" for name in DOCUMENTS_RECORDINGS]


def find_orphans(root: Path, suites: Mapping[str, Iterable[str]]) -> list[Path]:
    """Cassettes (and HTTP recordings) whose case (or whole suite) no longer exists, among the
    suites' folders and any folder of a suite that is gone; and the ingestion recordings
    (`users/<id>.json`, `.http.json`) of a user the suite no longer declares. `suites`: each
    suite's case ids and its users' `user_recording_stem`s. Temp files of interrupted writes
    are not recordings; a symlink (a folder or a file) is never followed: see `left_alone`."""
    return scan_recordings(root, suites)[0]


def left_alone(root: Path) -> list[tuple[Path, str]]:
    """What under the cassette folder is not walked nor deleted, and why: a suite folder (or
    its `users/` folder) that is a symlink (what it points to is not ours), and a `*.json`
    entry there that is a symlink or not a regular file."""
    return scan_recordings(root, None)[1]


def scan_recordings(
    root: Path, suites: Mapping[str, Iterable[str]] | None
) -> tuple[list[Path], list[tuple[Path, str]]]:
    """`find_orphans` (with `suites`; none without) and `left_alone`, in one listing of each
    folder: at 100,000 cases a folder holds 200,000 entries, and the end of every run asks for
    both."""
    if not root.is_dir():
        return [], []
    orphans: list[Path] = []
    found = []
    for entry in sorted(os.scandir(root), key=lambda entry: entry.name):
        if entry.is_symlink():
            found.append((Path(entry.path), f"a symlink to {os.readlink(entry.path)}"))
    for folder in _real_folders(root):
        known = set(suites.get(folder.name, ())) if suites is not None else None
        users = os.path.join(folder.path, USERS_FOLDER)
        for link in (users, *_variant_links(users)):
            if os.path.islink(link):
                found.append((Path(link), f"a symlink to {os.readlink(link)}"))
        for prefix, path in _recording_folders(folder.path):
            # Only what is reported is sorted (a name's order is the same in any subset).
            regular, other = [], []
            for entry in os.scandir(path):
                if not entry.name.endswith(".json"):
                    continue
                if entry.is_file(follow_symlinks=False):  # a symlink is not a regular file
                    if known is not None and prefix + _case_of(entry.name) not in known:
                        regular.append(entry)
                else:
                    other.append(entry)
            orphans += [Path(entry.path) for entry in _by_name(regular)]
            found += [
                (Path(entry.path), f"a symlink to {os.readlink(entry.path)}")
                if entry.is_symlink()
                else (Path(entry.path), "not a regular file")
                for entry in _by_name(other)
            ]
    return orphans, found


def _recording_folders(suite_folder: str) -> list[tuple[str, str]]:
    """(stem prefix, folder) of a suite folder's recordings: its own, its real `users/`, and
    the real folders of `users/variants/` (a kept variant's `<id>.json` is user `<id>`'s, so
    it is an orphan only when the suite no longer declares the user)."""
    folders = [("", suite_folder)]
    for phase in (USERS_FOLDER, DOCUMENTS_FOLDER):
        found = os.path.join(suite_folder, phase)
        if os.path.isdir(found) and not os.path.islink(found):
            folders.append((f"{phase}/", found))
            variants = os.path.join(found, VARIANTS_FOLDER)
            if os.path.isdir(variants) and not os.path.islink(variants):
                folders += [
                    (f"{phase}/", entry.path)
                    for entry in _by_name(list(os.scandir(variants)))
                    if entry.is_dir(follow_symlinks=False)
                ]
    return folders


def _variant_links(users: str) -> list[str]:
    """`users/variants` and its entries, to report the symlinks among them (never followed)."""
    variants = os.path.join(users, VARIANTS_FOLDER)
    if os.path.islink(users) or not os.path.isdir(users):
        return []
    if os.path.islink(variants) or not os.path.isdir(variants):
        return [variants]
    return [entry.path for entry in _by_name(list(os.scandir(variants)))]


def _real_folders(root: Path) -> list[os.DirEntry[str]]:
    """The suite folders of the cassette folder, by name; symlinks to folders are not among them."""
    folders = [entry for entry in os.scandir(root) if entry.is_dir(follow_symlinks=False)]
    return sorted(folders, key=lambda entry: entry.name)


def _by_name(entries: list[os.DirEntry[str]]) -> list[os.DirEntry[str]]:
    return sorted(entries, key=lambda entry: entry.name)


def writable_folder_problem(path: Path) -> str | None:
    """Why a recording may not be written at `path` (its suite folder is a symlink: writing
    through it would change files that are not ours), or None."""
    folder = path.parent
    if folder.is_symlink():
        return (
            f"is a symlink (to {os.readlink(folder)}); pytest-evalcases does not write "
            "through it: replace it with a real folder (move the recordings in), then record "
            "again"
        )
    return None


def _case_of(file_name: str) -> str:
    """The case id a recording file belongs to: `<id>.json` or `<id>.http.json`."""
    stem = file_name[: -len(".json")]
    return stem[: -len(".http")] if stem.endswith(".http") else stem
