"""The HTTP layer: each case's HTTP exchanges recorded with vcrpy, scrubbed, and replayed by
--replay-http.

Kept empty on purpose: importing this package must not import vcrpy (a plain replay imports none
of the live-only dependencies); vcrpy loads only when a run records or replays HTTP.
"""
