"""langchain-mcp-adapters with a LangChain agent as a host under test, the way the adapters'
README quickstart shows it.

One stdio session (`stdio_client`, `ClientSession`, `initialize`), its tools loaded once by
`load_mcp_tools(session)`, `create_agent(model, tools)`, one `ainvoke` whose model loop makes
the tool calls. The model is langchain-anthropic's `ChatAnthropic` with `base_url` at the
scripted model server and a dummy key. Usage: python driver.py MODEL_URL MCP_CONFIG PROMPT
"""

import asyncio
import json
import sys

from langchain.agents import create_agent
from langchain_anthropic import ChatAnthropic
from langchain_mcp_adapters.tools import load_mcp_tools
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


async def main(model_url: str, mcp_config: str, prompt: str) -> int:
    with open(mcp_config, encoding="utf-8") as f:
        server = json.load(f)["mcpServers"]["listsync"]
    params = StdioServerParameters(command=server["command"], args=server["args"])
    model = ChatAnthropic(model="claude-sonnet-4-5", base_url=model_url, api_key="dummy")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await load_mcp_tools(session)
            agent = create_agent(model, tools)
            response = await agent.ainvoke({"messages": prompt})
    print(response["messages"][-1].content)
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(*sys.argv[1:4])))
