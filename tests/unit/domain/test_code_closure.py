"""The default `code`: the system's module and every module of the project it imports.

Unit tests of the import closure on real files in tmp_path: which import forms are followed
(absolute, relative, inside functions, `from pkg import module`), what is never included (the
standard library, installed packages, modules outside the rootdir), a cycle, the bound, and that
each file is parsed once per run. Nothing is imported: module names are unique to these tests.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.domain import code as code_module
from pytest_evalcases.domain.code import CodeFingerprints, source_hash
from pytest_evalcases.domain.code_imports import (
    ModuleFinder,
    import_statements,
    imported_names,
)


def write(root: Path, relpath: str, text: str = "") -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tmp_path/project (the rootdir): a two-line system module over an agent package, plus an
    installed package (a site-packages folder inside the project, on sys.path) and a library
    outside the rootdir (on sys.path too)."""
    root = tmp_path / "project"
    write(root, "cc_system.py", "from cc_agent.run import answer\nsystem = answer\n")
    write(root, "cc_agent/__init__.py", '"""The agent."""\n')
    write(
        root,
        "cc_agent/run.py",
        (
            "import json\n"
            "import collections.abc\n"
            "from . import prompts\n"  # from-import of a sibling module
            "from .tools import search_kb\n"  # relative, a name of the module
            "import cc_sitepkg\n"  # installed (site-packages)
            "import cc_outside\n"  # outside the rootdir
            "import pytest\n"  # installed, really imported
            "try:\n"
            "    import cc_not_installed\n"  # an optional dependency, absent
            "except ImportError:\n"
            "    cc_not_installed = None\n"
            "\n"
            "def answer(case):\n"
            "    from cc_agent.memory import recall\n"  # inside a function
            "    return search_kb(case['input'], recall())\n"
        ),
    )
    write(root, "cc_agent/prompts.py", 'SYSTEM = "be brief"\n')
    write(
        root,
        "cc_agent/tools.py",
        (
            "from cc_agent import util\n"  # `from pkg import module`
            "\n"
            "def search_kb(query, k=3):\n"
            "    ranked = util.rank(query)\n"
            "    return ranked[:k]\n"
        ),
    )
    write(root, "cc_agent/util.py", "import cc_agent.tools\n\ndef rank(q):\n    return [q]\n")
    write(root, "cc_agent/memory/__init__.py", "from .store import recall\n")
    write(
        root, "cc_agent/memory/store.py", "from ..util import rank\n\ndef recall():\n    return 3\n"
    )
    write(root, "cc_agent/unused.py", "VALUE = 1\n")  # imported by nobody
    write(root, "cc_other.py", "VALUE = 2\n")  # neither
    site = root / ".venv" / "lib" / "python3.11" / "site-packages"
    write(site, "cc_sitepkg/__init__.py", "X = 1\n")
    write(tmp_path, "elsewhere/cc_outside.py", "Y = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "elsewhere"))
    monkeypatch.syspath_prepend(str(site))
    return root


CLOSURE = {
    "code.cc_system": "cc_system.py",
    "code.cc_agent": "cc_agent/__init__.py",
    "code.cc_agent.run": "cc_agent/run.py",
    "code.cc_agent.prompts": "cc_agent/prompts.py",
    "code.cc_agent.tools": "cc_agent/tools.py",
    "code.cc_agent.util": "cc_agent/util.py",
    "code.cc_agent.memory": "cc_agent/memory/__init__.py",
    "code.cc_agent.memory.store": "cc_agent/memory/store.py",
}


def test_default_code_follows_every_import_into_the_project(project: Path) -> None:
    paths: dict[str, str] = {}

    fields = CodeFingerprints(project).default_key_fields("cc_system:system", paths)

    assert paths == CLOSURE  # each module its own field, labelled with its file
    assert list(fields) == sorted(CLOSURE)
    assert fields == {name: source_hash(project / path) for name, path in CLOSURE.items()}


def test_stdlib_installed_and_outside_modules_are_never_included(project: Path) -> None:
    fields = CodeFingerprints(project).default_key_fields("cc_system:system")

    assert not [name for name in fields if not name.startswith(("code.cc_system", "code.cc_agent"))]
    assert "code.cc_agent.unused" not in fields and "code.cc_other" not in fields
    assert not any(name in sys.modules for name in ("cc_system", "cc_agent", "cc_sitepkg"))


def test_a_bug_in_the_tools_module_changes_its_field_alone(project: Path) -> None:
    before = CodeFingerprints(project).default_key_fields("cc_system:system")
    tools = project / "cc_agent" / "tools.py"
    tools.write_text(tools.read_text().replace("ranked[:k]", "ranked[1:k]"))

    after = CodeFingerprints(project).default_key_fields("cc_system:system")

    assert [name for name in before if before[name] != after[name]] == ["code.cc_agent.tools"]


def test_a_comment_or_formatting_edit_changes_nothing(project: Path) -> None:
    before = CodeFingerprints(project).default_key_fields("cc_system:system")
    tools = project / "cc_agent" / "tools.py"
    tools.write_text("# ranks, then cuts\n" + tools.read_text().replace("k=3", "k = 3"))

    assert CodeFingerprints(project).default_key_fields("cc_system:system") == before


def test_an_import_cycle_is_followed_once(tmp_path: Path) -> None:
    write(tmp_path, "cc_cyc_a.py", "import cc_cyc_b\n")
    write(tmp_path, "cc_cyc_b.py", "from cc_cyc_a import *\n")

    fields = CodeFingerprints(tmp_path).default_key_fields("cc_cyc_a:system")

    assert sorted(fields) == ["code.cc_cyc_a", "code.cc_cyc_b"]


def test_packages_holding_the_system_are_included(tmp_path: Path) -> None:
    write(tmp_path, "cc_deep/__init__.py")
    write(tmp_path, "cc_deep/inner/__init__.py", "from . import config\n")
    write(tmp_path, "cc_deep/inner/config.py")
    write(tmp_path, "cc_deep/inner/system.py", "system = print\n")

    fields = CodeFingerprints(tmp_path).default_key_fields("cc_deep.inner.system:system")

    assert sorted(fields) == [
        "code.cc_deep",
        "code.cc_deep.inner",
        "code.cc_deep.inner.config",
        "code.cc_deep.inner.system",
    ]


def test_a_namespace_package_has_no_field_its_modules_do(tmp_path: Path) -> None:
    write(tmp_path, "cc_sys.py", "import cc_ns.mod\nfrom cc_ns import other\n")
    write(tmp_path, "cc_ns/mod.py")
    write(tmp_path, "cc_ns/other.py")

    fields = CodeFingerprints(tmp_path).default_key_fields("cc_sys:system")

    assert sorted(fields) == ["code.cc_ns.mod", "code.cc_ns.other", "code.cc_sys"]


def test_a_project_module_already_imported_is_found_where_it_was_loaded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, "cc_sys2.py", "import cc_loaded\n")
    write(tmp_path, "lib/cc_loaded.py", "VALUE = 1\n")  # not on the search path
    monkeypatch.syspath_prepend(str(tmp_path / "lib"))
    __import__("cc_loaded")
    monkeypatch.undo()  # off sys.path again; still in sys.modules
    try:
        paths: dict[str, str] = {}
        CodeFingerprints(tmp_path).default_key_fields("cc_sys2:system", paths)
    finally:
        del sys.modules["cc_loaded"]

    assert paths == {"code.cc_sys2": "cc_sys2.py", "code.cc_loaded": "lib/cc_loaded.py"}


