"""What the eval suite runs: the LangGraph agent, its result turned into a trace by the adapter."""

from pytest_evalcases.adapters import fingerprint_of, from_langchain_messages

from .graph import SYSTEM_PROMPT, agent
from .model import MODEL_NAME
from .tools import TOOLS


class System:
    def fingerprint(self):  # the model, the prompt and each tool's schema are in the key
        return fingerprint_of(TOOLS, prompt=SYSTEM_PROMPT, model=MODEL_NAME)

    def run_turn(self, case, history):  # a conversation's earlier turns come as history
        result = agent().invoke({"messages": [*history, {"role": "user", "content": case.input}]})
        return from_langchain_messages(
            result["messages"][len(history) + 1 :], retrievers=["search_kb"]
        )

    def run(self, case):
        return self.run_turn(case, [])


system = System()
