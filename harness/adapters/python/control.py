"""Control-channel plumbing for the Python adapter: Unix-socket JSON lines to the harness, command routing
with exactly one reply per command (ok:false on any error, never a crash), events, the catalog model used
to validate mutate batches (and as the registry of the low-level variant), and call gates."""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

KINDS = ("tools", "prompts", "resources", "resource_templates")


def log(*parts: Any) -> None:
    """Logs to stderr only: stdout is the MCP channel."""
    text = " ".join(p if isinstance(p, str) else json.dumps(p, default=str) for p in parts)
    print(f"[listsync-adapter {os.environ.get('LISTSYNC_ROLE', '?')}] {text}", file=sys.stderr, flush=True)


class Env:
    def __init__(self) -> None:
        e = os.environ
        self.control = e.get("LISTSYNC_CONTROL")
        self.role = e.get("LISTSYNC_ROLE", "server")
        self.era = e.get("LISTSYNC_ERA", "2025-11-25")
        try:
            self.page_size = int(e.get("LISTSYNC_PAGE_SIZE", "0") or "0")
        except ValueError:
            self.page_size = 0
        self.initial = json.loads(e["LISTSYNC_INITIAL"]) if e.get("LISTSYNC_INITIAL") else []
        if not isinstance(self.initial, list):
            raise ValueError("LISTSYNC_INITIAL must be a JSON array of ops")
        self.variant = e.get("LISTSYNC_VARIANT") or None
        d = e.get("LISTSYNC_DEBOUNCE_MS")
        self.debounce_ms = int(d) if d else None
        self.pages = e.get("LISTSYNC_PAGES", "all")


def check_op(op: Any) -> str | None:
    if not isinstance(op, dict):
        return "op must be an object"
    kind = op.get("op")
    if kind in ("add", "update", "remove"):
        if op.get("kind") not in KINDS:
            return f"unknown kind {op.get('kind')!r}"
        if not isinstance(op.get("name"), str) or not op["name"]:
            return "op.name must be a non-empty string"
        if "description" in op and not isinstance(op["description"], str):
            return "op.description must be a string"
        return None
    if kind == "set_content":
        if not isinstance(op.get("uri"), str) or not op["uri"]:
            return "op.uri must be a non-empty string"
        if not isinstance(op.get("text"), str):
            return "op.text must be a string"
        return None
    return f"unknown op {kind!r}"


class CatalogModel:
    """Insertion-ordered catalog; apply() raises ValueError on the first op that does not fit."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, str]] = {k: {} for k in KINDS}
        self.contents: dict[str, str] = {}

    def clone(self) -> CatalogModel:
        c = CatalogModel()
        c.items = {k: dict(v) for k, v in self.items.items()}
        c.contents = dict(self.contents)
        return c

    def apply(self, ops: list[Any]) -> None:
        for op in ops:
            err = check_op(op)
            if err:
                raise ValueError(err)
            if op["op"] == "set_content":
                self.contents[op["uri"]] = op["text"]
                continue
            m = self.items[op["kind"]]
            name = op["name"]
            if op["op"] == "add":
                if name in m:
                    raise ValueError(f"{op['kind']} {name!r} already exists")
                m[name] = op.get("description", "")
            elif op["op"] == "remove":
                if name not in m:
                    raise ValueError(f"{op['kind']} {name!r} does not exist")
                del m[name]
            else:
                if name not in m:
                    raise ValueError(f"{op['kind']} {name!r} does not exist")
                m[name] = op.get("description", "")

    def list(self, kind: str) -> list[dict[str, str]]:
        return [{"name": n, "description": d} for n, d in self.items[kind].items()]

    def content(self, uri: str) -> str:
        return self.contents.get(uri, "")


class CommandError(Exception):
    """A command failure with extra reply fields (e.g. a JSON-RPC error code)."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.fields = fields


Handler = Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]]


