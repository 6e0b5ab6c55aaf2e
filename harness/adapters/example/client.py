#!/usr/bin/env python3
"""A minimal listsync client adapter: an MCP client written from scratch (Python standard library
only, no SDK) that keeps the tools, prompts and resources lists of the server on its stdin/stdout,
driven by the listsync harness over the control protocol of docs/harness-protocol.md.
docs/writing-an-adapter.md walks through it.

LISTSYNC_VARIANT picks how a list_changed notification refreshes a list:

- `coalescing` (default, correct): one walk per kind at a time. A notification during a walk sets a
  dirty flag; the walk that ends with the flag set is thrown away (event `refresh_discarded`) and
  the kind is walked again. A published list is never older than the one it replaces, and a burst
  of notifications costs at most two walks.
- `last-response-wins` (the classic bug): every notification starts a walk of its own, and each walk
  publishes whatever it got when it ends. A walk that started first but is answered last replaces a
  newer list with an older one: the harness reports `no_stale_overwrite` violated.
"""

import json
import os
import socket
import sys
import threading

ERA = os.environ.get("LISTSYNC_ERA", "2025-11-25")
VARIANT = os.environ.get("LISTSYNC_VARIANT", "coalescing")
KINDS = {"tools": "tools", "prompts": "prompts", "resources": "resources"}  # kind -> result field
MAX_PAGES = 1000  # a server whose cursors never end cannot keep a walk going forever
CLIENT_INFO = {"name": "listsync-example-client", "version": "1.0.0"}


def log(*args):
    print("example client:", *args, file=sys.stderr, flush=True)


