"""listsync server adapter for FastMCP (PyPI `fastmcp`, a framework on top of the official Python SDK).

One variant, `fastmcp`: a `FastMCP` server run the framework's own way (`run_stdio_async`), mutated with
`add_tool`, `add_prompt`, `add_resource`, `add_template` and the local provider's `remove_tool`,
`remove_prompt`, `remove_resource`, `remove_template` (an update is remove + add). None of these sends a
list_changed notification: FastMCP sends one only from inside a request (`Context.send_notification`,
`Context.enable_components` / `disable_components`, which change one session's visibility).

The `notify` command uses the one way FastMCP leaves to notify outside a request: the `ServerSession` of the
latest request, kept by a FastMCP middleware from the request's `Context`. On a 2026-07-28 connection
FastMCP serves no `subscriptions/listen` stream, so there is nothing to notify on: `notify` is `ok:false`.
"""

from __future__ import annotations

import inspect
from typing import Any

import anyio
import mcp_types as types
from fastmcp import FastMCP
from fastmcp.prompts import Prompt
from fastmcp.resources import ResourceTemplate
from fastmcp.resources.function_resource import FunctionResource
from fastmcp.server.middleware import Middleware
from fastmcp.tools import Tool

from control import KINDS, CatalogModel, Control, Env, Gates
from server import template_params  # the Python adapter's (provision.sh copies it beside this file)

MODERN = "2026-07-28"
NOTIFICATION = {
    "tools": types.ToolListChangedNotification,
    "prompts": types.PromptListChangedNotification,
    "resources": types.ResourceListChangedNotification,
    "resource_templates": types.ResourceListChangedNotification,
}


class SessionTracker(Middleware):
    """Keeps the session and protocol version of the latest request (FastMCP hands a session out only
    inside a request)."""

    def __init__(self) -> None:
        self.session: Any = None
        self.protocol_version: str | None = None

    async def on_request(self, context: Any, call_next: Any) -> Any:
        ctx = context.fastmcp_context
        if ctx is not None:
            try:
                self.session = ctx.session
                self.protocol_version = getattr(ctx.request_context, "protocol_version", None) or self.protocol_version
            except Exception:  # noqa: BLE001 - no request context: keep what we had
                pass
        return await call_next(context)


class Server:
    def __init__(self, control: Control, env: Env, gates: Gates, model: CatalogModel) -> None:
        self.control, self.env, self.gates, self.model = control, env, gates, model
        self.tracker = SessionTracker()
        self.mcp = FastMCP(name="listsync-fastmcp-server", version="0.1.0", middleware=[self.tracker])
        self.local = self.mcp.local_provider
        if env.page_size > 0:
            control.event("log", message=f"FastMCP lists everything in one page: LISTSYNC_PAGE_SIZE={env.page_size} has no effect")

    def _tool_fn(self, name: str, description: str):
        async def tool() -> str:
            present = any(t.name == name for t in await self.mcp.list_tools(run_middleware=False))
            self.control.event("dispatched", tool=name, present=present)
            await self.gates.pass_(name)
            self.control.event("call_done", tool=name)
            return f"{name}:{description}"

        return tool

    def _add(self, op: dict[str, Any]) -> None:
        kind, name, d = op["kind"], op["name"], op.get("description", "")
        if kind == "tools":
            self.mcp.add_tool(Tool.from_function(self._tool_fn(name, d), name=name, description=d, output_schema=None))
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
            self.mcp.add_template(ResourceTemplate.from_function(read_template, uri_template=name, name=name, description=d))

    def _remove(self, kind: str, name: str) -> None:
        {
            "tools": self.local.remove_tool,
            "prompts": self.local.remove_prompt,
            "resources": self.local.remove_resource,
            "resource_templates": self.local.remove_template,
        }[kind](name)

    def apply_ops(self, ops: list[dict[str, Any]]) -> None:
        for i, op in enumerate(ops):
            try:
                if op["op"] == "set_content":
                    continue  # the model holds the text the resource function reads; FastMCP sends nothing
                if op["op"] in ("remove", "update"):
                    self._remove(op["kind"], op["name"])
                if op["op"] in ("add", "update"):
                    self._add(op)
            except Exception as e:
                raise ValueError(f"op {i} ({op.get('op')} {op.get('kind', '')} {op.get('name', op.get('uri'))}) failed in FastMCP after {i} ops applied: {e}") from e

    async def notify(self, cmd: dict[str, Any]) -> dict[str, Any]:
        kind = cmd.get("kind")
        if kind != "resource_updated" and kind not in KINDS:
            raise ValueError(f"unknown kind {kind!r}")
        if (self.tracker.protocol_version or "") >= MODERN:
            raise ValueError("FastMCP serves no subscriptions/listen: a 2026-07-28 client cannot be notified outside a request")
        if self.tracker.session is None:
            raise ValueError("no request has arrived yet: FastMCP gives out a session only inside a request")
        if kind == "resource_updated":
            if not isinstance(cmd.get("uri"), str):
                raise ValueError("notify resource_updated needs uri")
            await self.tracker.session.send_resource_updated(cmd["uri"])
        else:
            await self.tracker.session.send_notification(NOTIFICATION[kind]())
        self.control.event("notified", method=kind, via="session")
        return {"via": "session"}

    async def catalog(self, kind: str) -> list[dict[str, str]]:
        if kind == "tools":
            return [{"name": t.name, "description": t.description or ""} for t in await self.mcp.list_tools(run_middleware=False)]
        if kind == "prompts":
            return [{"name": p.name, "description": p.description or ""} for p in await self.mcp.list_prompts(run_middleware=False)]
        if kind == "resources":
            return [{"name": str(r.uri), "description": r.description or ""} for r in await self.mcp.list_resources(run_middleware=False)]
        return [{"name": t.uri_template, "description": t.description or ""} for t in await self.mcp.list_resource_templates(run_middleware=False)]

    async def serve(self, started: anyio.Event) -> None:
        started.set()  # run_stdio_async enters the SDK's stdio_server at once; the first read decides the era
        await self.mcp.run_stdio_async(show_banner=False, log_level="WARNING")


