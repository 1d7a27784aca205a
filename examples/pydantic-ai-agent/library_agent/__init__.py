"""A city-library assistant on pydantic-ai: two tools, a scripted `FunctionModel`.

`library_agent.system:system` is the object the eval suite in `cases/library.json` runs.
"""
