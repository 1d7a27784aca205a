"""A Pedalworks bike-rental assistant on LangGraph: two tools, a scripted langchain-core model.

`rental_agent.system:system` is the object the eval suite in `cases/rentals.json` runs.
"""
