"""A small real agent measured through ``otelbench.sdk``: it asks a model (any
OpenAI-compatible server) a few questions with the official ``openai`` client, each a task,
the client's calls recorded by the installed OpenAI instrumentation under the task
(``observe(instrument=True)``); one task fails for a real reason (the JSON it asks for
cannot fit in the tokens it allows, so the reply is cut and does not parse). Run by tests/test_sdk.py against the embedded model:

    python -m otelbench.testing.sdk_agent --base-url URL --model ID --endpoint http://127.0.0.1:4318

Prints ``agent.stats()`` as JSON on its last line.
"""

from __future__ import annotations

import argparse
import json

import otelbench.sdk

QUESTIONS = ("What is the capital of France? Answer in one word.", "Name a primary colour. One word.")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--endpoint", required=True)
    ap.add_argument("--agent", default="sdk-agent")
    args = ap.parse_args()

    agent = otelbench.sdk.observe(agent=args.agent, endpoint=args.endpoint, instrument=True)
    import openai

    client = openai.OpenAI(base_url=args.base_url, api_key="none", max_retries=0)

    def ask(question: str, max_tokens: int = 24) -> str:
        reply = client.chat.completions.create(model=args.model, max_tokens=max_tokens, temperature=0,
                                               messages=[{"role": "user", "content": question}])
        return reply.choices[0].message.content or ""

    for question in QUESTIONS:
        with agent.task("answer", input=question) as task:
            answer = ask(question)
            task.log("answered with", len(answer), "characters")
            task.cost(0.001)
            task.set_output(answer)
    try:
        with agent.task("extract", input="Return the JSON object {\"a\": 1} and nothing else.") as task:
            raw = ask("Reply with exactly this JSON and nothing else: {\"a\": 1, \"b\": [2, 3], \"c\": {\"d\": 4}}",
                      max_tokens=4)  # the object needs ~20 tokens: the reply is cut
            task.log("reply", raw)
            task.set_output(json.loads(raw))
    except json.JSONDecodeError:
        pass  # the agent handles its own failure; the task is recorded failed
    agent.event("done", {"questions": len(QUESTIONS) + 1})
    agent.flush()
    print(json.dumps({"stats": agent.stats(), "instrumented": agent.instrumented}))


if __name__ == "__main__":
    main()
