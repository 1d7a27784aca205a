"""The HTTP layer: recording, replaying and scrubbing a case's HTTP exchanges.

Kept empty on purpose: importing this package must not import vcrpy (replay without
`--replay-http` imports none of the live-only dependencies).
"""