async def run_server(control: Control, env: Env, sdk_version: str, tg: Any) -> None:
    variant = env.variant or "fastmcp"
    if variant != "fastmcp":
        raise ValueError(f"unknown LISTSYNC_VARIANT {variant!r} (fastmcp)")
    gates = Gates(control)
    model = CatalogModel()
    impl = Server(control, env, gates, model)
    model.clone().apply(env.initial)
    impl.apply_ops(env.initial)
    model.apply(env.initial)
    lock = anyio.Lock()  # one batch at a time, as one unit

    async def mutate(cmd: dict[str, Any]) -> dict[str, Any]:
        ops = cmd.get("ops")
        if not isinstance(ops, list):
            raise ValueError("mutate needs ops: [...]")
        async with lock:
            model.clone().apply(ops)  # a malformed or inconsistent batch is refused whole, before FastMCP sees it
            impl.apply_ops(ops)
            model.apply(ops)
        return {}

    async def catalog(cmd: dict[str, Any]) -> dict[str, Any]:
        if cmd.get("kind") not in KINDS:
            raise ValueError(f"unknown kind {cmd.get('kind')!r}")
        return {"items": await impl.catalog(cmd["kind"])}

    async def gate_call(cmd: dict[str, Any]) -> dict[str, Any]:
        return {"gate": gates.arm(cmd.get("tool"))}

    async def release(cmd: dict[str, Any]) -> dict[str, Any]:
        gates.release(cmd.get("gate"))
        return {}

    async def shutdown(cmd: dict[str, Any]) -> dict[str, Any]:
        return {}

    for name, handler in [("mutate", mutate), ("notify", impl.notify), ("catalog", catalog), ("gate_call", gate_call), ("release", release), ("shutdown", shutdown)]:
        control.on(name, handler)

    started = anyio.Event()
    serve_done = anyio.Event()

    async def serve() -> None:
        try:
            await impl.serve(started)
        finally:
            serve_done.set()

    tg.start_soon(serve)
    await started.wait()
    control.event("ready", impl="fastmcp", role="server", sdk="fastmcp", sdk_version=sdk_version, era_requested=env.era, variant=variant, page_size=env.page_size)
    await serve_done.wait()
    control.event("log", message="MCP stdio ended (stdin EOF)")
