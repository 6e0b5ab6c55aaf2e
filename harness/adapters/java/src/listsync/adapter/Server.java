package listsync.adapter;

import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncPromptSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncResourceTemplateSpecification;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.McpSyncServer;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpError;
import io.modelcontextprotocol.spec.McpSchema;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiFunction;

/**
 * Server role, one variant {@code sync}: {@code McpServer.sync(StdioServerTransportProvider)} with
 * tools/prompts/resources capabilities declared with listChanged (and resources subscribe), the
 * initial catalog given to the builder, then {@code McpSyncServer.addTool/removeTool} (and the prompt,
 * resource and template counterparts) once per op; an update is addTool with the same name, which
 * replaces the tool. Each call sends its list_changed by itself, at once. (The async API,
 * {@code McpAsyncServer}, is the same code: McpSyncServer blocks on it.) {@code tools/list} ignores
 * cursors, so LISTSYNC_PAGE_SIZE has no effect. The SDK knows no protocol version after 2025-11-25.
 * {@code notify} uses notifyToolsListChanged / notifyPromptsListChanged / notifyResourcesListChanged /
 * notifyResourcesUpdated, the SDK's explicit API.
 */
final class Server {
    private final Control ctl;
    private final Catalog model = new Catalog();
    private final Gates gates;
    private McpSyncServer server;

    private Server(Control ctl) {
        this.ctl = ctl;
        this.gates = new Gates(ctl);
    }

    static void run(Control ctl, Env env) {
        String variant = env.variant() == null ? "sync" : env.variant();
        if (!variant.equals("sync")) throw new IllegalArgumentException("unknown LISTSYNC_VARIANT '" + variant + "' (sync)");
        new Server(ctl).start(env, variant);
    }

    private void start(Env env, String variant) {
        if (!env.era().equals("2025-11-25")) {
            ctl.logEvent("the Java SDK knows no protocol version newer than 2025-11-25; era " + env.era() + " requested, the client's initialize decides");
        }
        if (env.pageSize() > 0) {
            ctl.logEvent("tools/list of McpServer ignores cursors: LISTSYNC_PAGE_SIZE=" + env.pageSize() + " has no effect");
        }
        model.check(env.initial());
        model.apply(env.initial());
        McpJsonMapper json = ctl.json;
        var stdout = Lines.lineObserved(System.out, line -> {
            try {
                McpSchema.JSONRPCMessage m = McpSchema.deserializeJsonRpcMessage(json, line);
                if (m instanceof McpSchema.JSONRPCNotification n) {
                    java.util.Map<String, Object> f = new java.util.LinkedHashMap<>();
                    f.put("method", n.method());
                    f.put("params", n.params());
                    ctl.event("notified", f);
                }
            } catch (Exception ignored) {
                // not a JSON-RPC line
            }
        });
        var stdin = Lines.eofObserved(System.in, () -> ctl.exit(0, "stdin reached EOF"));

        List<SyncToolSpecification> tools = new ArrayList<>();
        List<SyncPromptSpecification> prompts = new ArrayList<>();
        List<SyncResourceSpecification> resources = new ArrayList<>();
        List<SyncResourceTemplateSpecification> templates = new ArrayList<>();
        for (String k : Control.KINDS) {
            for (Map<String, Object> it : model.list(k)) {
                String n = (String) it.get("name");
                String d = (String) it.get("description");
                switch (k) {
                    case "tools" -> tools.add(tool(n, d));
                    case "prompts" -> prompts.add(prompt(n, d));
                    case "resources" -> resources.add(resource(n, d));
                    default -> templates.add(template(n, d));
                }
            }
        }
        var caps = McpSchema.ServerCapabilities.builder().tools(true).prompts(true).resources(true, true).build();
        // Building the server creates the stdio session: the transport starts here.
        server = McpServer.sync(new StdioServerTransportProvider(json, stdin, stdout))
                .serverInfo("listsync-java-server", "0.1.0")
                .capabilities(caps)
                .tools(tools)
                .prompts(prompts)
                .resources(resources)
                .resourceTemplates(templates)
                .build();
        ctl.onShutdown = () -> server.close();

        ctl.on("mutate", cmd -> {
            List<Catalog.Op> ops = Catalog.parse(cmd.get("ops"));
            synchronized (this) {
                model.check(ops);
                int applied = 0;
                for (Catalog.Op op : ops) {
                    try {
                        applyOne(op);
                    } catch (RuntimeException e) {
                        throw new Control.CommandError("the SDK refused op " + (applied + 1) + " (" + applied + " applied before it): " + e.getMessage());
                    }
                    model.apply(List.of(op));
                    applied++;
                }
            }
            return Map.of();
        });
        ctl.on("notify", cmd -> {
            String kind = Control.str(cmd, "kind");
            if ("resource_updated".equals(kind)) {
                String uri = Control.str(cmd, "uri");
                if (uri == null) throw new Control.CommandError("notify resource_updated needs uri");
                server.notifyResourcesUpdated(new McpSchema.ResourcesUpdatedNotification(uri));
                return Map.of();
            }
            switch (Control.kind(cmd)) {
                case "tools" -> server.notifyToolsListChanged();
                case "prompts" -> server.notifyPromptsListChanged();
                default -> server.notifyResourcesListChanged();
            }
            return Map.of();
        });
        ctl.on("catalog", cmd -> {
            String kind = Control.kind(cmd);
            List<Map<String, Object>> items = new ArrayList<>();
            switch (kind) {
                case "tools" -> server.listTools().forEach(t -> items.add(Catalog.item(t.name(), t.description())));
                case "prompts" -> server.listPrompts().forEach(p -> items.add(Catalog.item(p.name(), p.description())));
                case "resources" -> server.listResources().forEach(r -> items.add(Catalog.item(r.uri(), r.description())));
                default -> server.listResourceTemplates().forEach(r -> items.add(Catalog.item(r.uriTemplate(), r.description())));
            }
            return Map.of("items", items);
        });
        ctl.on("shutdown", cmd -> Map.of());
        java.util.Map<String, Object> ready = new java.util.LinkedHashMap<>();
        ready.put("impl", "java");
        ready.put("role", "server");
        ready.put("sdk", "io.modelcontextprotocol.sdk:mcp");
        ready.put("sdk_version", Main.sdkVersion());
        ready.put("era_requested", env.era());
        ready.put("variant", variant);
        ready.put("page_size", env.pageSize());
        ctl.event("ready", ready);
    }

