"""Code fingerprints: the suite's source in the key, as `code.<module>` fields.

Unit tests of `code_fingerprint` on real files in tmp_path (what changes a hash and what does
not, how entries expand, what an entry that names nothing says, that nothing is imported); the
end-to-end run: tests/integration/test_code_fingerprint.py.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from pytest_evalcases.core.errors import CaseFileError
from pytest_evalcases.domain.code import (
    CodeFingerprints,
    default_code,
    resolve_code_entry,
    source_hash,
)

SOURCE = '''\
"""Tools of the agent."""

LIMIT = 3


def search(query, k=LIMIT):
    """Search the knowledge base."""
    words = query.split()
    return [w for w in words if len(w) > 2][:k]
'''

# Edits that change only comments or layout: the AST is the same, so is the hash.
SAME_AST = {
    "comment": SOURCE.replace("LIMIT = 3", "LIMIT = 3  # three is enough"),
    "comment line": SOURCE.replace("def search", "# the one tool\ndef search"),
    "blank lines": SOURCE.replace("\n\n\ndef", "\n\n\n\n\ndef"),
    "quotes": SOURCE.replace(
        '"""Search the knowledge base."""', "'''Search the knowledge base.'''"
    ),
    "line breaks": SOURCE.replace(
        "[w for w in words if len(w) > 2][:k]",
        "[\n        w\n        for w in words\n        if len(w) > 2\n    ][:k]",
    ),
    "parentheses": SOURCE.replace("LIMIT = 3", "LIMIT = (3)"),
}

# Edits that change what the code is: each must change the hash.
NEW_AST = {
    "module docstring": SOURCE.replace("Tools of the agent.", "Tools of the support agent."),
    "tool description (docstring)": SOURCE.replace("Search the knowledge base.", "Search the KB."),
    "string": SOURCE.replace("query.split()", "query.split(',')"),
    "constant": SOURCE.replace("LIMIT = 3", "LIMIT = 4"),
    "slice": SOURCE.replace("[:k]", "[1:k]"),
    "statement": SOURCE.replace(
        "    words = query.split()\n", "    words = query.split()\n    words.sort()\n"
    ),
    "local name": SOURCE.replace("words", "terms"),
}


def write(root: Path, relpath: str, text: str) -> Path:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.mark.parametrize("edit", list(SAME_AST))
def test_comment_or_formatting_edit_keeps_the_hash(tmp_path: Path, edit: str) -> None:
    before = source_hash(write(tmp_path, "before.py", SOURCE))
    after = source_hash(write(tmp_path, "after.py", SAME_AST[edit]))

    assert SAME_AST[edit] != SOURCE
    assert after == before


@pytest.mark.parametrize("edit", list(NEW_AST))
def test_code_edit_changes_the_hash(tmp_path: Path, edit: str) -> None:
    before = source_hash(write(tmp_path, "before.py", SOURCE))
    after = source_hash(write(tmp_path, "after.py", NEW_AST[edit]))

    assert NEW_AST[edit] != SOURCE
    assert re.fullmatch(r"[0-9a-f]{16}", after)
    assert after != before


# Source whose plain `ast.dump` differs between CPython 3.11, 3.12 and 3.13: 3.12 adds an empty
# `type_params` to every function and class and an empty string part to an f-string whose format
# spec is a field; `repr` of a string follows the interpreter's Unicode tables (U+0378 is
# unassigned in some). Checked by hand on 3.11.7, 3.12.1 and 3.13.0: all three give this hash.
PORTABLE_SOURCE = '''\
class Tool:
    """A tool."""

    def render(self, name, width):
        return f"{name:<{width}}|{name!r:>10}"


UNASSIGNED = "\\u0378-\\u0379"
'''
PORTABLE_HASH = "b072386f75fc6d57"


def test_code_hash_is_the_same_on_every_python(tmp_path: Path) -> None:
    """A recording made on a developer's Python must not go stale on CI's other Python."""
    assert source_hash(write(tmp_path, "portable.py", PORTABLE_SOURCE)) == PORTABLE_HASH


def test_unparsable_file_is_an_error_naming_it(tmp_path: Path) -> None:
    write(tmp_path, "halfdone.py", "def search(:\n")

    with pytest.raises(CaseFileError) as raised:
        CodeFingerprints(tmp_path).key_fields(["halfdone.py"])

    assert "halfdone.py" in str(raised.value) and "SyntaxError" in str(raised.value)


@pytest.fixture
def code_tree(tmp_path: Path) -> Path:
    """app/ (a package with a module and a namespace folder of prompts), a top-level module, a
    folder of data and an empty one; cache and hidden folders that must never count."""
    write(tmp_path, "app/__init__.py", '"""The app."""\n')
    write(tmp_path, "app/tools.py", SOURCE)
    write(tmp_path, "app/prompts/system.py", 'PROMPT = "be brief"\n')
    write(tmp_path, "app/prompts/__pycache__/system.cpython-311.py", "junk = 1\n")
    write(tmp_path, "app/.hidden/secret.py", "junk = 2\n")
    write(tmp_path, "single.py", "VALUE = 1\n")
    write(tmp_path, "data/kb.txt", "not python\n")
    (tmp_path / "empty").mkdir()
    return tmp_path


# entry -> the key fields it expands to
EXPANSIONS = {
    "app.tools": ["code.app.tools"],
    "app/tools.py": ["code.app.tools"],
    "single": ["code.single"],
    "single.py": ["code.single"],
    "app/prompts/": ["code.app.prompts.system"],
    "app/prompts": ["code.app.prompts.system"],
    "app.prompts": ["code.app.prompts.system"],
    "app": ["code.app", "code.app.prompts.system", "code.app.tools"],
    "app/": ["code.app", "code.app.prompts.system", "code.app.tools"],
}


@pytest.mark.parametrize("entry", list(EXPANSIONS))
def test_entries_expand_to_one_field_per_module(code_tree: Path, entry: str) -> None:
    fields = CodeFingerprints(code_tree).key_fields([entry])

    assert sorted(fields) == EXPANSIONS[entry]
    tools = source_hash(code_tree / "app" / "tools.py")
    assert all(fields[name] == tools for name in fields if name == "code.app.tools")


def test_each_module_is_hashed_by_its_own_source(code_tree: Path) -> None:
    fields = CodeFingerprints(code_tree).key_fields(["app", "single.py"])

    assert fields == {
        "code.app": source_hash(code_tree / "app" / "__init__.py"),
        "code.app.tools": source_hash(code_tree / "app" / "tools.py"),
        "code.app.prompts.system": source_hash(code_tree / "app" / "prompts" / "system.py"),
        "code.single": source_hash(code_tree / "single.py"),
    }
    assert len(set(fields.values())) == 4


@pytest.mark.parametrize(
    "entry",
    [
        "nosuchmodule",
        "app.nosuch",
        "nosuch.py",
        "nosuch/",
        "data",
        "data/",
        "empty",
        "empty/",
        "data/kb.txt",
        "not a module",
    ],
)
def test_entry_that_names_nothing_is_an_error_naming_it(code_tree: Path, entry: str) -> None:
    with pytest.raises(CaseFileError) as raised:
        CodeFingerprints(code_tree).key_fields([entry])

    assert repr(entry) in str(raised.value)


def test_rootdir_itself_expands_to_its_modules(code_tree: Path) -> None:
    fields = CodeFingerprints(code_tree).key_fields(["./"])

    assert sorted(fields) == [
        "code.app",
        "code.app.prompts.system",
        "code.app.tools",
        "code.single",
    ]


def test_source_is_read_never_imported(code_tree: Path) -> None:
    write(
        code_tree,
        "explosive.py",
        (
            "from pathlib import Path\n"
            "Path(__file__).with_name('imported.flag').write_text('yes')\n"
            "raise RuntimeError('importing this module is a bug')\n"
        ),
    )

    fields = CodeFingerprints(code_tree).key_fields(["explosive"])

    assert fields == {"code.explosive": source_hash(code_tree / "explosive.py")}
    assert "explosive" not in sys.modules
    assert not (code_tree / "imported.flag").exists()


def test_default_code_is_the_module_holding_the_system() -> None:
    assert default_code("support_agent.agent:system") == ["support_agent.agent"]
    assert default_code("mysys:System.instance") == ["mysys"]


def test_resolve_names_paths_relative_to_the_rootdir(code_tree: Path) -> None:
    [(module, path)] = resolve_code_entry("app/tools.py", code_tree)

    assert module == "app.tools"
    assert path == (code_tree / "app" / "tools.py").resolve()
