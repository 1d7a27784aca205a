"""Where a case's recording comes from in this run, one source per way of running: the replay
(`replay.py`), a run that runs the system (`running.py`: --replay-http, live modes) and
--eval-ingest-only (`ingest_only.py`)."""