def test_an_explicit_code_list_is_not_followed(project: Path) -> None:
    fields = CodeFingerprints(project).key_fields(["cc_system"])

    assert list(fields) == ["code.cc_system"]


def test_past_the_bound_the_error_says_how_many_and_what_to_do(tmp_path: Path) -> None:
    names = [f"m{i}" for i in range(6)]
    write(tmp_path, "cc_big/__init__.py", f"from . import {', '.join(names)}\n")
    for name in names:
        write(tmp_path, f"cc_big/{name}.py")
    write(tmp_path, "cc_big_system.py", "import cc_big\n")

    with pytest.raises(CaseFileError) as raised:
        CodeFingerprints(tmp_path, bound=5).default_key_fields("cc_big_system:system")

    message = str(raised.value)
    assert "'cc_big_system'" in message and "holds 8 modules, more than 5" in message
    assert '"code": ["cc_big_system"]' in message and '"code": []' in message
    assert len(CodeFingerprints(tmp_path, bound=8).default_key_fields("cc_big_system:x")) == 8


def test_an_unparsable_imported_module_names_its_importer(tmp_path: Path) -> None:
    write(tmp_path, "cc_sys3.py", "import cc_broken\n")
    write(tmp_path, "cc_broken.py", "def search(:\n")

    with pytest.raises(CaseFileError) as raised:
        CodeFingerprints(tmp_path).default_key_fields("cc_sys3:system")

    message = str(raised.value)
    assert "cc_broken.py" in message and "SyntaxError" in message
    assert "imported by 'cc_sys3'" in message and '"code"' in message


