"""listsync client adapter for FastMCP (PyPI `fastmcp`), over its own stdin/stdout.

One variant, `messagehandler`: `fastmcp.Client(transport, message_handler=Handler(), mode=...)` (mode
`legacy` for 2025-11-25, the version string for 2026-07-28), the pattern FastMCP documents for change
notifications: a `MessageHandler` subclass whose `on_tool_list_changed` (etc.) re-fetches the list with the
client's `list_tools()` (which walks every page, refuses a repeated cursor, stops at 250 pages, and whose
response cache FastMCP evicts on each list_changed) and publishes the result.

FastMCP's client transports all start the server themselves; the adapter passes its own transport, which
opens the SDK's `ClientSession` over the adapter's stdin/stdout exactly as they do over a child's pipes.
FastMCP's client has no `subscriptions/listen` API: on 2026-07-28 the adapter opens no listen stream and
`listen` is refused.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator
from typing import Any

import anyio
from fastmcp import Client
from fastmcp.client.messages import MessageHandler
from fastmcp.client.transports.base import ClientTransport, TransportOptions
from mcp.shared.exceptions import MCPError

from client import _until_done, dump, stdio_transport, to_item
from control import KINDS, CommandError, Control, Env


class OwnStdio(ClientTransport):
    """The adapter's own stdin/stdout as the MCP link (FastMCP's stdio transports spawn a server)."""

    def __init__(self, eof: anyio.Event) -> None:
        self.eof = eof

    @contextlib.asynccontextmanager
    async def connect_session(self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any) -> AsyncGenerator[Any, None]:
        options = transport_options or TransportOptions()
        async with stdio_transport(self.eof) as (read, write):
            async with options.session_class(read_stream=read, write_stream=write, **session_kwargs) as session:
                yield session


async def run_client(control: Control, env: Env, sdk_version: str, tg: Any) -> None:
    variant = env.variant or "messagehandler"
    if variant != "messagehandler":
        raise ValueError(f"unknown LISTSYNC_VARIANT {variant!r} (messagehandler)")
    modern = env.era != "2025-11-25"
    snapshots: dict[str, list[dict[str, str]] | None] = {k: None for k in KINDS}
    eof = anyio.Event()
    holder: dict[str, Any] = {}

    def publish(kind: str, items: list[Any], source: str) -> None:
        snapshots[kind] = [to_item(kind, i) for i in items]
        control.event("published", kind=kind, items=snapshots[kind], source=source)

    async def list_all(kind: str) -> list[Any]:
        c = holder["client"]
        fn = {"tools": c.list_tools, "prompts": c.list_prompts, "resources": c.list_resources, "resource_templates": c.list_resource_templates}[kind]
        return list(await fn())

    async def relist(kind: str, source: str) -> None:
        control.event("refresh_started", kind=kind)
        try:
            items = await list_all(kind)
        except Exception as e:  # noqa: BLE001 - an SDK/server failure is behaviour to report
            control.event("refresh_failed", kind=kind, error=f"{type(e).__name__}: {e}")
            return
        publish(kind, items, source)

    class Handler(MessageHandler):
        async def on_notification(self, message: Any) -> None:
            control.event("notification", method=getattr(message, "method", None), params=dump(getattr(message, "params", None)))

        async def on_tool_list_changed(self, message: Any) -> None:
            await relist("tools", "on_tool_list_changed")

        async def on_prompt_list_changed(self, message: Any) -> None:
            await relist("prompts", "on_prompt_list_changed")

        async def on_resource_list_changed(self, message: Any) -> None:
            await relist("resources", "on_resource_list_changed")

    async def snapshot(cmd: dict[str, Any]) -> dict[str, Any]:
        if cmd.get("kind") not in KINDS:
            raise ValueError(f"unknown kind {cmd.get('kind')!r}")
        return {"items": snapshots[cmd["kind"]]}

    async def refresh(cmd: dict[str, Any]) -> dict[str, Any]:
        kind = cmd.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        control.event("refresh_started", kind=kind)
        publish(kind, await list_all(kind), "refresh")
        return {"items": snapshots[kind]}

    async def call(cmd: dict[str, Any]) -> dict[str, Any]:
        tool = cmd.get("tool")
        if not isinstance(tool, str):
            raise ValueError("call needs tool")
        try:
            res = await holder["client"].call_tool(tool, cmd.get("arguments") or {}, raise_on_error=False)
        except MCPError as e:
            control.event("call_done", tool=tool, is_error=True, code=e.code)
            raise CommandError(e.message, code=e.code) from e
        is_error = bool(res.is_error)
        text = "".join(c.text for c in res.content if getattr(c, "type", None) == "text")
        control.event("call_done", tool=tool, is_error=is_error)
        return {"is_error": is_error, "text": text}

    async def subscribe(cmd: dict[str, Any]) -> dict[str, Any]:
        uri = cmd.get("uri")
        if not isinstance(uri, str):
            raise ValueError("subscribe needs uri")
        try:
            await holder["client"].session.subscribe_resource(uri)
        except MCPError as e:
            raise CommandError(e.message, code=e.code) from e
        return {}

    async def listen_cmd(cmd: dict[str, Any]) -> dict[str, Any]:
        raise ValueError("FastMCP's client has no subscriptions/listen API")

    async def shutdown(cmd: dict[str, Any]) -> dict[str, Any]:
        return {}

    for name, handler in [("snapshot", snapshot), ("refresh", refresh), ("call", call), ("subscribe", subscribe), ("listen", listen_cmd), ("shutdown", shutdown)]:
        control.on(name, handler)

    client = Client(OwnStdio(eof), message_handler=Handler(), mode=env.era if modern else "legacy")
    async with client:
        holder["client"] = client
        control.event("negotiated", protocol_version=client.protocol_version)
        control.event(
            "ready", impl="fastmcp", role="client", sdk="fastmcp", sdk_version=sdk_version, era_requested=env.era, variant=variant,
            server_capabilities=dump(client.server_capabilities),
        )
        # Like an application starting up: list every kind once; failures are reported.
        for kind in KINDS:
            await relist(kind, "initial")
        await _until_done(control, eof)
