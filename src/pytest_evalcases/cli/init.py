"""``python -m pytest_evalcases init [--framework F] [DIR]``: scaffold an eval project.

Writes the pytest config, a case file with three cases, a stand-in agent that runs offline on
the chosen framework with its system module over the framework's adapter, and a README of next
steps. Writes nothing when any of those files exists (it names them).

Exit codes: 0 written; 1 a file exists (nothing written); 2 bad arguments or a write error.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from . import init_frameworks as frameworks
from . import init_templates as templates

SUITE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
# A pytest config in one of these, other than ours, would be shadowed by the pytest.ini we write.
OTHER_CONFIGS = {
    "pyproject.toml": "[tool.pytest.ini_options]",
    "tox.ini": "[pytest]",
    "setup.cfg": "[tool:pytest]",
}


def add_parser(sub: Any) -> None:
    init = sub.add_parser(
        "init",
        help="scaffold an eval project: config, cases, a stand-in agent, next steps",
        description=(
            "Write a pytest.ini, cases/NAME.json with three cases, a stand-in agent on the "
            "chosen framework (its model a deterministic function: it runs offline, with no "
            "key) with its system module over the framework's adapter, and a README of next "
            "steps. `pytest --live --eval-judge lexical` then `pytest` pass in it. Refuses to "
            "overwrite any file (nothing is written)."
        ),
    )
    init.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=Path("."),
        metavar="DIR",
        help="the project folder (default: the current directory; created if missing)",
    )
    init.add_argument(
        "--framework",
        choices=templates.FRAMEWORKS,
        default="plain",
        help="the agent's framework (default: plain, a plain function)",
    )
    init.add_argument(
        "--name",
        default="assistant",
        help="the suite's name and case file (default: assistant)",
    )
    init.set_defaults(handler=run)


def scaffold_files(framework: str, suite: str) -> dict[str, str]:
    """Relative path -> text, for the framework and suite name."""
    asyncio_installed = importlib.util.find_spec("pytest_asyncio") is not None
    asyncio_line = templates.ASYNCIO_LINE if asyncio_installed else templates.ASYNCIO_COMMENT
    package = templates.PACKAGE
    files = {
        "pytest.ini": templates.PYTEST_INI.format(asyncio_line=asyncio_line),
        f"cases/{suite}.json": templates.CASES_JSON.format(suite=suite),
        "README.md": templates.README.format(
            suite=suite,
            framework=framework,
            model_note="" if framework == "plain" else ", in the framework's objects: `model.py`",
            replace_hint=frameworks.REPLACE_HINTS[framework],
        ),
        f"{package}/__init__.py": templates.INIT_PY,
        f"{package}/tools.py": templates.TOOLS_PY,
        f"{package}/stand_in.py": templates.STAND_IN_PY,
    }
    for name, text in frameworks.FRAMEWORK_FILES[framework].items():
        files[f"{package}/{name}"] = text
    return files


def shadowed_configs(folder: Path) -> list[str]:
    """The files in `folder` whose pytest config our pytest.ini would shadow."""
    found = []
    for name, section in OTHER_CONFIGS.items():
        path = folder / name
        try:
            if path.is_file() and section in path.read_text(encoding="utf-8", errors="replace"):
                found.append(f"{name} ({section})")
        except OSError:
            continue
    return found


def run(args: argparse.Namespace) -> int:
    folder: Path = args.dir
    if not SUITE_NAME.match(args.name):
        print(
            f"error: --name {args.name!r}: use letters, digits, '-', '_' and '.'", file=sys.stderr
        )
        return 2
    files = scaffold_files(args.framework, args.name)
    existing = [name for name in files if (folder / name).exists()]
    if existing:
        print(
            f"error: {folder} already has {', '.join(existing)}; init overwrites nothing, "
            "so nothing was written (move them away or choose another DIR)",
            file=sys.stderr,
        )
        return 1
    shadowed = shadowed_configs(folder)
    if shadowed:
        print(
            f"error: {folder} already has a pytest configuration in {', '.join(shadowed)}, "
            "which a new pytest.ini would override; nothing was written (run init in another "
            "DIR and copy what you need)",
            file=sys.stderr,
        )
        return 1
    try:
        for name, text in files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("x", encoding="utf-8") as handle:
                handle.write(text)
    except OSError as exc:
        print(
            f"error: cannot write {exc.filename or folder}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    shown = "." if folder == Path(".") else str(folder)
    print(f"wrote {len(files)} files in {shown} ({args.framework}):")
    for name in files:
        print(f"  {name}")
    print("next:")
    if shown != ".":
        print(f"  cd {shown}")
    print("  pytest --live --eval-judge lexical   # run the stand-in agent, record cassettes/")
    print("  pytest                               # replay: no model call, no key")
    print("then replace the stand-in agent with yours (README.md)")
    return 0
