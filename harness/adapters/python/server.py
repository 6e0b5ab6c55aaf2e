"""listsync server adapter for the Python MCP SDK (PyPI `mcp`).

Variants:
- `mcpserver` (default): `mcp.server.mcpserver.MCPServer`, run the SDK's own way (`run_stdio_async`), mutated
  with add_tool/remove_tool/add_prompt/remove_prompt/add_resource, which send nothing by themselves. The
  `notify` command uses the SDK's explicit APIs: on a 2025 connection `ServerSession.send_*_list_changed()`
  on the session of the latest request (captured by a middleware), on a 2026-07-28 connection
  `SubscriptionBus.publish(...)` on the server's bus (what `Context.notify_*_changed()` does). `via` overrides.
- `lowlevel`: `mcp.server.lowlevel.Server` with on_* handlers over the adapter's catalog, offset-cursor
  pagination (LISTSYNC_PAGE_SIZE), `ListenHandler` for subscriptions/listen, listChanged advertised through
  NotificationOptions, and one list_changed per touched kind after each mutate batch (session send on a 2025
  connection, bus publish on a 2026-07-28 connection).
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import NotificationOptions, Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.mcpserver.resources.types import FunctionResource
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from control import KINDS, CatalogModel, Control, Env, Gates

MODERN = "2026-07-28"
BUS_EVENT = {
    "tools": ToolsListChanged,
    "prompts": PromptsListChanged,
    "resources": ResourcesListChanged,
    "resource_templates": ResourcesListChanged,
}
SESSION_SEND = {
    "tools": "send_tool_list_changed",
    "prompts": "send_prompt_list_changed",
    "resources": "send_resource_list_changed",
    "resource_templates": "send_resource_list_changed",
}


class SessionTracker:
    """Middleware that remembers the session and protocol version of the latest inbound request.

    A 2025 server can only notify through a `ServerSession`, and the SDK hands one out only inside a
    request; notifications without a related request id go to the connection's standalone channel."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.session: Any = None
        self.protocol_version: str | None = None

    async def __call__(self, ctx: Any, call_next: Any) -> Any:
        if ctx.request_id is not None:
            self.session = ctx.session
            if ctx.protocol_version != self.protocol_version:
                self.protocol_version = ctx.protocol_version
        return await call_next(ctx)

    @property
    def era(self) -> str | None:
        if self.protocol_version is None:
            return None
        return "modern" if self.protocol_version >= MODERN else "legacy"


async def explicit_notify(tracker: SessionTracker, bus: InMemorySubscriptionBus, cmd: dict[str, Any], control: Control) -> dict[str, Any]:
    kind = cmd.get("kind")
    uri = cmd.get("uri")
    if kind != "resource_updated" and kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    if kind == "resource_updated" and not isinstance(uri, str):
        raise ValueError("notify resource_updated needs uri")
    via = cmd.get("via") or ("bus" if tracker.era == "modern" else "session")
    if via == "session":
        if tracker.session is None:
            raise ValueError("no request has arrived yet: the SDK gives out a ServerSession only inside a request")
        if kind == "resource_updated":
            await tracker.session.send_resource_updated(uri)
        else:
            await getattr(tracker.session, SESSION_SEND[kind])()
    elif via == "bus":
        await bus.publish(ResourceUpdated(uri=uri) if kind == "resource_updated" else BUS_EVENT[kind]())
    else:
        raise ValueError(f"unknown via {via!r} (session, bus)")
    control.event("notified", method=f"{kind}", via=via, connection_era=tracker.era)
    return {"via": via}


def template_params(uri_template: str) -> list[str]:
    names: list[str] = []
    i = 0
    while (i := uri_template.find("{", i)) >= 0:
        j = uri_template.find("}", i)
        if j < 0:
            break
        for part in uri_template[i + 1 : j].lstrip("+#./;?&").split(","):
            names.append(part.rstrip("*").split(":")[0])
        i = j + 1
    return names


