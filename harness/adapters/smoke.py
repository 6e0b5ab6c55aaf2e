#!/usr/bin/env python3
"""End-to-end smoke test of the third-party SDK adapters, without the Rust harness (stdlib only).

For each implementation and scenario it provisions the adapter, listens on two control sockets, starts
a server adapter and a client adapter, forwards MCP lines client stdout -> server stdin and server
stdout -> client stdin (logging every JSON-RPC line), waits for `ready`, checks the initial `published`,
mutates the server (add a tool, later remove one), records what the SDK does (notifications, re-lists,
pages, published snapshots), calls tools, and shuts both down.

    python3 harness/adapters/smoke.py [IMPL...]      IMPL in ts-v1, ts-v2, python, go-sdk, mcp-go, java (default: all)
    options: --scenario NAME (repeatable), --observe SECONDS (default 4), -v (echo every line),
             --keep-logs (keep the per-scenario log directory of passing runs too; failing runs always keep
             theirs: smoke.log has every JSON-RPC and control line, plus each adapter's stderr and report.json)

Exit status is non-zero only on adapter malfunction (crash, bad control reply, missing ready or initial
publish, timeout on a control reply). What the SDK does or does not do (no notification, no re-list,
stale or torn lists) is recorded in the report, never a failure.

Waiting for something that may legitimately never happen (a notification an SDK does not send) needs a
bound: after a mutation the test watches for --observe seconds, or until the expected publish arrives.
That window only limits observation; no ordering in the test depends on time.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ADAPTERS = Path(__file__).resolve().parent
READY_TIMEOUT = 120.0  # Node / Python start-up plus SDK import; generous: the 2-core machine is shared with cargo builds
REPLY_TIMEOUT = 120.0


class Malfunction(Exception):
    """The adapter broke its contract (not an SDK behaviour)."""


@dataclass
class Scenario:
    name: str
    impl: str
    era: str
    server_variant: str
    client_variant: str | None
    page_size: int = 0
    initial_tools: tuple[str, ...] = ("a",)
    debounce_ms: int | None = None
    client_impl: str | None = None  # cross-SDK pairs: client from another impl
    listen: bool = False  # client sends an explicit `listen` command (2026-07-28)


SCENARIOS: list[Scenario] = [
    Scenario("ts-v1/mcpserver", "ts-v1", "2025-11-25", "mcpserver", None),
    Scenario("ts-v1/mcpserver-coalesced", "ts-v1", "2025-11-25", "mcpserver-coalesced", None),
    Scenario("ts-v1/lowlevel-paged", "ts-v1", "2025-11-25", "lowlevel", None, page_size=2, initial_tools=("a", "c", "d")),
    Scenario("ts-v1/lowlevel-paged-debounce0", "ts-v1", "2025-11-25", "lowlevel", None, page_size=2, initial_tools=("a", "c", "d"), debounce_ms=0),
    Scenario("ts-v2/mcpserver-2025", "ts-v2", "2025-11-25", "mcpserver", None),
    Scenario("ts-v2/mcpserver-2026", "ts-v2", "2026-07-28", "mcpserver", None),
    Scenario("ts-v2/lowlevel-paged-2025", "ts-v2", "2025-11-25", "lowlevel", None, page_size=2, initial_tools=("a", "c", "d")),
    Scenario("ts-v2/lowlevel-paged-2026", "ts-v2", "2026-07-28", "lowlevel", None, page_size=2, initial_tools=("a", "c", "d")),
    Scenario("ts-v2/lowlevel-paged-2026-debounce0", "ts-v2", "2026-07-28", "lowlevel", None, page_size=2, initial_tools=("a", "c", "d"), debounce_ms=0),
    Scenario("python/mcpserver+session-2025", "python", "2025-11-25", "mcpserver", "session"),
    Scenario("python/lowlevel-paged+session-2025", "python", "2025-11-25", "lowlevel", "session", page_size=2, initial_tools=("a", "c", "d")),
    Scenario("python/mcpserver+client-2026", "python", "2026-07-28", "mcpserver", "client", listen=True),
    Scenario("python/lowlevel-paged+client-2026", "python", "2026-07-28", "lowlevel", "client", page_size=2, initial_tools=("a", "c", "d")),
    Scenario("python/mcpserver+session-2026", "python", "2026-07-28", "mcpserver", "session"),
    Scenario("python/lowlevel-paged+session-2026", "python", "2026-07-28", "lowlevel", "session", page_size=2, initial_tools=("a", "c", "d")),
    Scenario("python/mcpserver+client-2025", "python", "2025-11-25", "mcpserver", "client"),
    # Cross-SDK pairs (run when both impls are selected).
    Scenario("cross/python-mcpserver+ts-v1-client-2025", "python", "2025-11-25", "mcpserver", None, client_impl="ts-v1"),
    Scenario("cross/ts-v2-mcpserver+python-session-2026", "ts-v2", "2026-07-28", "mcpserver", "session", client_impl="python"),
    Scenario("cross/python-lowlevel+ts-v2-client-2026", "python", "2026-07-28", "lowlevel", None, page_size=2, initial_tools=("a", "c", "d"), client_impl="ts-v2"),
    Scenario("cross/ts-v1-lowlevel+python-client-2025", "ts-v1", "2025-11-25", "lowlevel", "client", page_size=2, initial_tools=("a", "c", "d"), client_impl="python"),
    # Go SDK (github.com/modelcontextprotocol/go-sdk): one server variant, two client reactions.
    Scenario("go-sdk/addtool+handler-2025", "go-sdk", "2025-11-25", "addtool", "handler"),
    Scenario("go-sdk/addtool-paged+channel-2025", "go-sdk", "2025-11-25", "addtool", "channel", page_size=2, initial_tools=("a", "c", "d")),
    Scenario("go-sdk/addtool+handler-2026", "go-sdk", "2026-07-28", "addtool", "handler"),
    Scenario("go-sdk/addtool-paged+channel-2026", "go-sdk", "2026-07-28", "addtool", "channel", page_size=2, initial_tools=("a", "c", "d")),
    # mcp-go (github.com/mark3labs/mcp-go).
    Scenario("mcp-go/addtool+onnotification-2025", "mcp-go", "2025-11-25", "addtool", "onnotification"),
    Scenario("mcp-go/settools-paged+onnotification-2025", "mcp-go", "2025-11-25", "settools", "onnotification", page_size=2, initial_tools=("a", "c", "d")),
    Scenario("mcp-go/addtool+onnotification-2026", "mcp-go", "2026-07-28", "addtool", "onnotification", listen=True),
    # Java SDK (io.modelcontextprotocol.sdk:mcp): 2025-11-25 only.
    Scenario("java/sync+sync-2025", "java", "2025-11-25", "sync", "sync"),
    Scenario("java/sync+async-2025", "java", "2025-11-25", "sync", "async"),
    # Cross-SDK pairs with the new SDKs.
    Scenario("cross/java-sync+go-sdk-handler-2025", "java", "2025-11-25", "sync", "handler", client_impl="go-sdk"),
    Scenario("cross/mcp-go-addtool+java-sync-2025", "mcp-go", "2025-11-25", "addtool", "sync", client_impl="java"),
    Scenario("cross/go-sdk-addtool+mcp-go-2026", "go-sdk", "2026-07-28", "addtool", "onnotification", client_impl="mcp-go"),
    Scenario("cross/mcp-go-addtool+go-sdk-handler-2026", "mcp-go", "2026-07-28", "addtool", "handler", client_impl="go-sdk"),
]

IMPLS = ("ts-v1", "ts-v2", "python", "go-sdk", "mcp-go", "java")


def provision(impl: str) -> dict:
    proc = subprocess.run([str(ADAPTERS / "provision.sh"), impl], stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise Malfunction(f"provision.sh {impl} failed with status {proc.returncode}")
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError) as e:
        raise Malfunction(f"provision.sh {impl} printed no launch JSON: {e}") from e


class ControlPeer:
    """The harness side of one adapter's control socket."""

    def __init__(self, label: str, listener: socket.socket, log):
        self.label = label
        self.listener = listener
        self.log = log
        self.conn: socket.socket | None = None
        self.events: queue.Queue = queue.Queue()
        self.all_events: list[dict] = []
        self.replies: dict[int, dict] = {}
        self.reply_cv = threading.Condition()
        self.next_id = 1
        self.closed = threading.Event()
        self.protocol_errors: list[str] = []

    def accept(self, timeout: float) -> None:
        self.listener.settimeout(timeout)
        try:
            self.conn, _ = self.listener.accept()
        except socket.timeout as e:
            raise Malfunction(f"{self.label}: adapter never connected to its control socket") from e
        self.conn.settimeout(None)
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        assert self.conn is not None
        while True:
            try:
                chunk = self.conn.recv(65536)
            except OSError:
                break
            if not chunk:
                break
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                if not line.strip():
                    continue
                try:
                    msg = json.loads(line)
                except json.JSONDecodeError:
                    self.protocol_errors.append(f"non-JSON control line: {line[:200]!r}")
                    continue
                self.log(f"ctl {self.label} <- {json.dumps(msg)}")
                if msg.get("type") == "reply":
                    with self.reply_cv:
                        self.replies[msg.get("id")] = msg
                        self.reply_cv.notify_all()
                elif msg.get("type") == "event":
                    self.all_events.append(msg)
                    self.events.put(msg)
                else:
                    self.protocol_errors.append(f"control line of unknown type: {msg}")
        self.closed.set()
        with self.reply_cv:
            self.reply_cv.notify_all()

    def send(self, cmd: str, **fields) -> int:
        cid = self.next_id
        self.next_id += 1
        msg = {"type": "cmd", "id": cid, "cmd": cmd, **fields}
        self.log(f"ctl {self.label} -> {json.dumps(msg)}")
        assert self.conn is not None
        try:
            self.conn.sendall((json.dumps(msg) + "\n").encode())
        except OSError as e:
            raise Malfunction(f"{self.label}: control socket write failed ({e}) sending {cmd}") from e
        return cid

    def wait_reply(self, cid: int, timeout: float = REPLY_TIMEOUT) -> dict:
        deadline = time.monotonic() + timeout
        with self.reply_cv:
            while cid not in self.replies:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Malfunction(f"{self.label}: no reply to command {cid} within {timeout}s")
                if self.closed.is_set():
                    raise Malfunction(f"{self.label}: control socket closed before reply to command {cid}")
                self.reply_cv.wait(left)
            return self.replies.pop(cid)

    def cmd(self, cmd: str, expect_ok: bool | None = True, **fields) -> dict:
        reply = self.wait_reply(self.send(cmd, **fields))
        if expect_ok is True and not reply.get("ok"):
            raise Malfunction(f"{self.label}: {cmd} failed: {reply.get('error')}")
        return reply

    def wait_event(self, pred, timeout: float, what: str, fatal: bool = True) -> dict | None:
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                if fatal:
                    raise Malfunction(f"{self.label}: timed out waiting for {what}")
                return None
            try:
                ev = self.events.get(timeout=min(left, 0.5))
            except queue.Empty:
                if self.closed.is_set() and self.events.empty():
                    if fatal:
                        raise Malfunction(f"{self.label}: control socket closed while waiting for {what}")
                    return None
                continue
            if pred(ev):
                return ev


