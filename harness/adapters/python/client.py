"""listsync client adapter for the Python MCP SDK (PyPI `mcp`), over its own stdin/stdout through the SDK's
stdio transport (`mcp.server.stdio.stdio_server`, which is direction-agnostic).

Variants:
- `session` (default): `ClientSession(read, write, message_handler=...)`; the message handler re-lists the
  kind named by each list_changed notification and publishes (the pattern the SDK documents for
  message_handler: it is where change notifications are delivered). 2025-11-25: `initialize()`;
  2026-07-28: `discover()`, then a `subscriptions/listen` stream for tools/prompts/resources (opened before
  the initial list), whose change frames the SDK also tees to message_handler.
- `client`: high-level `mcp.Client(transport, mode=...)` (mode 'legacy' for 2025-11-25, the version string
  for 2026-07-28). 2025-11-25: message_handler re-lists as above. 2026-07-28: `client.listen(...)` and, per
  its docstring, re-list on every event; message_handler only reports notifications.

Re-lists walk every page with the SDK's per-page call (the SDK has no walker); LISTSYNC_PAGES=first
fetches page one only, exactly like the SDK docs' `tools = await client.list_tools()` example.
No debounce option exists in this SDK: LISTSYNC_DEBOUNCE_MS is ignored (reported in `ready`).
"""

from __future__ import annotations

from contextlib import asynccontextmanager
from typing import Any

import anyio
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged, ToolsListChanged
from mcp.client.subscriptions import listen as session_listen
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from control import KINDS, CommandError, Control, Env

NOTIF_KIND = {
    "notifications/tools/list_changed": "tools",
    "notifications/prompts/list_changed": "prompts",
    "notifications/resources/list_changed": "resources",
}
EVENT_KIND = {ToolsListChanged: "tools", PromptsListChanged: "prompts", ResourcesListChanged: "resources"}
FIELD = {"tools": "tools", "prompts": "prompts", "resources": "resources", "resource_templates": "resource_templates"}


def to_item(kind: str, item: Any) -> dict[str, str]:
    if kind == "resources":
        return {"name": str(item.uri), "description": item.description or ""}
    if kind == "resource_templates":
        return {"name": item.uri_template, "description": item.description or ""}
    return {"name": item.name, "description": item.description or ""}


def dump(model: Any) -> Any:
    if model is None:
        return None
    try:
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    except Exception:  # noqa: BLE001
        return str(model)


@asynccontextmanager
async def stdio_transport(eof: anyio.Event):
    """The SDK's stdio streams, relayed unchanged so the adapter notices stdin EOF."""
    async with stdio_server() as (read, write):
        send, recv = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with send:
                async for item in read:
                    await send.send(item)
            eof.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            try:
                yield recv, write
            finally:
                tg.cancel_scope.cancel()