class Control:
    """The control socket: one JSON object per line each way."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(path)
        self.lock = threading.Lock()

    def send(self, obj):
        line = (json.dumps(obj) + "\n").encode()
        with self.lock:
            self.sock.sendall(line)

    def event(self, name, **fields):
        self.send({"type": "event", "event": name, **fields})

    def reply(self, cid, ok, **fields):
        self.send({"type": "reply", "id": cid, "ok": ok, **fields})

    def lines(self):
        for line in self.sock.makefile("rb"):
            if line.strip():
                yield line


class RpcError(Exception):
    def __init__(self, error):
        super().__init__(error.get("message", "error"))
        self.code = error.get("code")


class Mcp:
    """JSON-RPC over stdin/stdout: requests wait for their response; notifications go to a handler."""

    def __init__(self, on_notification):
        self.lock = threading.Lock()
        self.next_id = 0
        self.pending = {}
        self.on_notification = on_notification

    def write(self, msg):
        line = json.dumps(msg) + "\n"
        with self.lock:
            sys.stdout.write(line)
            sys.stdout.flush()

    def meta(self, params):
        # 2026-07-28: every request carries the protocol version, client info and capabilities.
        if ERA == "2026-07-28":
            meta = {
                "io.modelcontextprotocol/protocolVersion": ERA,
                "io.modelcontextprotocol/clientInfo": CLIENT_INFO,
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            params = {**params, "_meta": {**meta, **params.get("_meta", {})}}
        return params

    def start(self, method, params):
        """Sends a request; returns (id, slot), where slot[0] is set when slot[1] holds the answer."""
        slot = [threading.Event(), None]
        with self.lock:
            rid = self.next_id
            self.next_id += 1
            self.pending[rid] = slot
        self.write({"jsonrpc": "2.0", "id": rid, "method": method, "params": self.meta(params)})
        return rid, slot

    def request(self, method, params):
        _, slot = self.start(method, params)
        slot[0].wait()
        msg = slot[1]
        if "error" in msg:
            raise RpcError(msg["error"])
        return msg.get("result", {})

    def read_forever(self):
        for line in sys.stdin:
            try:
                msg = json.loads(line)
            except ValueError:
                log("not JSON on stdin:", line[:200])
                continue
            if "id" in msg and ("result" in msg or "error" in msg):
                with self.lock:
                    slot = self.pending.pop(msg["id"], None)
                if slot:
                    slot[1] = msg
                    slot[0].set()
            elif "id" in msg and "method" in msg:  # a request from the server
                if msg["method"] == "ping":
                    self.write({"jsonrpc": "2.0", "id": msg["id"], "result": {}})
                else:
                    error = {"code": -32601, "message": "method not found"}
                    self.write({"jsonrpc": "2.0", "id": msg["id"], "error": error})
            elif "method" in msg:
                self.on_notification(msg)
        log("stdin closed")
        os._exit(0)


class Client:
    def __init__(self, control):
        self.control = control
        self.mcp = Mcp(self.notified)
        self.kinds = []  # the kinds the server offers, listed at start and on each list_changed
        self.snapshots = {}  # kind -> items (absent before the first list)
        self.lock = threading.Condition()
        self.walking = {}  # kind -> a walk is running (coalescing)
        self.dirty = {}  # kind -> a notification came during the walk (coalescing)
        self.settled = {}  # kind -> walks ended (coalescing), for `refresh`
        self.unacked = []  # listen streams waiting for their acknowledgement (2026-07-28)

    # -- lists --------------------------------------------------------------------------------

    def walk(self, kind):
        """Lists every page of a kind; returns (items, pages)."""
        items, cursor, pages = [], None, 0
        while True:
            result = self.mcp.request(kind + "/list", {"cursor": cursor} if cursor else {})
            pages += 1
            for it in result.get(KINDS[kind], []):
                name = it.get("uri") if kind == "resources" else it.get("name")
                items.append({"name": name, "description": it.get("description", "")})
            cursor = result.get("nextCursor")
            if not cursor:
                return items, pages
            if pages >= MAX_PAGES:
                raise RpcError({"message": f"more than {MAX_PAGES} pages"})

    def publish(self, kind, items, source):
        self.snapshots[kind] = items
        self.control.event("published", kind=kind, items=items, source=source)

    def refresh_last_response_wins(self, kind, source):
        self.control.event("refresh_started", kind=kind)
        try:
            items, _ = self.walk(kind)
        except RpcError as e:
            self.control.event("refresh_failed", kind=kind, error=str(e))
            return
        with self.lock:
            self.publish(kind, items, source)  # whatever arrives last is what the application sees

    def refresh_coalescing(self, kind, source):
        with self.lock:
            if self.walking.get(kind):
                self.dirty[kind] = True  # the running walk will be thrown away and redone
                return
            self.walking[kind] = True
        while True:
            with self.lock:
                self.dirty[kind] = False
            self.control.event("refresh_started", kind=kind)
            try:
                items, _ = self.walk(kind)
            except RpcError as e:
                with self.lock:
                    self.control.event("refresh_failed", kind=kind, error=str(e))
                    self.walking[kind] = False
                    self.settled[kind] = self.settled.get(kind, 0) + 1
                    self.lock.notify_all()
                return
            with self.lock:
                if self.dirty[kind]:
                    self.control.event("refresh_discarded", kind=kind, reason="list_changed during the walk")
                    continue
                self.publish(kind, items, source)
                self.walking[kind] = False
                self.settled[kind] = self.settled.get(kind, 0) + 1
                self.lock.notify_all()
                return

    def refresh(self, kind, source):
        if VARIANT == "last-response-wins":
            self.refresh_last_response_wins(kind, source)
        else:
            self.refresh_coalescing(kind, source)

    def notified(self, msg):
        method = msg["method"]
        self.control.event("notification", method=method, params=msg.get("params", {}))
        if method == "notifications/subscriptions/acknowledged":
            with self.lock:
                if self.unacked:
                    self.unacked.pop(0).set()
            return
        kind = {
            "notifications/tools/list_changed": "tools",
            "notifications/prompts/list_changed": "prompts",
            "notifications/resources/list_changed": "resources",
        }.get(method)
        if kind in self.kinds:
            # Never wait on the stdin reader: the walk needs it to read its responses.
            threading.Thread(target=self.refresh, args=(kind, "list_changed"), daemon=True).start()

    # -- start-up -----------------------------------------------------------------------------

    def connect(self):
        if ERA == "2026-07-28":
            result = self.mcp.request("server/discover", {})
            version = ERA if ERA in result.get("supportedVersions", []) else None
        else:
            params = {"protocolVersion": ERA, "capabilities": {}, "clientInfo": CLIENT_INFO}
            result = self.mcp.request("initialize", params)
            version = result.get("protocolVersion")
            self.mcp.write({"jsonrpc": "2.0", "method": "notifications/initialized"})
        caps = result.get("capabilities", {})
        self.kinds = [k for k in KINDS if k in caps]
        self.control.event("negotiated", protocol_version=version)
        if ERA == "2026-07-28":
            # List only after the acknowledgement: a change committed before it is then in the list.
            flags = {k + "ListChanged": True for k in self.kinds}
            _, acked = self.listen_start(flags)
            acked.wait()
        self.control.event("ready", impl="example", role="client", sdk="listsync-example",
                           sdk_version="1.0.0", era_requested=ERA, variant=VARIANT)
        for kind in self.kinds:
            threading.Thread(target=self.refresh, args=(kind, "initial"), daemon=True).start()

    def listen_start(self, flags):
        """Opens a subscriptions/listen stream (no response while it is open); returns an event
        that the stream's first message, notifications/subscriptions/acknowledged, sets."""
        acked = threading.Event()
        with self.lock:
            self.unacked.append(acked)  # acknowledgements come in the order the streams opened
        rid, _ = self.mcp.start("subscriptions/listen", {"notifications": flags})
        return rid, acked

    # -- control commands ---------------------------------------------------------------------

    def command(self, cmd):
        name, cid = cmd.get("cmd"), cmd.get("id")
        try:
            if name == "snapshot":
                self.control.reply(cid, True, items=self.snapshots.get(cmd["kind"]))
            elif name == "refresh":
                kind = cmd["kind"]
                if VARIANT == "last-response-wins":
                    self.refresh(kind, "refresh")
                else:
                    with self.lock:
                        before = self.settled.get(kind, 0)
                    self.refresh(kind, "refresh")  # returns at once if a walk is running
                    with self.lock:
                        self.lock.wait_for(lambda: self.settled.get(kind, 0) > before)
                self.control.reply(cid, True, items=self.snapshots.get(kind))
            elif name == "call":
                args = cmd.get("arguments", {})
                try:
                    result = self.mcp.request("tools/call", {"name": cmd["tool"], "arguments": args})
                except RpcError as e:
                    self.control.reply(cid, False, code=e.code, error=str(e))
                    return
                text = "".join(c.get("text", "") for c in result.get("content", []))
                is_error = bool(result.get("isError"))
                self.control.event("call_done", tool=cmd["tool"], is_error=is_error)
                self.control.reply(cid, True, is_error=is_error, text=text)
            elif name == "listen":
                if ERA != "2026-07-28":
                    self.control.reply(cid, False, error="listen is a 2026-07-28 request")
                    return
                flags = {k + "ListChanged": True for k in cmd.get("kinds", [])}
                _, acked = self.listen_start(flags)
                acked.wait()
                self.control.reply(cid, True, honored=flags)
            elif name == "shutdown":
                self.control.reply(cid, True)
                os._exit(0)
            else:
                self.control.reply(cid, False, error=f"unknown command {name!r}")
        except (KeyError, TypeError) as e:
            self.control.reply(cid, False, error=f"bad command: missing or wrong field {e}")


def main():
    path = os.environ.get("LISTSYNC_CONTROL")
    if os.environ.get("LISTSYNC_ROLE") != "client" or not path:
        log("needs LISTSYNC_ROLE=client and LISTSYNC_CONTROL")
        return 2
    if VARIANT not in ("coalescing", "last-response-wins"):
        log("unknown variant", VARIANT)
        return 2
    client = Client(Control(path))
    threading.Thread(target=client.mcp.read_forever, daemon=True).start()
    threading.Thread(target=client.connect, daemon=True).start()
    for line in client.control.lines():
        try:
            cmd = json.loads(line)
        except ValueError:
            client.control.reply(None, False, error="not JSON")
            continue
        # Commands run concurrently: a `call` waiting for its answer blocks no other command.
        threading.Thread(target=client.command, args=(cmd,), daemon=True).start()
    return 0  # the control socket closed


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    os._exit(code)