class Pair:
    """One server adapter + one client adapter with forwarded stdio and two control sockets."""

    def __init__(self, sc: Scenario, server_launch: dict, client_launch: dict, workdir: Path, verbose_log):
        self.sc = sc
        self.workdir = workdir
        self.wire: list[tuple[float, str, dict]] = []
        self.wire_lock = threading.Lock()
        self.logfile = open(workdir / "smoke.log", "w")
        self.verbose_log = verbose_log
        self.t0 = time.monotonic()
        self.server_launch = server_launch
        self.client_launch = client_launch
        self.procs: dict[str, subprocess.Popen] = {}
        self.ctl: dict[str, ControlPeer] = {}

    def log(self, line: str) -> None:
        stamp = f"{time.monotonic() - self.t0:8.3f}"
        self.logfile.write(f"{stamp} {line}\n")
        self.logfile.flush()
        if self.verbose_log:
            print(f"    {stamp} {line}", file=sys.stderr)

    def start(self) -> None:
        sc = self.sc
        initial = [{"op": "add", "kind": "tools", "name": n, "description": f"{n} v1"} for n in sc.initial_tools]
        initial.append({"op": "add", "kind": "prompts", "name": "p", "description": "p v1"})
        initial.append({"op": "add", "kind": "resources", "name": "file:///r1", "description": "r1 v1"})
        initial.append({"op": "set_content", "uri": "file:///r1", "text": "hello"})
        for role, launch in (("server", self.server_launch), ("client", self.client_launch)):
            path = str(self.workdir / f"{role}.sock")
            lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            lst.bind(path)
            lst.listen(1)
            self.ctl[role] = ControlPeer(role, lst, self.log)
            env = dict(os.environ)
            env.update(LISTSYNC_CONTROL=path, LISTSYNC_ROLE=role, LISTSYNC_ERA=sc.era)
            if role == "server":
                env["LISTSYNC_VARIANT"] = sc.server_variant
                env["LISTSYNC_PAGE_SIZE"] = str(sc.page_size)
                env["LISTSYNC_INITIAL"] = json.dumps(initial)
            else:
                if sc.client_variant:
                    env["LISTSYNC_VARIANT"] = sc.client_variant
                if sc.debounce_ms is not None:
                    env["LISTSYNC_DEBOUNCE_MS"] = str(sc.debounce_ms)
            errf = open(self.workdir / f"{role}.stderr", "w")
            self.procs[role] = subprocess.Popen(
                launch["launch"][role], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, env=env
            )
            self.log(f"started {role}: pid {self.procs[role].pid} {' '.join(launch['launch'][role])}")
        for role in ("server", "client"):
            self.ctl[role].accept(READY_TIMEOUT)
        self._forward("client", "server")
        self._forward("server", "client")

    def _forward(self, src: str, dst: str) -> None:
        def pump() -> None:
            out = self.procs[src].stdout
            inp = self.procs[dst].stdin
            assert out is not None and inp is not None
            for raw in out:
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                try:
                    msg = json.loads(text)
                except json.JSONDecodeError:
                    msg = {"_non_json": text}
                with self.wire_lock:
                    self.wire.append((time.monotonic() - self.t0, f"{src}->{dst}", msg))
                self.log(f"mcp {src}->{dst} {text}")
                try:
                    inp.write(raw)
                    inp.flush()
                except (BrokenPipeError, OSError):
                    break
            try:
                inp.close()
            except OSError:
                pass

        threading.Thread(target=pump, daemon=True).start()

    def wire_since(self, mark: int) -> list[tuple[float, str, dict]]:
        with self.wire_lock:
            return list(self.wire[mark:])

    def wire_mark(self) -> int:
        with self.wire_lock:
            return len(self.wire)

    def stop(self) -> dict[str, int | None]:
        codes: dict[str, int | None] = {}
        for role in ("client", "server"):
            peer = self.ctl.get(role)
            proc = self.procs.get(role)
            if proc is None:
                continue
            if peer and peer.conn and proc.poll() is None and not peer.closed.is_set():
                try:
                    peer.cmd("shutdown", expect_ok=None)
                except Malfunction as e:
                    self.log(f"{role}: shutdown: {e}")
            try:
                codes[role] = proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[role] = None
                self.log(f"{role}: did not exit after shutdown; killed")
        self.logfile.close()
        return codes


