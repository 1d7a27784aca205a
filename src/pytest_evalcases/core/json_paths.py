"""The JSONPaths a suite names body fields with (`http_ignore`, `http_volatile`): `$.a.b[0][*]`.

A small subset on purpose: a field (`.name`), an index (`[0]`) and every item (`[*]`). Pure, so
the suite schema can check a path when the case file is read, and the HTTP layer can use it.
"""

from __future__ import annotations

import re

_PATH_PART = re.compile(r"\.([^.\[\]]+)|\[(\d+|\*)\]")


def parse_json_path(path: str) -> list[str | int]:
    """`$.a.b[0][*]` -> ["a", "b", 0, "*"]; ValueError for anything else."""
    if not path.startswith("$"):
        raise ValueError(f"{path!r} is not a JSONPath (it starts with '$', e.g. '$.user')")
    parts: list[str | int] = []
    rest = path[1:]
    while rest:
        found = _PATH_PART.match(rest)
        if not found:
            raise ValueError(f"{path!r}: cannot read {rest!r} (use $.field, [0] or [*])")
        name, index = found.groups()
        parts.append(name if name is not None else ("*" if index == "*" else int(index)))
        rest = rest[found.end() :]
    if not parts:
        raise ValueError(f"{path!r} names the whole body; name a field, e.g. '$.user'")
    return parts
