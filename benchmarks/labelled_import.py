"""Time the labelled-set importers on files the size of the whole public releases.

    python benchmarks/labelled_import.py [--shared DIR] [-r R]

The full TruthfulQA.csv (817 questions) and HaluEval's general_data.json (4,507 responses) are
not available offline: this script synthesises files of their size and shape by repeating the
shared rows (../shared/data/TruthfulQA_60.csv, halueval_general_200.json), each HaluEval copy
under a new ID (TruthfulQA's ids come from the row number), then runs
`python -m pytest_evalcases import` on each, whole and with `--limit 500 --stratify label`, in
a child process, and prints the best wall time of R rounds and the child's peak RSS.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRUTHFULQA_QUESTIONS = 817
HALUEVAL_RESPONSES = 4507


def synthesise(shared: Path, folder: Path) -> dict[str, Path]:
    rows = list(csv.DictReader(io.StringIO((shared / "TruthfulQA_60.csv").read_text("utf-8"))))
    tqa = folder / "TruthfulQA.csv"
    with tqa.open("w", encoding="utf-8", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        for index in range(TRUTHFULQA_QUESTIONS):
            writer.writerow(rows[index % len(rows)])
    records = [
        json.loads(line)
        for line in (shared / "halueval_general_200.json").read_text("utf-8").splitlines()
        if line.strip()
    ]
    halu = folder / "general_data.json"
    with halu.open("w", encoding="utf-8") as out:
        for index in range(HALUEVAL_RESPONSES):
            record = dict(records[index % len(records)], ID=str(index + 1))
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return {"truthfulqa": tqa, "halueval": halu}


def timed(args: list[str], cwd: Path) -> tuple[float, int, str]:
    """(wall seconds, the children's peak RSS in KB so far, the command's last line)."""
    started = time.perf_counter()
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return wall, peak, done.stdout.strip().splitlines()[-2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shared", type=Path, default=Path(__file__).parents[2] / "shared/data")
    parser.add_argument("-r", "--rounds", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        files = synthesise(options.shared, folder)
        for fmt, path in files.items():
            size = path.stat().st_size / 1e6
            for extra in ([], ["--limit", "500", "--stratify", "label"]):
                best, peak, said = float("inf"), 0, ""
                for _ in range(options.rounds):
                    command = [sys.executable, "-m", "pytest_evalcases", "import", fmt, str(path)]
                    command += ["-o", "cases/set.json", "--force", *extra]
                    wall, peak, said = timed(command, folder)
                    best = min(best, wall)
                shown = " ".join(extra) or "whole file"
                print(f"{fmt} ({size:.1f} MB), {shown}: best {best:.2f} s of {options.rounds}")
                print(f"  {said}")
        print(f"peak RSS of the import processes: {peak / 1000:.0f} MB")


if __name__ == "__main__":
    main()