class HighLevel:
    """MCPServer: the SDK's managers are the registry."""

    def __init__(self, control: Control, env: Env, gates: Gates, model: CatalogModel) -> None:
        self.control, self.env, self.gates, self.model = control, env, gates, model
        self.bus = InMemorySubscriptionBus()
        self.tracker = SessionTracker(control)
        self.mcp = MCPServer(name="listsync-python-server", version="0.1.0", subscriptions=self.bus, middleware=[self.tracker])
        if env.page_size > 0:
            control.event("log", message=f"MCPServer ignores cursors: LISTSYNC_PAGE_SIZE={env.page_size} has no effect (use variant lowlevel)")

    def _tool_fn(self, name: str, description: str):
        async def tool() -> str:
            present = self.mcp._tool_manager.get_tool(name) is not None
            self.control.event("dispatched", tool=name, present=present)
            await self.gates.pass_(name)
            self.control.event("call_done", tool=name)
            return f"{name}:{description}"

        return tool

    def _add(self, op: dict[str, Any]) -> None:
        kind, name, d = op["kind"], op["name"], op.get("description", "")
        if kind == "tools":
            self.mcp.add_tool(self._tool_fn(name, d), name=name, description=d, structured_output=False)
        elif kind == "prompts":

            def prompt() -> str:
                return f"{name}:{d}"

            self.mcp.add_prompt(Prompt.from_function(prompt, name=name, description=d))
        elif kind == "resources":

            def read() -> str:
                return self.model.content(name)

            self.mcp.add_resource(FunctionResource.from_function(read, uri=name, name=name, description=d, mime_type="text/plain"))
        else:

            def read_template(**kwargs: str) -> str:
                return f"{name}:{kwargs}"

            params = [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, annotation=str) for p in template_params(name)]
            read_template.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
            self.mcp._resource_manager.add_template(read_template, uri_template=name, name=name, description=d)

    def apply_ops(self, ops: list[dict[str, Any]]) -> None:
        for i, op in enumerate(ops):
            try:
                self._apply(op)
            except Exception as e:
                raise ValueError(f"op {i} ({op.get('op')} {op.get('kind', '')} {op.get('name', op.get('uri'))}) failed in the SDK after {i} ops applied: {e}") from e

    def _apply(self, op: dict[str, Any]) -> None:
        if op["op"] == "set_content":
            return  # the model holds the text the resource function reads; MCPServer sends nothing
        kind, name = op["kind"], op["name"]
        if op["op"] == "add":
            self._add(op)
        elif op["op"] == "remove":
            if kind == "tools":
                self.mcp.remove_tool(name)
            elif kind == "prompts":
                self.mcp.remove_prompt(name)
            else:
                raise ValueError(f"MCPServer has no API to remove {kind}")
        else:  # update: the SDK has no update; remove + add is the only way
            if kind == "tools":
                self.mcp.remove_tool(name)
            elif kind == "prompts":
                self.mcp.remove_prompt(name)
            else:
                raise ValueError(f"MCPServer has no API to update {kind}")
            self._add(op)

    def check_supported(self, ops: list[dict[str, Any]]) -> None:
        for op in ops:
            if op["op"] in ("remove", "update") and op["kind"] in ("resources", "resource_templates"):
                raise ValueError(f"MCPServer has no API to {op['op']} {op['kind']} (ResourceManager has add only)")

    async def after_batch(self, ops: list[dict[str, Any]]) -> None:
        return None

    async def notify(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return await explicit_notify(self.tracker, self.bus, cmd, self.control)

    def catalog(self, kind: str) -> list[dict[str, str]]:
        if kind == "tools":
            return [{"name": t.name, "description": t.description or ""} for t in self.mcp._tool_manager.list_tools()]
        if kind == "prompts":
            return [{"name": p.name, "description": p.description or ""} for p in self.mcp._prompt_manager.list_prompts()]
        if kind == "resources":
            return [{"name": str(r.uri), "description": r.description or ""} for r in self.mcp._resource_manager.list_resources()]
        return [{"name": t.uri_template, "description": t.description or ""} for t in self.mcp._resource_manager.list_templates()]

    async def serve(self, started: anyio.Event) -> None:
        started.set()  # run_stdio_async enters stdio_server at once; the first read decides the era
        await self.mcp.run_stdio_async()


class LowLevel:
    """Low-level Server: the adapter's model is the registry."""

    def __init__(self, control: Control, env: Env, gates: Gates, model: CatalogModel) -> None:
        self.control, self.env, self.gates, self.model = control, env, gates, model
        self.bus = InMemorySubscriptionBus()
        self.tracker = SessionTracker(control)
        self.subscribed: set[str] = set()
        self.server = Server(
            "listsync-python-server",
            version="0.1.0",
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
            on_subscriptions_listen=ListenHandler(self.bus),
        )
        self.server.middleware.append(self.tracker)

    def _page(self, items: list[dict[str, str]], params: types.PaginatedRequestParams | None) -> tuple[list[dict[str, str]], str | None]:
        if self.env.page_size <= 0:
            return items, None
        cursor = params.cursor if params else None
        offset = 0
        if cursor is not None:
            if not cursor.isdigit():
                raise MCPError(code=types.INVALID_PARAMS, message=f"invalid cursor {cursor!r}")
            offset = int(cursor)
        end = offset + self.env.page_size
        return items[offset:end], (str(end) if end < len(items) else None)

    async def _list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        page, nxt = self._page(self.model.list("tools"), params)
        tools = [types.Tool(name=t["name"], description=t["description"], input_schema={"type": "object", "properties": {}}) for t in page]
        return types.ListToolsResult(tools=tools, next_cursor=nxt)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        name = params.name
        present = name in self.model.items["tools"]
        self.control.event("dispatched", tool=name, present=present)
        if not present:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {name}")
        description = self.model.items["tools"][name]
        await self.gates.pass_(name)
        self.control.event("call_done", tool=name)
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"{name}:{description}")])

    async def _list_prompts(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListPromptsResult:
        page, nxt = self._page(self.model.list("prompts"), params)
        return types.ListPromptsResult(prompts=[types.Prompt(name=p["name"], description=p["description"]) for p in page], next_cursor=nxt)

    async def _get_prompt(self, ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        name = params.name
        if name not in self.model.items["prompts"]:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown prompt: {name}")
        text = f"{name}:{self.model.items['prompts'][name]}"
        return types.GetPromptResult(messages=[types.PromptMessage(role="user", content=types.TextContent(type="text", text=text))])

    async def _list_resources(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourcesResult:
        page, nxt = self._page(self.model.list("resources"), params)
        res = [types.Resource(uri=r["name"], name=r["name"], description=r["description"], mime_type="text/plain") for r in page]
        return types.ListResourcesResult(resources=res, next_cursor=nxt)

    async def _list_templates(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListResourceTemplatesResult:
        page, nxt = self._page(self.model.list("resource_templates"), params)
        res = [types.ResourceTemplate(uri_template=r["name"], name=r["name"], description=r["description"]) for r in page]
        return types.ListResourceTemplatesResult(resource_templates=res, next_cursor=nxt)

    async def _read_resource(self, ctx: Any, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in self.model.items["resources"]:
            code = types.INVALID_PARAMS if (ctx.protocol_version or "") >= MODERN else -32002
            raise MCPError(code=code, message=f"Resource not found: {uri}")
        return types.ReadResourceResult(contents=[types.TextResourceContents(uri=uri, mime_type="text/plain", text=self.model.content(uri))])

    async def _subscribe(self, ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.add(str(params.uri))
        return types.EmptyResult()

    async def _unsubscribe(self, ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        self.subscribed.discard(str(params.uri))
        return types.EmptyResult()

    def check_supported(self, ops: list[dict[str, Any]]) -> None:
        return None

    def apply_ops(self, ops: list[dict[str, Any]]) -> None:
        return None  # the model (applied by the caller) is the registry

    async def after_batch(self, ops: list[dict[str, Any]]) -> None:
        kinds: list[str] = []
        for op in ops:
            if op["op"] != "set_content":
                k = "resources" if op["kind"] == "resource_templates" else op["kind"]
                if k not in kinds:
                    kinds.append(k)
        era = self.tracker.era
        if era is None:
            self.control.event("log", message="no request seen yet: no connection to notify")
            return
        for k in kinds:
            await explicit_notify(self.tracker, self.bus, {"kind": k}, self.control)
        for op in ops:
            if op["op"] == "set_content" and (era == "modern" or op["uri"] in self.subscribed):
                await explicit_notify(self.tracker, self.bus, {"kind": "resource_updated", "uri": op["uri"]}, self.control)

    async def notify(self, cmd: dict[str, Any]) -> dict[str, Any]:
        return await explicit_notify(self.tracker, self.bus, cmd, self.control)

    def catalog(self, kind: str) -> list[dict[str, str]]:
        return self.model.list(kind)

    async def serve(self, started: anyio.Event) -> None:
        opts = self.server.create_initialization_options(
            NotificationOptions(prompts_changed=True, resources_changed=True, tools_changed=True)
        )
        async with stdio_server() as (read, write):
            started.set()
            await self.server.run(read, write, opts)


async def run_server(control: Control, env: Env, sdk_version: str, tg: Any) -> None:
    variant = env.variant or "mcpserver"
    gates = Gates(control)
    model = CatalogModel()
    if variant == "mcpserver":
        impl: HighLevel | LowLevel = HighLevel(control, env, gates, model)
    elif variant == "lowlevel":
        impl = LowLevel(control, env, gates, model)
    else:
        raise ValueError(f"unknown LISTSYNC_VARIANT {variant!r} (mcpserver, lowlevel)")

    model.clone().apply(env.initial)
    impl.check_supported(env.initial)
    impl.apply_ops(env.initial)
    model.apply(env.initial)

    lock = anyio.Lock()  # one batch at a time, as one unit

    async def mutate(cmd: dict[str, Any]) -> dict[str, Any]:
        ops = cmd.get("ops")
        if not isinstance(ops, list):
            raise ValueError("mutate needs ops: [...]")
        async with lock:
            model.clone().apply(ops)
            impl.check_supported(ops)
            try:
                impl.apply_ops(ops)
            except Exception:
                # Part of the batch is in the SDK's registry now: keep the model in step with the SDK.
                for kind in KINDS:
                    model.items[kind] = {i["name"]: i["description"] for i in impl.catalog(kind)}
                raise
            model.apply(ops)
            await impl.after_batch(ops)
        return {}

    async def catalog(cmd: dict[str, Any]) -> dict[str, Any]:
        if cmd.get("kind") not in KINDS:
            raise ValueError(f"unknown kind {cmd.get('kind')!r}")
        return {"items": impl.catalog(cmd["kind"])}

    async def gate_call(cmd: dict[str, Any]) -> dict[str, Any]:
        return {"gate": gates.arm(cmd.get("tool"))}

    async def release(cmd: dict[str, Any]) -> dict[str, Any]:
        gates.release(cmd.get("gate"))
        return {}

    async def shutdown(cmd: dict[str, Any]) -> dict[str, Any]:
        return {}

    control.on("mutate", mutate)
    control.on("notify", impl.notify)
    control.on("catalog", catalog)
    control.on("gate_call", gate_call)
    control.on("release", release)
    control.on("shutdown", shutdown)

    started = anyio.Event()
    serve_done = anyio.Event()

    async def serve() -> None:
        try:
            await impl.serve(started)
        finally:
            serve_done.set()

    tg.start_soon(serve)
    await started.wait()
    control.event(
        "ready",
        impl="python",
        role="server",
        sdk="mcp",
        sdk_version=sdk_version,
        era_requested=env.era,
        variant=variant,
        page_size=env.page_size,
    )
    await serve_done.wait()
    control.event("log", message="MCP stdio ended (stdin EOF)")

