"""``python -m pytest_evalcases collect-recordings SHARD... [--into DIR]``: bring the
recordings that the shards of a CI re-record wrote back into one checkout (docs/ci.md).

Each SHARD folder holds the files one shard wrote, at their paths under the project (as
`cassettes/<suite>/<id>.json`). A path that two shards wrote is an error naming both: each case
runs in one shard, so two writers mean a recording the shards share (a user's ingestion, a
suite's documents) or shards that overlap, and keeping either copy would hide the other.

Exit codes: 0 collected; 2 bad arguments, an overlap, or a file that is not a regular file (in
which case nothing is copied).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any


class CollectError(Exception):
    """The shards cannot be collected; the message names the shard or file and the next step."""


def add_parser(sub: Any) -> None:
    collect = sub.add_parser(
        "collect-recordings",
        help="copy the recordings CI shards wrote into one checkout, refusing overlaps",
        description=(
            "Copy the files each SHARD folder holds (the recordings one shard of a sharded "
            "re-record wrote, at their paths under the project) into DIR. A path written by "
            "two shards is an error naming both, and then nothing is copied."
        ),
    )
    collect.add_argument(
        "shards",
        nargs="+",
        type=Path,
        metavar="SHARD",
        help="folder of the files one shard wrote (e.g. its downloaded artifact)",
    )
    collect.add_argument(
        "--into",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="project folder to copy them into (default: the current folder)",
    )
    collect.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        written = shard_files(args.shards)
        copied = copy_into(written, args.into)
    except CollectError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    counts = ", ".join(
        f"{shard}: {sum(1 for s in written.values() if s == shard)}" for shard in args.shards
    )
    print(
        f"collected {copied} file(s) from {len(args.shards)} shard(s) into {args.into} ({counts})"
    )
    return 0


def shard_files(shards: Sequence[Path]) -> dict[PurePosixPath, Path]:
    """Each file's path under the project -> the shard folder that wrote it. Raises CollectError
    on a shard that is not a folder, a file that is not a regular one, or a path two shards
    wrote (all such paths in one message)."""
    owners: dict[PurePosixPath, list[Path]] = {}
    for shard in shards:
        if not shard.is_dir() or shard.is_symlink():
            raise CollectError(
                f"{shard}: not a folder; each SHARD is the folder of the files one shard wrote"
            )
        for path in sorted(shard.rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                raise CollectError(
                    f"{path}: not a regular file; a shard's recordings are plain files: "
                    "remove it from the shard's artifact"
                )
            if path.is_file():
                owners.setdefault(PurePosixPath(path.relative_to(shard).as_posix()), []).append(
                    shard
                )
    shared = {rel: found for rel, found in owners.items() if len(found) > 1}
    if shared:
        lines = [
            f"  {rel}: written by {' and '.join(str(shard) for shard in found)}"
            for rel, found in sorted(shared.items())
        ]
        raise CollectError(
            f"{len(shared)} file(s) written by more than one shard; nothing was copied:\n"
            + "\n".join(lines)
            + "\nre-record the suites they belong to in one job (pytest --live-stale "
            "cases/<suite>.json), or keep the cases that share a recording in one shard"
        )
    return {rel: found[0] for rel, found in owners.items()}


def copy_into(written: dict[PurePosixPath, Path], root: Path) -> int:
    """Copy every file to its path under `root`; a destination that is a symbolic link or a
    folder is refused before anything is copied. Returns the number of files copied."""
    for rel in written:
        target = root.joinpath(*rel.parts)
        if target.is_symlink() or target.is_dir():
            raise CollectError(
                f"{target}: is a {'symbolic link' if target.is_symlink() else 'folder'} where "
                f"a shard wrote a file ({written[rel] / rel}); nothing was copied: remove it "
                "and collect again"
            )
    for rel, shard in sorted(written.items()):
        target = root.joinpath(*rel.parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shard.joinpath(*rel.parts), target)
    return len(written)
