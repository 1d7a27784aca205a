"""The pytest layer: hooks, options, run state, collection, items, the sources of each case's
recording, and the end of a run. Nothing below this folder imports it.

Its sub-floors, lowest first (tests/unit/test_layers.py checks them as it checks the house):
options, settings, hookspecs; session, system_fixtures; suite_contexts, housekeeping, items,
case_result, gathering, hook_calls; calibration_items, sources/, live_batch, project; collect,
finish; hooks (the module pytest loads).
"""