    private void applyOne(Catalog.Op op) {
        switch (op.op()) {
            case "set_content" -> {
                // the model serves the text; the SDK sends nothing
            }
            case "remove" -> {
                switch (op.kind()) {
                    case "tools" -> server.removeTool(op.name());
                    case "prompts" -> server.removePrompt(op.name());
                    case "resources" -> server.removeResource(op.name());
                    default -> server.removeResourceTemplate(op.name());
                }
            }
            default -> {
                String n = op.name();
                String d = op.description();
                switch (op.kind()) {
                    case "tools" -> server.addTool(tool(n, d));
                    case "prompts" -> server.addPrompt(prompt(n, d));
                    case "resources" -> server.addResource(resource(n, d));
                    default -> server.addResourceTemplate(template(n, d));
                }
            }
        }
    }

    private SyncToolSpecification tool(String name, String def) {
        var tool = McpSchema.Tool.builder(name, Map.of("type", "object")).description(def).build();
        return SyncToolSpecification.builder().tool(tool).callHandler((exchange, req) -> {
            boolean present = server != null && server.listTools().stream().anyMatch(t -> t.name().equals(name));
            ctl.event("dispatched", Map.of("tool", name, "present", present));
            try {
                gates.pass(name);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            ctl.event("call_done", Map.of("tool", name));
            return McpSchema.CallToolResult.builder().addTextContent(name + ":" + def).build();
        }).build();
    }

    private SyncPromptSpecification prompt(String name, String def) {
        var p = McpSchema.Prompt.builder(name).description(def).build();
        return new SyncPromptSpecification(p, (exchange, req) -> McpSchema.GetPromptResult.builder(
                List.of(new McpSchema.PromptMessage(McpSchema.Role.USER, McpSchema.TextContent.builder(name + ":" + def).build())))
                .description(def).build());
    }

    private final BiFunction<io.modelcontextprotocol.server.McpSyncServerExchange, McpSchema.ReadResourceRequest, McpSchema.ReadResourceResult> read =
            (exchange, req) -> {
                if (!model.has("resources", req.uri())) {
                    throw McpError.builder(-32002).message("Resource not found: " + req.uri()).build();
                }
                return McpSchema.ReadResourceResult.builder(List.of(McpSchema.TextResourceContents.builder(req.uri(), model.content(req.uri())).mimeType("text/plain").build())).build();
            };

    private SyncResourceSpecification resource(String uri, String def) {
        var r = McpSchema.Resource.builder(uri, uri).description(def).mimeType("text/plain").build();
        return new SyncResourceSpecification(r, read);
    }

    private SyncResourceTemplateSpecification template(String uri, String def) {
        var t = McpSchema.ResourceTemplate.builder(uri, uri).description(def).build();
        return new SyncResourceTemplateSpecification(t, read);
    }
}
