"""manifest.json, and the check of a run's configuration against a locked one (pure, bar
`load_manifest`, which reads the file).

What is locked: every suite of the case folders (its file and cases, system, stages,
thresholds, judge, fingerprint values, inputs, code, settings), the case files that do not
load, and the package versions. Not the git commit: the code a suite runs is locked through its
code hashes, so a commit that changes only docs or tests keeps the lock.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.names import clip
from ..store.files import REPORT_FILE_CAP, RefusedFile, read_bounded

MANIFEST_FORMAT = "pytest-evalcases/manifest"
MANIFEST_VERSION = 1
MANIFEST_JSON = "manifest.json"
# `input`: the authored input manifest's values (manifest/authored.py), when the run had one
LOCKED_PARTS = ("suites", "unloadable", "versions", "input")
_RESULTS_FORMAT = "pytest-evalcases/results"  # a results.json locks as well as its manifest
_HASH = re.compile(r"[0-9a-f]{16}")
_SHOWN_CHARS = 80


class ManifestError(Exception):
    """A manifest file that cannot be read; the message names the file and what to do."""


def manifest_document(run_id: str, created: str, config: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "format": MANIFEST_FORMAT,
        "version": MANIFEST_VERSION,
        "run_id": run_id,
        "created": created,
        "config": dict(config),
    }


def dumps_manifest(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def load_manifest(path: Path, shown: str | None = None) -> dict[str, Any]:
    """A manifest.json (or a results.json, whose `run.config` it locks), checked; messages name
    the file as `shown` (the path as the user gave it)."""
    name = shown or str(path)
    advice = "write one with --eval-report DIR (DIR/manifest.json)"
    try:
        doc = json.loads(read_bounded(path, REPORT_FILE_CAP).decode("utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"--eval-manifest {name}: no such file; {advice}") from None
    except RefusedFile as exc:  # a FIFO would block the run before it starts
        what = "" if exc.too_big else ", not a regular file"
        raise ManifestError(
            f"--eval-manifest {name}: {exc.reason}{what}: nothing was read from it; {advice}"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError(f"--eval-manifest {name}: cannot read it ({exc})") from None
    except json.JSONDecodeError as exc:
        raise ManifestError(
            f"--eval-manifest {name}: not valid JSON ({exc.msg} at line {exc.lineno}); {advice}"
        ) from None
    if isinstance(doc, dict) and doc.get("format") == _RESULTS_FORMAT:
        doc = {
            "format": MANIFEST_FORMAT,
            "version": MANIFEST_VERSION,
            "run_id": (doc.get("run") or {}).get("run_id"),
            "config": (doc.get("run") or {}).get("config"),
        }
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise ManifestError(
            f'--eval-manifest {name}: not a pytest-evalcases manifest (no "format": '
            f'"{MANIFEST_FORMAT}"); {advice}'
        )
    if not isinstance(doc.get("version"), int) or doc["version"] > MANIFEST_VERSION:
        raise ManifestError(
            f"--eval-manifest {name}: manifest version {doc.get('version')!r} is not one this "
            f"plugin reads (up to {MANIFEST_VERSION}); upgrade pytest-evalcases"
        )
    if not isinstance(doc.get("config"), dict) or not isinstance(doc["config"].get("suites"), dict):
        raise ManifestError(
            f'--eval-manifest {name}: no "config" with "suites" (a results.json written '
            f"before run manifests existed?); {advice}"
        )
    return doc


def config_differences(locked: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """One line per difference between two configurations, in the locked parts only, e.g.
    `suite support: fingerprint.model: "gpt-4o-mini" -> "gpt-4o"`. Empty: the same."""
    found: list[str] = []
    for part in LOCKED_PARTS:
        old, new = locked.get(part) or {}, current.get(part) or {}
        if part == "suites":
            for name in sorted(old.keys() | new.keys()):
                where = f"suite {name}"
                if name not in new:
                    found.append(f"{where}: in the manifest, not in the case folders now")
                elif name not in old:
                    found.append(f"{where}: not in the manifest (a new suite)")
                else:
                    _diff(old[name], new[name], where + ": ", found)
        elif part == "unloadable":
            for file in sorted(old.keys() | new.keys()):
                if file not in old:
                    reason = clip(str(new[file]), _SHOWN_CHARS, one_line=False, ellipsis="…")
                    found.append(f"{file}: does not load now ({reason})")
                elif file not in new:
                    found.append(f"{file}: loads now (it did not when the manifest was written)")
        elif part == "input":  # its values; not the file's path, which may be spelled otherwise
            _diff(old.get("values") or {}, new.get("values") or {}, "input.", found)
        else:
            _diff(old, new, f"{part}.", found)
    return found


def _diff(old: Any, new: Any, prefix: str, found: list[str]) -> None:
    if isinstance(old, dict) and isinstance(new, dict) and not (_is_hash(old) or _is_hash(new)):
        for key in sorted(old.keys() | new.keys(), key=str):
            name = f"{prefix}{key}"
            if key not in new:
                found.append(f"{name}: {shown_value(old[key])} -> (none)")
            elif key not in old:
                found.append(f"{name}: (none) -> {shown_value(new[key])}")
            else:
                _diff(old[key], new[key], name + ".", found)
        return
    if old != new or type(old) is not type(new):
        found.append(f"{prefix.rstrip('.: ')}: {shown_value(old)} -> {shown_value(new)}")


def _is_hash(value: Any) -> bool:
    return isinstance(value, dict) and set(value) == {"hash"}


def shown_value(value: Any) -> str:
    """A value as a difference line shows it: hashes by their first 6 characters."""
    if _is_hash(value):
        return f"hash {str(value['hash'])[:6]}"
    if isinstance(value, str) and _HASH.fullmatch(value):
        return value[:6]
    return clip(
        json.dumps(value, ensure_ascii=False, sort_keys=True),
        _SHOWN_CHARS,
        one_line=False,
        ellipsis="…",
    )


def refusal(path: str, locked: Mapping[str, Any], differences: list[str]) -> str:
    """The message of a run that refuses to start: every difference, then what to do."""
    run = f" (run {locked['run_id']})" if locked.get("run_id") else ""
    return refusal_text(
        f"--eval-manifest {path}: this run's configuration differs from the locked manifest{run}",
        differences,
        "restore the locked configuration, or, if the change is meant, lock the new one: run "
        "with --eval-report DIR and commit DIR/manifest.json as the manifest",
    )


def refusal_text(head: str, differences: list[str], advice: str) -> str:
    """`head` in N places; nothing ran:`, each difference indented, then `advice`: the shape of
    every manifest's refusal (the lock's and the authored input manifest's)."""
    count = len(differences)
    lines = [f"{head} in {count} place{'s' * (count != 1)}; nothing ran:"]
    lines += [f"  {line}" for line in differences]
    lines.append(advice)
    return "\n".join(lines)
