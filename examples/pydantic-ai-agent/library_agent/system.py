"""What the eval suite runs: the pydantic-ai agent, its run turned into a trace by the adapter."""

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from pytest_evalcases.adapters import fingerprint_of, from_pydantic_ai

from .agent import agent


class System:
    def fingerprint(self):  # the model, the prompt and each tool's schema are in the key
        return fingerprint_of(agent)

    def run_turn(self, case, history):  # a conversation's earlier turns come as history
        earlier = [
            ModelRequest(parts=[UserPromptPart(m["content"])])
            if m["role"] == "user"
            else ModelResponse(parts=[TextPart(m["content"])])
            for m in history
        ]
        result = agent.run_sync(case.input, message_history=earlier)
        return from_pydantic_ai(result, retrievers=["search_catalog"])

    def run(self, case):
        return self.run_turn(case, [])


system = System()
