"""Entry point of the Python adapter (PyPI `mcp`): connects the control socket, runs the role chosen by
LISTSYNC_ROLE (server.py or client.py; with LISTSYNC_PYTHON_SDK=fastmcp the FastMCP adapter's fastmcp_server.py or
fastmcp_client.py, which share this entry point and control.py), and exits when the control socket closes, on `shutdown`, or when
stdin reaches EOF. Start-up failures are reported as a `log` event and exit with status 2."""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import anyio  # noqa: E402

from control import Control, Env, log  # noqa: E402


async def amain() -> int:
    env = Env()
    control = Control(env.control)
    await control.connect()
    status = 0
    sdk = os.environ.get("LISTSYNC_PYTHON_SDK", "mcp")
    if sdk not in ("mcp", "fastmcp"):
        raise ValueError(f"LISTSYNC_PYTHON_SDK must be mcp or fastmcp, got {sdk!r}")
    prefix = "fastmcp_" if sdk == "fastmcp" else ""
    sdk_version = importlib.metadata.version(sdk)

    async def finish(code: int, why: str) -> None:
        # Flush the control channel (the reply to `shutdown`, last events), then leave at once: the SDK's
        # stdio reader runs in a worker thread blocked on stdin, which no cancellation can interrupt.
        log("exiting:", why)
        with anyio.CancelScope(shield=True):
            await control.flush_and_close()
        sys.stdout.flush()
        os._exit(code)

    async with anyio.create_task_group() as tg:

        async def run_role() -> None:
            nonlocal status
            try:
                if env.role in ("server", "client"):
                    role = importlib.import_module(prefix + env.role)
                    await getattr(role, f"run_{env.role}")(control, env, sdk_version, tg)
                else:
                    raise ValueError(f"LISTSYNC_ROLE must be server or client, got {env.role!r}")
            except Exception as e:  # noqa: BLE001
                status = 2
                log("adapter failed:", traceback.format_exc())
                control.event("log", message=f"adapter failed: {type(e).__name__}: {e}")
            await finish(status, "role ended")

        async def watch(ev: anyio.Event, why: str) -> None:
            await ev.wait()
            await finish(status, why)

        tg.start_soon(control.run, tg)
        tg.start_soon(run_role)
        tg.start_soon(watch, control.closed, "control socket closed")
        tg.start_soon(watch, control.shutdown_requested, "shutdown command")
    return status


def main() -> None:
    try:
        status = anyio.run(amain)
    except Exception:  # noqa: BLE001
        log("start-up failed:", traceback.format_exc())
        status = 2
    sys.stdout.flush()
    os._exit(status)  # do not wait on the SDK's stdin reader thread


if __name__ == "__main__":
    main()
