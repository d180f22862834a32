"""Lists and calls Switchboard characters' tools with the official MCP Python SDK, as any
client of the gateway would, and prints what it saw as JSON.

    client.py http MODE URL          MODE: legacy (initialize, a session), auto or 2026-07-28
    client.py stdio MODE SWITCHBOARD CHARACTERS_DIR

Exits 3 when the SDK is not installed (tests/requirements.txt pins it).
"""

import asyncio
import json
import sys
import time

try:
    from mcp import Client, StdioServerParameters
except ImportError as error:
    print(f"the mcp SDK is missing: {error}", file=sys.stderr)
    sys.exit(3)

# Each call: the served name, its arguments.
CALLS = {
    "ok": ("narrator_log_story_event", {"event": "the SDK called"}),
    "bad_argument": ("narrator_log_story_event", {"event": 7}),
    "throws": ("toolbox_fail", {"how": "custom_error"}),
    "past_deadline": ("toolbox_spin", {}),
}


async def main() -> None:
    transport, mode = sys.argv[1], sys.argv[2]
    if transport == "http":
        server = sys.argv[3]
    else:
        server = StdioServerParameters(command=sys.argv[3], args=["mcp", "--characters", sys.argv[4]])
    seen = {}
    # No client-side caching: a tool list must be the server's, every time.
    async with Client(server, mode=mode, cache=None, read_timeout_seconds=30) as client:
        seen["protocol_version"] = client.protocol_version
        listed = await client.list_tools()
        seen["tools"] = [tool.name for tool in listed.tools]
        seen["schemas"] = {tool.name: tool.input_schema for tool in listed.tools}
        seen["calls"] = {}
        for case, (name, arguments) in CALLS.items():
            if name not in seen["tools"]:
                continue
            started = time.monotonic()
            result = await client.call_tool(name, arguments)
            seen["calls"][case] = {
                "text": result.content[0].text,
                "is_error": result.is_error,
                "seconds": time.monotonic() - started,
            }
    print(json.dumps(seen))


asyncio.run(main())