def test_each_file_is_parsed_once_per_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(project, "cc_second_system.py", "from cc_agent.tools import search_kb\nsystem = 1\n")
    parsed: list[str] = []
    real_parse = code_module.parse_source

    def counting_parse(path: Path, *args: str) -> ast.Module:
        parsed.append(str(path))
        return real_parse(path, *args)

    monkeypatch.setattr(code_module, "parse_source", counting_parse)
    fingerprints = CodeFingerprints(project)

    first = fingerprints.default_key_fields("cc_system:system")
    again = fingerprints.default_key_fields("cc_system:other")  # same module, another suite
    second = fingerprints.default_key_fields("cc_second_system:system")
    listed = fingerprints.key_fields(["cc_agent/tools.py"])

    assert again == first
    assert (
        second["code.cc_agent.tools"]
        == listed["code.cc_agent.tools"]
        == first["code.cc_agent.tools"]
    )
    assert len(parsed) == len({*parsed}) == len(CLOSURE) + 1  # + cc_second_system.py


# ---- reading import statements -----------------------------------------------------------------
READ = """\
import a.b.c as abc, d
from e import f, g
from . import h
from ..i import j
from ... import k
from .l import *
if True:
    import m
else:
    import n
try:
    import o
except ImportError:
    import p
finally:
    import q
with open("x") as handle:
    import r
class S:
    def method(self):
        import t
async def u():
    async with x:
        import v
    for w in []:
        import x1
    while False:
        import y
    match z:
        case 1:
            import z1
lambda: __import__("not_read")
"""


def test_every_import_statement_is_read_wherever_it_sits() -> None:
    statements = import_statements(ast.parse(READ))

    assert statements == (
        (0, "a.b.c", ()),
        (0, "d", ()),
        (0, "e", ("f", "g")),
        (1, "", ("h",)),
        (2, "i", ("j",)),
        (3, "", ("k",)),
        (1, "l", ()),
        (0, "m", ()),
        (0, "n", ()),
        (0, "o", ()),
        (0, "p", ()),
        (0, "q", ()),
        (0, "r", ()),
        (0, "t", ()),
        (0, "v", ()),
        (0, "x1", ()),
        (0, "y", ()),
        (0, "z1", ()),
    )


@pytest.mark.parametrize(
    ("module", "is_package", "expected"),
    [
        (
            "pkg.sub.mod",
            False,
            [
                "a.b.c",
                "d",
                "e",
                "e.f",
                "e.g",
                "pkg.sub",
                "pkg.sub.h",
                "pkg.i",
                "pkg.i.j",
                "pkg.sub.l",
            ],
        ),
        (
            "pkg.sub",
            True,
            [
                "a.b.c",
                "d",
                "e",
                "e.f",
                "e.g",
                "pkg.sub",
                "pkg.sub.h",
                "pkg.i",
                "pkg.i.j",
                "pkg.sub.l",
            ],
        ),
        (
            "pkg.mod",
            False,  # `from ..i` and `from ...` go above the top-level package
            ["a.b.c", "d", "e", "e.f", "e.g", "pkg", "pkg.h", "pkg.l"],
        ),
        ("toplevel", False, ["a.b.c", "d", "e", "e.f", "e.g"]),
    ],
)
def test_relative_imports_resolve_against_the_importing_package(
    module: str, is_package: bool, expected: list[str]
) -> None:
    statements = import_statements(ast.parse(READ.split("if True:")[0]))

    assert list(imported_names(statements, module, is_package)) == expected


def test_the_finder_resolves_each_name_once(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    finder = ModuleFinder(project)
    assert finder.find("cc_agent.tools") == project / "cc_agent" / "tools.py"
    assert finder.find("cc_agent.tools.search_kb") is None  # a function, not a module
    assert finder.find("json") is None and finder.find("pytest") is None
    assert finder.find("cc_sitepkg") is None and finder.find("cc_outside") is None

    monkeypatch.setattr(Path, "is_file", lambda self: pytest.fail(f"searched again: {self}"))
    assert finder.find("cc_agent.tools") == project / "cc_agent" / "tools.py"
    assert finder.find("cc_sitepkg") is None