def names(items) -> list[str] | None:
    return None if items is None else [i["name"] for i in items]


def summarize_wire(entries) -> dict:
    notes: list[str] = []
    lists: dict[str, int] = {}
    for _, direction, msg in entries:
        method = msg.get("method")
        if not method:
            continue
        if direction == "server->client" and method.startswith("notifications/"):
            notes.append(method)
        if direction == "client->server" and method.endswith("/list"):
            lists[method] = lists.get(method, 0) + 1
    return {"notifications": notes, "list_requests": lists}


def check_bad_input(peer: ControlPeer, cmds: list[tuple[str, dict]]) -> None:
    """Each malformed command must get ok:false and leave the adapter running."""
    for cmd, fields in cmds:
        r = peer.cmd(cmd, expect_ok=None, **fields)
        if r.get("ok"):
            raise Malfunction(f"{peer.label}: accepted bad command {cmd} {fields}")
    # Lines that are not commands at all: the reply has id null.
    assert peer.conn is not None
    for raw in (b"this is not json\n", b'{"type":"cmd"}\n', b'[1,2,3]\n'):
        peer.log(f"ctl {peer.label} -> {raw!r}")
        peer.conn.sendall(raw)
        r = peer.wait_reply(None)
        if r.get("ok"):
            raise Malfunction(f"{peer.label}: accepted raw line {raw!r}")


