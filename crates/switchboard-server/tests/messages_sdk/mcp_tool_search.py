"""The official anthropic Python SDK with a deferred MCP toolset and the regex search tool.

Run by tests/it/tool_search_mcp.rs as `python3 mcp_tool_search.py BASE_URL` with the request's
`mcp_servers` and `tools` as JSON on stdin; sends the request through
client.beta.messages.create and through .stream and its accumulator, and prints one JSON
object (each answer, and the SDK class of each block) for the Rust test to judge.
"""

import json
import sys

try:
    from anthropic import Anthropic
except ImportError as error:
    print(f"cannot import the anthropic SDK: {error}", file=sys.stderr)
    sys.exit(3)

BETAS = ["mcp-client-2025-11-20", "advanced-tool-use-2025-11-20"]


def dump(message):
    return message.model_dump(mode="json", exclude_none=False)


def classes(message):
    # The stream's accumulator gives ParsedBetaTextBlock, a BetaTextBlock of its own.
    return [type(block).__name__.removeprefix("Parsed") for block in message.content]


def main():
    base = sys.argv[1]
    asked = json.load(sys.stdin)
    client = Anthropic(base_url=base, api_key="sk-ant-test", max_retries=0)
    request = dict(model="local", max_tokens=300, betas=BETAS,
                   messages=[{"role": "user", "content": "Echo something."}], **asked)
    whole = client.beta.messages.create(**request)
    with client.beta.messages.stream(**request) as stream:
        for _ in stream:
            pass
        streamed = stream.get_final_message()
    print(json.dumps({"whole": dump(whole), "streamed": dump(streamed), "classes": classes(whole),
                      "streamed_classes": classes(streamed)}))


main()
