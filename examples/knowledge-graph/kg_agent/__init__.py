"""A tiny offline fact extractor: the system under test of examples/knowledge-graph."""
