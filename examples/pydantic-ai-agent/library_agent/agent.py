"""The agent: pydantic-ai with the two tools and the scripted model."""

from pydantic_ai import Agent

from .model import model
from .tools import TOOLS

SYSTEM_PROMPT = (
    "You are the assistant of the city library. Use search_catalog for questions about loans, "
    "renewals, fees, reservations and opening hours, and get_loan when the reader names a loan "
    "id such as L-501. Answer in one or two sentences from what the tools returned."
)

agent = Agent(model(), system_prompt=SYSTEM_PROMPT, tools=TOOLS)
