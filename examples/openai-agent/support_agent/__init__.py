"""A Kettlebird customer-support agent on the OpenAI SDK: two tools over a small knowledge base.

`support_agent.agent:system` is the object the eval suite in `cases/support.json` runs.
"""