async def run_client(control: Control, env: Env, sdk_version: str, tg: Any) -> None:
    variant = env.variant or "session"
    if variant not in ("session", "client"):
        raise ValueError(f"unknown LISTSYNC_VARIANT {variant!r} (session, client)")
    modern = env.era != "2025-11-25"
    snapshots: dict[str, list[dict[str, str]] | None] = {k: None for k in KINDS}
    eof = anyio.Event()
    holder: dict[str, Any] = {}

    def publish(kind: str, items: list[Any], source: str) -> None:
        snapshots[kind] = [to_item(kind, i) for i in items]
        control.event("published", kind=kind, items=snapshots[kind], source=source)

    async def list_page(kind: str, cursor: str | None) -> Any:
        if variant == "client":
            c = holder["client"]
            fn = {"tools": c.list_tools, "prompts": c.list_prompts, "resources": c.list_resources, "resource_templates": c.list_resource_templates}[kind]
            return await fn(cursor=cursor)
        s = holder["session"]
        fn = {"tools": s.list_tools, "prompts": s.list_prompts, "resources": s.list_resources, "resource_templates": s.list_resource_templates}[kind]
        return await fn(params=types.PaginatedRequestParams(cursor=cursor)) if cursor else await fn()

    async def list_all(kind: str) -> tuple[list[Any], int]:
        items: list[Any] = []
        cursor: str | None = None
        pages = 0
        while True:
            res = await list_page(kind, cursor)
            pages += 1
            items.extend(getattr(res, FIELD[kind]))
            cursor = res.next_cursor
            if cursor is None or env.pages == "first":
                return items, pages

    async def relist(kind: str, source: str) -> None:
        control.event("refresh_started", kind=kind)
        try:
            items, pages = await list_all(kind)
        except Exception as e:  # noqa: BLE001 - an SDK/server failure is behaviour to report
            control.event("refresh_failed", kind=kind, error=f"{type(e).__name__}: {e}")
            return
        publish(kind, items, source)

    relist_in_handler = variant == "session" or not modern

    async def message_handler(message: Any) -> None:
        if isinstance(message, Exception):
            control.event("log", message=f"transport exception: {message!r}")
            return
        method = getattr(message, "method", None)
        control.event("notification", method=method, params=dump(getattr(message, "params", None)))
        kind = NOTIF_KIND.get(method or "")
        if kind and relist_in_handler:
            await relist(kind, "message_handler")

    async def consume_listen(kinds: list[str], uris: list[str], acked: anyio.Event, box: dict[str, Any]) -> None:
        flags = {f"{k}_list_changed": True for k in kinds}
        try:
            if variant == "client":
                cm = holder["client"].listen(resource_subscriptions=uris, **flags)
            else:
                cm = session_listen(holder["session"], resource_subscriptions=uris, **flags)
            async with cm as sub:
                box["honored"] = dump(sub.honored)
                acked.set()
                async for ev in sub:
                    kind = EVENT_KIND.get(type(ev))
                    if variant == "client" and kind:
                        await relist(kind, "listen")  # the docstring's pattern: refetch on each event
        except Exception as e:  # noqa: BLE001
            box["error"] = e
            control.event("log", message=f"listen stream ended: {type(e).__name__}: {e}")
        finally:
            acked.set()

    async def open_listen(kinds: list[str], uris: list[str]) -> dict[str, Any]:
        acked = anyio.Event()
        box: dict[str, Any] = {}
        tg.start_soon(consume_listen, kinds, uris, acked, box)
        await acked.wait()
        if "error" in box and "honored" not in box:
            e = box["error"]
            if isinstance(e, MCPError):
                raise CommandError(str(e), code=e.code)
            raise CommandError(f"{type(e).__name__}: {e}")
        return {"honored": box.get("honored")}

    async def snapshot(cmd: dict[str, Any]) -> dict[str, Any]:
        if cmd.get("kind") not in KINDS:
            raise ValueError(f"unknown kind {cmd.get('kind')!r}")
        return {"items": snapshots[cmd["kind"]]}

    async def refresh(cmd: dict[str, Any]) -> dict[str, Any]:
        kind = cmd.get("kind")
        if kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        control.event("refresh_started", kind=kind)
        items, pages = await list_all(kind)
        publish(kind, items, "refresh")
        return {"items": snapshots[kind], "pages": pages}

    async def call(cmd: dict[str, Any]) -> dict[str, Any]:
        tool = cmd.get("tool")
        if not isinstance(tool, str):
            raise ValueError("call needs tool")
        target = holder["client"] if variant == "client" else holder["session"]
        try:
            res = await target.call_tool(tool, cmd.get("arguments") or {})
        except MCPError as e:
            control.event("call_done", tool=tool, is_error=True, code=e.code)
            raise CommandError(e.message, code=e.code) from e
        is_error = bool(getattr(res, "is_error", False))
        text = "".join(c.text for c in getattr(res, "content", []) if getattr(c, "type", None) == "text")
        control.event("call_done", tool=tool, is_error=is_error)
        return {"is_error": is_error, "text": text}

    async def subscribe(cmd: dict[str, Any]) -> dict[str, Any]:
        uri = cmd.get("uri")
        if not isinstance(uri, str):
            raise ValueError("subscribe needs uri")
        target = holder["client"] if variant == "client" else holder["session"]
        try:
            await target.subscribe_resource(uri)
        except MCPError as e:
            raise CommandError(e.message, code=e.code) from e
        return {}

    async def listen_cmd(cmd: dict[str, Any]) -> dict[str, Any]:
        kinds = cmd.get("kinds") or []
        for k in kinds:
            if k not in ("tools", "prompts", "resources"):
                raise ValueError(f"unknown kind {k!r} for listen")
        return await open_listen(list(kinds), list(cmd.get("uris") or []))

    async def shutdown(cmd: dict[str, Any]) -> dict[str, Any]:
        return {}

    control.on("snapshot", snapshot)
    control.on("refresh", refresh)
    control.on("call", call)
    control.on("subscribe", subscribe)
    control.on("listen", listen_cmd)
    control.on("shutdown", shutdown)

    async def started(negotiated: str | None, caps: Any) -> None:
        control.event("negotiated", protocol_version=negotiated)
        control.event(
            "ready",
            impl="python",
            role="client",
            sdk="mcp",
            sdk_version=sdk_version,
            era_requested=env.era,
            variant=variant,
            debounce_ms=None,
            debounce_note="the Python SDK has no debounce option" if env.debounce_ms is not None else None,
            pages=env.pages,
            server_capabilities=dump(caps),
        )
        if modern:
            await open_listen(["tools", "prompts", "resources"], [])
        # Like the SDK (which does not check server capabilities), list every kind; failures are reported.
        for kind in KINDS:
            try:
                items, _ = await list_all(kind)
                publish(kind, items, "initial")
            except Exception as e:  # noqa: BLE001
                control.event("refresh_failed", kind=kind, error=f"{type(e).__name__}: {e}")

    if variant == "session":
        async with stdio_transport(eof) as (read, write):
            async with ClientSession(read, write, message_handler=message_handler) as session:
                holder["session"] = session
                if modern:
                    await session.discover()
                else:
                    await session.initialize()
                await started(session.protocol_version, session.server_capabilities)
                await _until_done(control, eof)
    else:
        from mcp import Client

        client = Client(stdio_transport(eof), mode=env.era if modern else "legacy", message_handler=message_handler)
        async with client:
            holder["client"] = client
            await started(client.protocol_version, client.server_capabilities)
            await _until_done(control, eof)


async def _until_done(control: Control, eof: anyio.Event) -> None:
    async with anyio.create_task_group() as tg:

        async def wait(ev: anyio.Event, why: str) -> None:
            await ev.wait()
            control.event("log", message=f"ending: {why}")
            tg.cancel_scope.cancel()

        tg.start_soon(wait, control.shutdown_requested, "shutdown command")
        tg.start_soon(wait, control.closed, "control socket closed")
        tg.start_soon(wait, eof, "stdin reached EOF")
