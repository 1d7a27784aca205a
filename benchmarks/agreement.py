"""What the agreement figures cost at the end of a calibration run (issue 31 parts 2-4).

    python benchmarks/agreement.py [N] [-r ROUNDS] [--replay]

Times, on N synthetic calibration results of one stage and judge (scores on a 0.01 grid, four
categories, 3% not graded, 3 repeats): `calibration_report` (the calibration section with the
agreement figures: 1 + 4 kappa intervals and the threshold interval, 10,000 resamples each, the
threshold search over every distinct score) and `judges_compared` (two runs of the N items,
paired bootstrap and McNemar). With `--replay`, it also writes a calibration suite of N items
for the lexical judge, records it once and times the replay (`pytest --eval-report`), as a user
would run it, against the same replay with the agreement figures switched off (monkeypatched
to nothing), so the difference is what this part adds to a run. Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pytest_evalcases.domain.calibration_agreement import calibration_report, judges_compared


def synthetic(n: int, seed: int, judge: str) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        expect = "fail" if rng.random() < 0.4 else "pass"
        item = rng.gauss(0.35 if expect == "fail" else 0.7, 0.2)  # the judge's view of the item
        scores = [min(1.0, max(0.0, round(rng.gauss(item, 0.03), 2))) for _ in range(3)]
        says_fail = [s < 0.5 for s in scores]
        if expect == "fail":
            status = "caught" if all(says_fail) else "MISSED"
        else:
            status = "false alarm" if any(says_fail) else "ok"
        ungraded = rng.random() < 0.03
        cases.append(
            {
                "suite": "people",
                "id": f"item-{i:05d}",
                "outcome": "passed",
                "calibration": {
                    "stage": "faithfulness",
                    "judge": judge,
                    "expect": expect,
                    "defect": "labelled" if expect == "fail" else None,
                    "scores": scores,
                    "labels": [None] * 3,
                    "status": "judge error" if ungraded else status,
                    "spread": max(scores) - min(scores),
                    "category": f"topic-{i % 4}",
                    "threshold": 0.5,
                    "ungraded": ungraded,
                    "reason": "a reason of some length, as a judge gives one" if ungraded else "",
                },
            }
        )
    return cases


def best_of(rounds: int, run: Any) -> tuple[float, float]:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return min(times), statistics.median(times)


def pure(n: int, rounds: int) -> None:
    a, b = synthetic(n, 1, "judge-a"), synthetic(n, 2, "judge-b")
    sections: list[Any] = []
    best, median = best_of(rounds, lambda: sections.append(calibration_report(a)))
    group = sections[-1]["agreement"][0]
    print(
        f"calibration_report, {n} items: best {best * 1000:.0f} ms, median {median * 1000:.0f} ms "
        f"(kappa {group['kappa']:.3f} [{group['kappa_ci95'][0]:.3f}, "
        f"{group['kappa_ci95'][1]:.3f}], "
        f"{group['threshold']['candidates']} thresholds tried)"
    )
    ra, rb = calibration_report(a), calibration_report(b)
    assert ra is not None and rb is not None
    found: list[Any] = []
    best, median = best_of(rounds, lambda: found.append(judges_compared(ra["cases"], rb["cases"])))
    mc = found[-1][0]["mcnemar"]
    print(
        f"judges_compared, {n} paired items: best {best * 1000:.0f} ms, median "
        f"{median * 1000:.0f} ms (McNemar b={mc['b']} c={mc['c']} p={mc['p']:.3g})"
    )


OFF = """
import pytest_evalcases.domain.calibration_agreement as agreement
agreement.agreement_figures = lambda rows, people: []
"""


def replay(n: int, rounds: int) -> None:
    root = Path(tempfile.mkdtemp(prefix="agreement-bench-"))
    (root / "cases").mkdir()
    context = ["Jotter can export notes as markdown, html and json with jotter export."]
    cases = []
    for i in range(n):
        expect = "fail" if i % 3 == 0 else "pass"
        answer = (
            f"Jotter uploads note {i} to the cloud overnight."
            if expect == "fail" and i % 2
            else f"Jotter can export note {i} as markdown, html and json."
        )
        case = {"id": f"item-{i:05d}", "stage": "faithfulness", "context": context}
        case.update(answer=answer, expect=expect)
        if expect == "fail":
            case["defect"] = "labelled unsupported"
        cases.append(case)
    suite = {"name": "people", "kind": "calibration", "judge": "lexical", "repeats": 1}
    (root / "cases" / "people.json").write_text(json.dumps({**suite, "cases": cases}))
    (root / "pytest.ini").write_text("[pytest]\neval_cases = cases\n")
    (root / "conftest_off.py").write_text(OFF)
    env = dict(os.environ)
    base = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "cases"]
    started = time.perf_counter()
    subprocess.run([*base, "--live"], cwd=root, env=env, capture_output=True, check=False)
    print(f"recorded {n} calibration items in {time.perf_counter() - started:.1f} s ({root})")

    def timed(*extra: str, off: bool = False) -> float:
        run_env = {**env, "PYTHONPATH": f"{root}{os.pathsep}{env.get('PYTHONPATH', '')}"}
        args = [*base, "--eval-report", "out", *extra]
        if off:
            args = [*args, "-p", "conftest_off"]
        started = time.perf_counter()
        proc = subprocess.run(args, cwd=root, env=run_env, capture_output=True, text=True)
        took = time.perf_counter() - started
        if "agreement with people" not in proc.stdout and not off:
            print(proc.stdout[-2000:], proc.stderr[-2000:])
            raise SystemExit("the replay did not show the agreement figures")
        return took

    timed()  # untimed warm-up: bytecode and the file cache
    with_figures, without = [], []
    for round_ in range(rounds):  # the order swaps from round to round: drift hits both
        for off in (False, True) if round_ % 2 else (True, False):
            (without if off else with_figures).append(timed(off=off))
    print(
        f"replay of {n} calibration items with --eval-report: median "
        f"{statistics.median(with_figures):.2f} s with the agreement figures, "
        f"{statistics.median(without):.2f} s without ({rounds} rounds each, order alternating)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=5000)
    parser.add_argument("-r", "--rounds", type=int, default=5)
    parser.add_argument("--replay", action="store_true")
    args = parser.parse_args()
    pure(args.n, args.rounds)
    if args.replay:
        replay(args.n, args.rounds)


if __name__ == "__main__":
    main()