class Control:
    def __init__(self, path: str | None) -> None:
        if not path:
            raise ValueError("LISTSYNC_CONTROL is not set (path of the harness control socket)")
        self.path = path
        self.handlers: dict[str, Handler] = {}
        self._send, self._recv = anyio.create_memory_object_stream[bytes](math.inf)
        self.stream: anyio.abc.SocketStream | None = None
        self.shutdown_requested = anyio.Event()
        self.closed = anyio.Event()
        self.writer_done = anyio.Event()

    def on(self, name: str, handler: Handler) -> None:
        self.handlers[name] = handler

    def _write(self, obj: dict[str, Any]) -> None:
        try:
            self._send.send_nowait((json.dumps(obj, default=str) + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass

    def event(self, name: str, **fields: Any) -> None:
        self._write({"type": "event", "event": name, **fields})

    def reply(self, cid: Any, ok: bool, **fields: Any) -> None:
        self._write({"type": "reply", "id": cid, "ok": ok, **fields})

    async def connect(self) -> None:
        self.stream = await anyio.connect_unix(self.path)

    async def run(self, tg: anyio.abc.TaskGroup) -> None:
        """Runs the writer and reader; returns when the socket closes or shutdown was replied to."""
        assert self.stream is not None
        stream = self.stream

        async def writer() -> None:
            try:
                async for data in self._recv:
                    try:
                        await stream.send(data)
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        return
            finally:
                self.writer_done.set()

        tg.start_soon(writer)
        reader = BufferedByteReceiveStream(stream)
        try:
            while True:
                try:
                    line = await reader.receive_until(b"\n", 16 * 1024 * 1024)
                except (anyio.EndOfStream, anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    break
                if line.strip():
                    tg.start_soon(self._handle, line)
        finally:
            self.closed.set()

    async def _handle(self, line: bytes) -> None:
        try:
            msg = json.loads(line)
        except json.JSONDecodeError as e:
            self.reply(None, False, error=f"invalid JSON: {e}")
            return
        cid = msg.get("id") if isinstance(msg, dict) else None
        if not isinstance(msg, dict) or msg.get("type") != "cmd" or not isinstance(msg.get("cmd"), str):
            self.reply(cid, False, error='expected {"type":"cmd","id":N,"cmd":"..."}')
            return
        handler = self.handlers.get(msg["cmd"])
        if handler is None:
            self.reply(cid, False, error=f"unknown command {msg['cmd']!r}")
            return
        try:
            extra = await handler(msg) or {}
        except CommandError as e:
            self.reply(cid, False, error=str(e), **e.fields)
            return
        except Exception as e:  # noqa: BLE001 - every command gets exactly one reply, whatever failed
            self.reply(cid, False, error=f"{type(e).__name__}: {e}")
            return
        self.reply(cid, True, **extra)
        if msg["cmd"] == "shutdown":
            self.shutdown_requested.set()

    async def flush_and_close(self) -> None:
        self._send.close()  # the writer drains what is queued (last replies, events), then ends
        with anyio.move_on_after(2):  # bound only: a peer that stopped reading must not hang the exit
            await self.writer_done.wait()
        if self.stream is not None:
            try:
                await self.stream.aclose()
            except Exception:  # noqa: BLE001
                pass


class Gates:
    """gate_call arms a gate for the next invocation of a tool; the tool handler parks on it."""

    def __init__(self, control: Control) -> None:
        self.control = control
        self.next = 1
        self.armed: dict[str, list[int]] = {}
        self.events: dict[int, anyio.Event] = {}

    def arm(self, tool: Any) -> int:
        if not isinstance(tool, str) or not tool:
            raise ValueError("gate_call needs a tool name")
        gate = self.next
        self.next += 1
        self.armed.setdefault(tool, []).append(gate)
        self.events[gate] = anyio.Event()
        return gate

    def release(self, gate: Any) -> None:
        ev = self.events.get(gate)
        if ev is None:
            raise ValueError(f"unknown gate {gate}")
        ev.set()

    async def pass_(self, tool: str) -> None:
        q = self.armed.get(tool)
        if not q:
            return
        gate = q.pop(0)
        self.control.event("call_parked", tool=tool, gate=gate)
        await self.events[gate].wait()
        del self.events[gate]
