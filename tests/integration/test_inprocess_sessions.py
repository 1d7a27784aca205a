"""The pytest sessions the tests run in their own process (inprocess.py, the `project` fixture)
see the installed distributions as a fresh interpreter would, though each distribution's files
are read once per process."""

from __future__ import annotations

import importlib.metadata
import shutil
from pathlib import Path

from inprocess import remembered_distributions


def described(dist: importlib.metadata.Distribution) -> tuple[object, ...]:
    """What a pytest session reads of a distribution: its name and version, its entry points and
    (for a pytest plugin) its files."""
    entry_points = sorted((ep.group, ep.name, ep.value) for ep in dist.entry_points)
    plugin = any(group == "pytest11" for group, _, _ in entry_points)
    files = sorted(str(file) for file in dist.files or []) if plugin else None
    return dist.metadata["Name"], dist.version, entry_points, files


def test_every_installed_distribution_reads_as_it_is() -> None:
    real = [described(dist) for dist in importlib.metadata.distributions()]
    remembered = [described(dist) for dist in remembered_distributions()]
    again = [described(dist) for dist in remembered_distributions()]

    assert any(entry[2] and entry[3] for entry in real)  # pytest plugins with their files
    assert remembered == real
    assert again == real


def write_distribution(folder: Path, version: str) -> Path:
    """A pytest plugin's distribution folder, as pip installs it."""
    info = folder / f"fake_plugin-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: fake-plugin\nVersion: {version}\n"
    )
    (info / "entry_points.txt").write_text(f"[pytest11]\nfake = fake_plugin_{version[0]}\n")
    (info / "RECORD").write_text(f"fake_plugin_{version[0]}.py,,\n")
    return info


def test_a_distribution_replaced_by_another_version_is_read_afresh(tmp_path: Path) -> None:
    first = write_distribution(tmp_path, "1.0")
    before = [described(dist) for dist in remembered_distributions(path=[str(tmp_path)])]
    shutil.rmtree(first)
    write_distribution(tmp_path, "2.0")
    after = [described(dist) for dist in remembered_distributions(path=[str(tmp_path)])]

    assert before == [
        ("fake-plugin", "1.0", [("pytest11", "fake", "fake_plugin_1")], ["fake_plugin_1.py"])
    ]
    assert after == [
        ("fake-plugin", "2.0", [("pytest11", "fake", "fake_plugin_2")], ["fake_plugin_2.py"])
    ]
