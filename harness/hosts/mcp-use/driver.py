"""mcp-use (Python) as a host under test, the way its README shows an agent.

`MCPClient.from_dict` on the harness's `mcpServers` configuration, an `MCPAgent` with a
LangChain chat model and the client (`max_steps=20`: the README's examples raise the default
of 5), one `agent.run(prompt)`, then `client.close_all_sessions()`. The model is
langchain-anthropic's `ChatAnthropic` with `base_url` at the scripted model server and a dummy
key. Usage: python driver.py MODEL_URL MCP_CONFIG PROMPT
"""

import asyncio
import json
import sys

from langchain_anthropic import ChatAnthropic
from mcp_use import MCPAgent, MCPClient


async def main(model_url: str, mcp_config: str, prompt: str) -> int:
    with open(mcp_config, encoding="utf-8") as f:
        config = json.load(f)
    client = MCPClient.from_dict(config)
    llm = ChatAnthropic(model="claude-sonnet-4-5", base_url=model_url, api_key="dummy")
    agent = MCPAgent(llm=llm, client=client, max_steps=20)
    try:
        print(await agent.run(prompt))
    finally:
        await client.close_all_sessions()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
