"""The HTTP layer: each case's HTTP exchanges recorded with vcrpy and replayed by --replay-http.

Nothing here is imported by a plain replay: vcrpy loads only when a run records or replays HTTP.
"""
