"""A promptfoo python assertion in a file (file://checks/length.py:short_enough)."""


def short_enough(output, context):
    limit = int(context["vars"].get("max_words", 30))
    words = len(output.split())
    return {
        "pass": words <= limit,
        "score": 1.0 if words <= limit else 0.0,
        "reason": f"{words} words (limit {limit})",
    }
