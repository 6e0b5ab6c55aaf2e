"""fast-agent as a host under test: one agent the way fast-agent's docs show it.

A `fastagent.config.yaml` names the harness's stdio server under `mcp.servers` and points the
Anthropic provider's `base_url` at the scripted model server (written here, in HOME, from the
harness's `mcpServers` file); an agent declared with `@fast.agent(servers=[...])` is run with
`async with fast.run() as app: await app.host.send(prompt)`, one message whose model loop makes
the tool calls. Usage: python driver.py MODEL_URL MCP_CONFIG PROMPT
"""

import asyncio
import json
import os
import sys

from fast_agent import FastAgent

model_url, mcp_config, prompt = sys.argv[1:4]
with open(mcp_config, encoding="utf-8") as f:
    server = json.load(f)["mcpServers"]["listsync"]
config = {
    "default_model": "anthropic.claude-sonnet-4-5",
    "anthropic": {"api_key": "dummy", "base_url": model_url},
    "mcp": {
        "servers": {
            "listsync": {
                "transport": "stdio",
                "command": server["command"],
                "args": server["args"],
            }
        }
    },
    "otel": {"enabled": False},
    "logger": {"progress_display": False, "show_chat": False, "show_tools": False},
}
# JSON is YAML: the configuration file fast-agent reads.
config_path = os.path.join(os.environ["HOME"], "fastagent.config.yaml")
with open(config_path, "w", encoding="utf-8") as f:
    json.dump(config, f)

fast = FastAgent("listsync-host", config_path=config_path, parse_cli_args=False, quiet=True)


@fast.agent(name="host", instruction="Use the tools as asked.", servers=["listsync"])
async def main() -> None:
    async with fast.run() as app:
        print(await app.host.send(prompt))


if __name__ == "__main__":
    asyncio.run(main())
