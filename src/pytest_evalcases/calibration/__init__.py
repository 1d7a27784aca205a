"""Calibration suites (`"kind": "calibration"`): judge test cases, run as pytest items.

Each case gives a judged stage the material its judge reads and says whether that material holds
a planted defect (`expect: "fail"`) or is a clean control (`expect: "pass"`). No system runs: the
judge's verdicts (`repeats` of them) are recorded and replayed like any verdict, so a judge's
catch rate, false alarms and spread are measured offline in CI.
"""
