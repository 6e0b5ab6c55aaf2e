package listsync.adapter;

import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.TypeRef;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The adapter's end of the harness control socket (docs/harness-protocol.md): JSON lines, exactly one
 * reply per command (ok:false on any failure, never a crash), events, commands run concurrently (a
 * parked call must not block the release that frees it), and process exit. No MCP SDK types here.
 */
final class Control {
    /** Item kinds of the control protocol. */
    static final List<String> KINDS = List.of("tools", "prompts", "resources", "resource_templates");

    /** A command failure; {@code fields} are merged into the reply (a JSON-RPC {@code code}). */
    static final class CommandError extends RuntimeException {
        final Map<String, Object> fields;

        CommandError(String message) {
            this(message, Map.of());
        }

        CommandError(String message, Map<String, Object> fields) {
            super(message);
            this.fields = fields;
        }
    }

    /** A command handler: returns the extra fields of the ok reply. */
    interface Handler {
        Map<String, Object> handle(Map<String, Object> cmd) throws Exception;
    }

    private static final TypeRef<Object> ANY = new TypeRef<>() {};

    final McpJsonMapper json;
    private final SocketChannel channel;
    private final OutputStream out;
    private final Map<String, Handler> handlers = new ConcurrentHashMap<>();
    private final ExecutorService workers = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "control-cmd");
        t.setDaemon(true);
        return t;
    });
    private final AtomicBoolean exiting = new AtomicBoolean();
    volatile Runnable onShutdown = () -> {};

    Control(String path, McpJsonMapper json) throws Exception {
        if (path == null || path.isEmpty()) {
            throw new IllegalStateException("LISTSYNC_CONTROL is not set (path of the harness control socket)");
        }
        this.json = json;
        this.channel = SocketChannel.open(StandardProtocolFamily.UNIX);
        this.channel.connect(UnixDomainSocketAddress.of(path));
        // Not Channels.newInputStream/newOutputStream: those serialise on the channel's blocking lock,
        // so a blocked read would hold every write back. SocketChannel reads and writes may overlap.
        this.out = new OutputStream() {
            @Override
            public void write(int b) throws java.io.IOException {
                write(new byte[] {(byte) b}, 0, 1);
            }

            @Override
            public void write(byte[] b, int off, int len) throws java.io.IOException {
                java.nio.ByteBuffer buf = java.nio.ByteBuffer.wrap(b, off, len);
                while (buf.hasRemaining()) channel.write(buf);
            }
        };
    }

    static void log(String message) {
        System.err.println("[listsync-adapter " + System.getenv("LISTSYNC_ROLE") + "] " + message);
    }

    void on(String name, Handler h) {
        handlers.put(name, h);
    }

    private void write(Map<String, Object> msg) {
        String line;
        try {
            line = json.writeValueAsString(msg);
        } catch (Exception e) {
            line = "{\"type\":\"event\",\"event\":\"log\",\"message\":\"unserializable message\"}";
        }
        byte[] bytes = (line + "\n").getBytes(StandardCharsets.UTF_8);
        synchronized (out) {
            try {
                out.write(bytes);
                out.flush();
            } catch (Exception e) {
                // The harness went away: the reader sees it and exits.
            }
        }
    }

    void event(String name, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "event");
        m.put("event", name);
        m.putAll(fields);
        write(m);
    }

    void logEvent(String message) {
        log(message);
        event("log", Map.of("message", message));
    }

    private void reply(Object id, boolean ok, Map<String, Object> fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("type", "reply");
        m.put("id", id);
        m.put("ok", ok);
        m.putAll(fields);
        write(m);
    }

    /** Reads commands until the socket closes, then exits with status 0. */
    void serve() {
        java.io.InputStream in = new java.io.InputStream() {
            @Override
            public int read() throws java.io.IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
            }

            @Override
            public int read(byte[] b, int off, int len) throws java.io.IOException {
                return channel.read(java.nio.ByteBuffer.wrap(b, off, len));
            }
        };
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (!line.isBlank()) handleLine(line);
            }
        } catch (Exception e) {
            log("control socket: " + e);
        }
        exit(0, "control socket closed");
    }

    @SuppressWarnings("unchecked")
    private void handleLine(String line) {
        Object parsed;
        try {
            parsed = json.readValue(line, ANY);
        } catch (Exception e) {
            reply(null, false, Map.of("error", "invalid JSON: " + e.getMessage()));
            return;
        }
        Object id = parsed instanceof Map ? ((Map<String, Object>) parsed).get("id") : null;
        if (!(parsed instanceof Map) || !"cmd".equals(((Map<String, Object>) parsed).get("type"))
                || !(((Map<String, Object>) parsed).get("cmd") instanceof String)) {
            reply(id, false, Map.of("error", "expected {\"type\":\"cmd\",\"id\":N,\"cmd\":\"...\"}"));
            return;
        }
        Map<String, Object> cmd = (Map<String, Object>) parsed;
        String name = (String) cmd.get("cmd");
        Handler h = handlers.get(name);
        if (h == null) {
            reply(id, false, Map.of("error", "unknown command '" + name + "'"));
            return;
        }
        workers.execute(() -> {
            Map<String, Object> extra;
            try {
                extra = h.handle(cmd);
            } catch (CommandError e) {
                Map<String, Object> f = new LinkedHashMap<>(e.fields);
                f.put("error", String.valueOf(e.getMessage()));
                reply(id, false, f);
                return;
            } catch (Throwable e) {
                reply(id, false, Map.of("error", e.getClass().getSimpleName() + ": " + e.getMessage()));
                return;
            }
            reply(id, true, extra == null ? Map.of() : extra);
            if ("shutdown".equals(name)) exit(0, "shutdown command");
        });
    }

    /** Runs the shutdown hook (bounded), flushes, and ends the process. Idempotent. */
    void exit(int code, String reason) {
        if (!exiting.compareAndSet(false, true)) return;
        log("exiting: " + reason);
        Thread hook = new Thread(() -> {
            try {
                onShutdown.run();
            } catch (Throwable ignored) {
                // leaving anyway
            }
        });
        hook.setDaemon(true);
        hook.start();
        try {
            hook.join(2000);
        } catch (InterruptedException ignored) {
            // leaving anyway
        }
        synchronized (out) {
            try {
                out.flush();
                channel.close();
            } catch (Exception ignored) {
                // leaving anyway
            }
        }
        System.err.flush();
        // halt, not exit: SDK schedulers keep non-daemon threads alive.
        Runtime.getRuntime().halt(code);
    }

    /** Reports a start-up failure and exits with status 2. */
    void fail(Throwable e) {
        logEvent("start-up failed: " + e);
        exit(2, "start-up failed");
    }

    static String str(Map<String, Object> cmd, String key) {
        Object v = cmd.get(key);
        return v instanceof String s ? s : null;
    }

    static String kind(Map<String, Object> cmd) {
        String k = str(cmd, "kind");
        if (k == null || !KINDS.contains(k)) throw new CommandError("unknown kind '" + k + "'");
        return k;
    }

    /** The JSON-RPC error of a failed SDK request, as reply fields. */
    static CommandError rpcError(Throwable e) {
        Throwable t = e;
        while (t != null) {
            if (t instanceof io.modelcontextprotocol.spec.McpError me && me.getJsonRpcError() != null) {
                return new CommandError(String.valueOf(me.getMessage()), Map.of("code", me.getJsonRpcError().code()));
            }
            t = t.getCause();
        }
        return new CommandError(e.getClass().getSimpleName() + ": " + e.getMessage());
    }
}
