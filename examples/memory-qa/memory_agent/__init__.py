"""An offline memory agent: per-user BM25 memory over conversations, an extractive answerer."""
