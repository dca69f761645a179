"""The README's OpenAI SDK example: talk to a toolgate agent through the Responses API,
approve the call it wants to make, answer its question, and print the final answer.

    toolgate serve --agents examples/serve/agents &
    python examples/serve/approve.py          # TOOLGATE_URL overrides http://localhost:8080/v1
"""
import os

from openai import OpenAI  # pip install openai; nothing toolgate-specific

client = OpenAI(
    base_url=os.environ.get("TOOLGATE_URL", "http://localhost:8080/v1"),
    api_key=os.environ.get("TOOLGATE_API_KEY", "unused-without-a-server-key"),
)
r = client.responses.create(model="agent:assistant", input="Work out 2+3*4 and save it")
while any(i.type in ("mcp_approval_request", "function_call") for i in r.output):
    answers = []
    for item in r.output:
        if item.type == "mcp_call":  # an AUTO call the server ran
            print("ran", item.name, item.arguments, "->", item.output)
        elif item.type == "mcp_approval_request":  # a CONFIRM call: a person decides
            print("approving", item.name, item.arguments)
            answers.append({"type": "mcp_approval_response", "approval_request_id": item.id, "approve": True})
        elif item.type == "function_call":  # a client tool: the client runs it
            print("answering", item.name, item.arguments)
            answers.append({"type": "function_call_output", "call_id": item.call_id, "output": "blue"})
    r = client.responses.create(model="agent:assistant", previous_response_id=r.id, input=answers)
print(r.status, r.output_text)
