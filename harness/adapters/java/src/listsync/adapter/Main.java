package listsync.adapter;

import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.McpJsonMapper;

/**
 * The listsync adapter for the official Java SDK (io.modelcontextprotocol.sdk:mcp): LISTSYNC_ROLE
 * selects the server or the client; MCP runs over the process's own stdin/stdout and the control
 * protocol (docs/harness-protocol.md) over the harness's Unix socket.
 */
public final class Main {
    private Main() {}

    /** The SDK version compiled against and loaded (the jar's manifest). */
    static String sdkVersion() {
        Package p = io.modelcontextprotocol.spec.McpSchema.class.getPackage();
        String v = p == null ? null : p.getImplementationVersion();
        return v == null ? "unknown" : v;
    }

    public static void main(String[] args) {
        if (args.length > 0 && args[0].equals("--warm-up")) {
            WarmUp.run();
            return;
        }
        McpJsonMapper json = McpJsonDefaults.getMapper();
        Control ctl;
        try {
            ctl = new Control(System.getenv("LISTSYNC_CONTROL"), json);
        } catch (Exception e) {
            Control.log("cannot connect to the control socket: " + e);
            Runtime.getRuntime().halt(2);
            return;
        }
        try {
            Env env = Env.read();
            switch (env.role()) {
                case "server" -> Server.run(ctl, env);
                case "client" -> Client.run(ctl, env);
                default -> throw new IllegalArgumentException("LISTSYNC_ROLE must be server or client, got '" + env.role() + "'");
            }
        } catch (Throwable e) {
            ctl.fail(e);
        }
        ctl.serve();
    }
}