def max_in_flight(entries, method: str) -> int:
    """Most requests of `method` outstanding at once on the wire (client->server request, server->client reply)."""
    open_ids: set = set()
    best = 0
    for _, direction, msg in entries:
        if direction == "client->server" and msg.get("method") == method and "id" in msg:
            open_ids.add(json.dumps(msg["id"]))
            best = max(best, len(open_ids))
        elif direction == "server->client" and "id" in msg and "method" not in msg:
            open_ids.discard(json.dumps(msg["id"]))
    return best


def run_scenario(sc: Scenario, launches: dict[str, dict], observe: float, keep_logs: bool, verbose: bool) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix=f"listsync-smoke-{sc.name.replace('/', '_')}-"))
    client_impl = sc.client_impl or sc.impl
    pair = Pair(sc, launches[sc.impl], launches[client_impl], workdir, verbose)
    report: dict = {"scenario": sc.name, "era_requested": sc.era, "logs": str(workdir)}
    ok = True
    try:
        pair.start()
        srv, cli = pair.ctl["server"], pair.ctl["client"]
        sready = srv.wait_event(lambda e: e["event"] == "ready", READY_TIMEOUT, "server ready")
        cready = cli.wait_event(lambda e: e["event"] == "ready", READY_TIMEOUT, "client ready")
        report["server_sdk"] = f"{sready.get('sdk')} {sready.get('sdk_version')}"
        report["client_sdk"] = f"{cready.get('sdk')} {cready.get('sdk_version')}"
        neg = next((e for e in cli.all_events if e["event"] == "negotiated"), None)
        report["negotiated"] = neg.get("protocol_version") if neg else None
        report["server_caps_seen_by_client"] = cready.get("server_capabilities")
        init = cli.wait_event(lambda e: e["event"] == "published" and e["kind"] == "tools", READY_TIMEOUT, "initial tools published")
        report["initial_published"] = names(init["items"])
        catalog = srv.cmd("catalog", kind="tools")["items"]
        report["initial_catalog"] = names(catalog)

        if sc.listen:
            r = cli.cmd("listen", expect_ok=None, kinds=["tools", "prompts", "resources"])
            report["listen"] = {"ok": r.get("ok"), "honored": r.get("honored"), "error": r.get("error")}

        # Bad control input must get ok:false, never a crash.
        check_bad_input(srv, [
            ("mutate", {"ops": [{"op": "add", "kind": "widgets", "name": "x"}]}),
            ("mutate", {"ops": "not-a-list"}),
            ("mutate", {"ops": [{"op": "remove", "kind": "tools", "name": "no-such-tool"}]}),
            ("mutate", {"ops": [{"op": "add", "kind": "tools", "name": "zz"}, {"op": "add", "kind": "tools", "name": "zz"}]}),
            ("catalog", {"kind": "widgets"}),
            ("notify", {"kind": "widgets"}),
            ("release", {"gate": 424242}),
            ("gate_call", {}),
            ("no-such-command", {}),
        ])
        check_bad_input(cli, [
            ("snapshot", {"kind": "widgets"}),
            ("refresh", {"kind": "widgets"}),
            ("call", {}),
            ("listen", {"kinds": ["widgets"]}),
            ("no-such-command", {}),
        ])
        if names(srv.cmd("catalog", kind="tools")["items"]) != report["initial_catalog"]:
            raise Malfunction("a rejected mutate batch changed the catalog")

        # Step 1: add tool b.
        expect_add = sorted(set(sc.initial_tools) | {"b"})
        report["add"] = observe_mutation(
            pair, [{"op": "add", "kind": "tools", "name": "b", "description": "b v1"}], expect_add, observe
        )
        # Explicit refresh (the documented way; all pages where the SDK/app walks them).
        mark = pair.wire_mark()
        r = cli.cmd("refresh", kind="tools")
        report["refresh"] = {"items": names(r.get("items")), "pages": r.get("pages"), **summarize_wire(pair.wire_since(mark))}
        # Call the new tool.
        r = cli.cmd("call", expect_ok=None, tool="b")
        report["call_b"] = {k: r.get(k) for k in ("ok", "is_error", "text", "code", "error") if k in r}

        # Gate: the next call of b parks inside its handler until released.
        gate = srv.cmd("gate_call", tool="b")["gate"]
        cid = cli.send("call", tool="b")
        parked = srv.wait_event(lambda e: e["event"] == "call_parked" and e.get("gate") == gate, REPLY_TIMEOUT, "call_parked")
        early = cli.replies.get(cid)
        srv.cmd("release", gate=gate)
        r = cli.wait_reply(cid)
        if early is not None or not r.get("ok") or r.get("text") != "b:b v1":
            raise Malfunction(f"gate did not hold the call (early reply {early}, reply {r})")
        report["gate"] = {"parked": parked["tool"], "reply_after_release": r.get("text")}

        # Step 2: remove tool a, then call it.
        expect_rm = sorted((set(sc.initial_tools) | {"b"}) - {"a"})
        report["remove"] = observe_mutation(pair, [{"op": "remove", "kind": "tools", "name": "a"}], expect_rm, observe)
        r = cli.cmd("call", expect_ok=None, tool="a")
        report["call_removed_a"] = {k: r.get(k) for k in ("ok", "is_error", "text", "code", "error") if k in r}
        dispatched = [e for e in srv.all_events if e["event"] == "dispatched"]
        report["dispatched"] = [(e["tool"], e["present"]) for e in dispatched]

        # Explicit notify through the SDK's documented API (where one exists for this era).
        mark = pair.wire_mark()
        r = srv.cmd("notify", expect_ok=None, kind="tools")
        pub = cli.wait_event(lambda e: e["event"] == "published" and e["kind"] == "tools", observe, "publish after notify", fatal=False)
        report["notify"] = {
            "ok": r.get("ok"),
            "error": r.get("error"),
            "client_published": names(pub["items"]) if pub else None,
            **summarize_wire(pair.wire_since(mark)),
        }
        if sc.impl == "python" and sc.era != "2025-11-25":
            # The legacy session send on a 2026-07-28 connection: does anything reach the wire?
            mark = pair.wire_mark()
            r = srv.cmd("notify", expect_ok=None, kind="tools", via="session")
            pub = cli.wait_event(lambda e: e["event"] == "published" and e["kind"] == "tools", observe, "publish after session notify", fatal=False)
            report["notify_via_session_on_2026"] = {
                "ok": r.get("ok"),
                "error": r.get("error"),
                "client_published": names(pub["items"]) if pub else None,
                **summarize_wire(pair.wire_since(mark)),
            }
        # Burst: three explicit notifications back to back; how many re-lists, how many in flight at once?
        mark = pair.wire_mark()
        n_pub = sum(1 for e in cli.all_events if e["event"] == "published" and e["kind"] == "tools")
        ids = [srv.send("notify", kind="tools") for _ in range(3)]
        replies = [srv.wait_reply(i) for i in ids]
        cli.wait_event(lambda e: False, observe, "burst settle", fatal=False)  # observation window only
        entries = pair.wire_since(mark)
        report["burst"] = {
            "notify_ok": [r.get("ok") for r in replies],
            "published": [names(e["items"]) for e in cli.all_events if e["event"] == "published" and e["kind"] == "tools"][n_pub:],
            "max_tools_list_in_flight": max_in_flight(entries, "tools/list"),
            **summarize_wire(entries),
        }
        snap = cli.cmd("snapshot", kind="tools")
        report["final_snapshot"] = names(snap.get("items"))
        report["final_catalog"] = names(srv.cmd("catalog", kind="tools")["items"])
        for role in ("server", "client"):
            if pair.ctl[role].protocol_errors:
                raise Malfunction(f"{role}: {pair.ctl[role].protocol_errors}")
    except Malfunction as e:
        ok = False
        report["malfunction"] = str(e)
    finally:
        codes = pair.stop()
        report["exit_codes"] = codes
        for role, code in codes.items():
            if code not in (0,):
                ok = False
                report.setdefault("malfunction", f"{role} exited with {code}")
    report["ok"] = ok
    (workdir / "report.json").write_text(json.dumps(report, indent=2))
    if ok and not keep_logs:
        shutil.rmtree(workdir, ignore_errors=True)
        report["logs"] = None
    return report


