"""Conversation cases (`"turns"`): running a conversation turn by turn, and scoring each turn."""
