"""The official openai Python SDK asking the gateway's Responses API for a hosted tool search
(`{"type": "tool_search"}` over tools marked `defer_loading`).

Run by tests/it/tool_search_responses.rs as `python3 tool_search_client.py BASE_URL CASE`
with the request's fields (a JSON object) on standard input; prints one JSON object for the
Rust test to assert on. This script only asks and reports: every judgement is made in the
Rust test.

Cases:
  both      responses.create and responses.stream (get_final_response) with the request:
            each output item as the SDK parsed it (its class beside its fields), the stream's
            event types
  continue  responses.create, then the call the answer ends with answered twice: once with
            previous_response_id (a stored response), once with the first answer's output
            items sent back in input (store: false)

Exit status 3 means the SDK is not installed (the Rust test then says to run scripts/test).
"""

import json
import sys

try:
    from openai import OpenAI
except ImportError as error:
    print(f"cannot import an SDK: {error}", file=sys.stderr)
    sys.exit(3)


def items(response):
    return [{"class": type(item).__name__, **item.model_dump(mode="json")} for item in response.output]


def both(client, request):
    whole = client.responses.create(**request)
    types = []
    with client.responses.stream(**request) as stream:
        for event in stream:
            types.append(event.type)
        final = stream.get_final_response()
    return {"whole": items(whole), "streamed": items(final), "whole_text": whole.output_text,
            "streamed_text": final.output_text, "event_types": types, "status": whole.status}


def follow(client, request):
    first = client.responses.create(**request)
    call = next(item for item in first.output if item.type == "function_call")
    answer = {"type": "function_call_output", "call_id": call.call_id, "output": "18 degrees"}
    stored = client.responses.create(model=request["model"], tools=request["tools"],
                                     previous_response_id=first.id, input=[answer])
    sent_back = [item.model_dump(mode="json", exclude_none=True) for item in first.output]
    replayed = client.responses.create(
        model=request["model"], tools=request["tools"], store=False,
        input=[{"role": "user", "content": request["input"]}, *sent_back, answer])
    return {"first": items(first), "stored": items(stored), "stored_text": stored.output_text,
            "replayed": items(replayed), "replayed_text": replayed.output_text}


def main():
    base, case = sys.argv[1], sys.argv[2]
    request = json.load(sys.stdin)
    client = OpenAI(base_url=f"{base}/v1", api_key="unused", max_retries=0)
    cases = {"both": both, "continue": follow}
    print(json.dumps(cases[case](client, request)))


if __name__ == "__main__":
    main()