def observe_mutation(pair: Pair, ops: list[dict], expect: list[str], observe: float) -> dict:
    srv, cli = pair.ctl["server"], pair.ctl["client"]
    mark = pair.wire_mark()
    n_pub = sum(1 for e in cli.all_events if e["event"] == "published" and e["kind"] == "tools")
    srv.cmd("mutate", ops=ops)
    # Watch until the client publishes the expected list, or the observation window ends.
    hit = cli.wait_event(
        lambda e: e["event"] == "published" and e["kind"] == "tools" and sorted(names(e["items"]) or []) == expect,
        observe,
        "expected publish",
        fatal=False,
    )
    pubs = [e for e in cli.all_events if e["event"] == "published" and e["kind"] == "tools"][n_pub:]
    return {
        "ops": ops,
        "converged": hit is not None,
        "published": [names(e["items"]) for e in pubs],
        **summarize_wire(pair.wire_since(mark)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("impls", nargs="*", help=", ".join(IMPLS) + " (default: all)")
    ap.add_argument("--scenario", action="append", default=[], help="run only these scenario names")
    ap.add_argument("--observe", type=float, default=4.0, help="seconds to watch for an SDK reaction to a mutation")
    ap.add_argument("--keep-logs", action="store_true", help="keep log directories of passing scenarios")
    ap.add_argument("-v", "--verbose", action="store_true", help="echo every JSON-RPC and control line")
    args = ap.parse_args()
    impls = args.impls or list(IMPLS)
    for impl in impls:
        if impl not in IMPLS:
            ap.error(f"unknown IMPL {impl!r}")
    chosen = [
        s for s in SCENARIOS
        if s.impl in impls and (s.client_impl or s.impl) in impls and (not args.scenario or s.name in args.scenario)
    ]
    launches: dict[str, dict] = {}
    failed = False
    for impl in sorted({s.impl for s in chosen} | {s.client_impl for s in chosen if s.client_impl}):
        try:
            launches[impl] = provision(impl)
        except Malfunction as e:
            print(f"FAIL provision {impl}: {e}", file=sys.stderr)
            failed = True
    results = []
    for sc in chosen:
        if sc.impl not in launches or (sc.client_impl and sc.client_impl not in launches):
            continue
        print(f"== {sc.name} (era {sc.era}, server {sc.server_variant}, client {sc.client_variant or 'default'})", flush=True)
        rep = run_scenario(sc, launches, args.observe, args.keep_logs, args.verbose)
        results.append(rep)
        print(json.dumps(rep, indent=2), flush=True)
        if not rep["ok"]:
            failed = True
    print("\n== summary")
    for rep in results:
        status = "ok" if rep["ok"] else f"MALFUNCTION: {rep.get('malfunction')}"
        add, rm = rep.get("add", {}), rep.get("remove", {})
        print(
            f"{rep['scenario']:40} negotiated={rep.get('negotiated')} "
            f"add:notif={len(add.get('notifications', []))} relists={add.get('list_requests', {}).get('tools/list', 0)} converged={add.get('converged')} "
            f"remove:notif={len(rm.get('notifications', []))} converged={rm.get('converged')} "
            f"refresh_pages={rep.get('refresh', {}).get('pages')} "
            f"burst:relists={rep.get('burst', {}).get('list_requests', {}).get('tools/list', 0)} inflight={rep.get('burst', {}).get('max_tools_list_in_flight')} -> {status}"
        )
    passed = sum(1 for r in results if r["ok"])
    print(f"{passed} passed, {len(results) - passed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
