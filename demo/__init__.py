"""Offline, deterministic docs assistant for the fictional `jotter` CLI, used by cases/docs.json."""
