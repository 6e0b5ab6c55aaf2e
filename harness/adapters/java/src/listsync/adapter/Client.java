package listsync.adapter;

import io.modelcontextprotocol.client.McpAsyncClient;
import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.client.McpSyncClient;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpSchema;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Client role: the SDK's own list-change handling. On {@code notifications/tools/list_changed} (and
 * the prompts and resources ones) the SDK itself calls {@code listTools()} (which follows every
 * cursor) and hands the whole list to the application's change consumers; each notification is
 * handled on its own (the SDK subscribes to each one separately: no ordering, no merging). The
 * application keeps the list its consumer was given. The SDK knows no protocol version after
 * 2025-11-25 and has no subscriptions/listen.
 *
 * Variants: {@code sync} (McpClient.sync, {@code toolsChangeConsumer(Consumer)}, which the SDK runs
 * on its boundedElastic scheduler) and {@code async} (McpClient.async,
 * {@code toolsChangeConsumer(Function<List<Tool>, Mono<Void>>)}, run inline).
 */
final class Client {
    private static final TypeRef<Map<String, Object>> MAP = new TypeRef<>() {};
    private final Control ctl;
    private final Map<String, List<Map<String, Object>>> snapshots = new ConcurrentHashMap<>();
    private final Map<String, AtomicLong> listSent = new HashMap<>();
    private McpSyncClient sync;
    private McpAsyncClient async;

    private Client(Control ctl) {
        this.ctl = ctl;
        for (String k : Control.KINDS) listSent.put(k, new AtomicLong());
    }

    static void run(Control ctl, Env env) {
        String variant = env.variant() == null ? "sync" : env.variant();
        if (!variant.equals("sync") && !variant.equals("async")) {
            throw new IllegalArgumentException("unknown LISTSYNC_VARIANT '" + variant + "' (sync, async)");
        }
        new Client(ctl).start(env, variant);
    }

    private static String listKind(String method) {
        return switch (method) {
            case "tools/list" -> "tools";
            case "prompts/list" -> "prompts";
            case "resources/list" -> "resources";
            case "resources/templates/list" -> "resource_templates";
            default -> null;
        };
    }

    private void publish(String kind, List<Map<String, Object>> items, String source) {
        snapshots.put(kind, items);
        Map<String, Object> f = new LinkedHashMap<>();
        f.put("kind", kind);
        f.put("items", items);
        f.put("source", source);
        ctl.event("published", f);
    }

    private static List<Map<String, Object>> tools(List<McpSchema.Tool> l) {
        List<Map<String, Object>> out = new ArrayList<>();
        l.forEach(t -> out.add(Catalog.item(t.name(), t.description())));
        return out;
    }

    private static List<Map<String, Object>> prompts(List<McpSchema.Prompt> l) {
        List<Map<String, Object>> out = new ArrayList<>();
        l.forEach(p -> out.add(Catalog.item(p.name(), p.description())));
        return out;
    }

    private static List<Map<String, Object>> resources(List<McpSchema.Resource> l) {
        List<Map<String, Object>> out = new ArrayList<>();
        l.forEach(r -> out.add(Catalog.item(r.uri(), r.description())));
        return out;
    }

    private void start(Env env, String variant) {
        if (!env.era().equals("2025-11-25")) {
            ctl.logEvent("the Java SDK cannot pin " + env.era() + ": it always offers 2025-11-25 in initialize");
        }
        var json = ctl.json;
        var stdin = Lines.eofObserved(System.in, () -> ctl.exit(0, "stdin reached EOF"));
        var transport = new OwnStdioClientTransport(json, stdin, System.out, m -> {
            if (m instanceof McpSchema.JSONRPCNotification n) {
                Map<String, Object> f = new LinkedHashMap<>();
                f.put("method", n.method());
                f.put("params", n.params());
                ctl.event("notification", f);
            }
        }, m -> {
            if (m instanceof McpSchema.JSONRPCRequest r) {
                String kind = listKind(r.method());
                if (kind != null) {
                    listSent.get(kind).incrementAndGet();
                    Object cursor = r.params() == null ? null : json.convertValue(r.params(), MAP).get("cursor");
                    if (cursor == null || cursor.toString().isEmpty()) ctl.event("refresh_started", Map.of("kind", kind));
                }
            }
        });
        var info = McpSchema.Implementation.builder("listsync-java-client", "0.1.0").build();
        Duration timeout = Duration.ofSeconds(120);
        McpSchema.InitializeResult init;
        if (variant.equals("sync")) {
            sync = McpClient.sync(transport).clientInfo(info).requestTimeout(timeout)
                    .toolsChangeConsumer(l -> publish("tools", tools(l), "toolsChangeConsumer"))
                    .promptsChangeConsumer(l -> publish("prompts", prompts(l), "promptsChangeConsumer"))
                    .resourcesChangeConsumer(l -> publish("resources", resources(l), "resourcesChangeConsumer"))
                    .build();
            registerCommands();
            init = sync.initialize();
            ctl.onShutdown = () -> sync.close();
        } else {
            async = McpClient.async(transport).clientInfo(info).requestTimeout(timeout)
                    .toolsChangeConsumer(l -> Mono.fromRunnable(() -> publish("tools", tools(l), "toolsChangeConsumer")))
                    .promptsChangeConsumer(l -> Mono.fromRunnable(() -> publish("prompts", prompts(l), "promptsChangeConsumer")))
                    .resourcesChangeConsumer(l -> Mono.fromRunnable(() -> publish("resources", resources(l), "resourcesChangeConsumer")))
                    .build();
            registerCommands();
            init = async.initialize().block();
            ctl.onShutdown = () -> async.close();
        }
        ctl.event("negotiated", Map.of("protocol_version", init.protocolVersion()));
        Map<String, Object> ready = new LinkedHashMap<>();
        ready.put("impl", "java");
        ready.put("role", "client");
        ready.put("sdk", "io.modelcontextprotocol.sdk:mcp");
        ready.put("sdk_version", Main.sdkVersion());
        ready.put("era_requested", env.era());
        ready.put("variant", variant);
        ready.put("server_capabilities", json.convertValue(init.capabilities(), MAP));
        ctl.event("ready", ready);
        var caps = init.capabilities();
        Map<String, Boolean> offered = Map.of("tools", caps.tools() != null, "prompts", caps.prompts() != null,
                "resources", caps.resources() != null, "resource_templates", caps.resources() != null);
        for (String k : Control.KINDS) {
            if (!offered.get(k)) continue;
            try {
                publish(k, listAll(k), "initial");
            } catch (Exception e) {
                ctl.event("refresh_failed", Map.of("kind", k, "error", String.valueOf(e.getMessage())));
            }
        }
    }

    /** The SDK's no-argument list calls: every page. */
    private List<Map<String, Object>> listAll(String kind) {
        if (sync != null) {
            return switch (kind) {
                case "tools" -> tools(sync.listTools().tools());
                case "prompts" -> prompts(sync.listPrompts().prompts());
                case "resources" -> resources(sync.listResources().resources());
                default -> {
                    List<Map<String, Object>> out = new ArrayList<>();
                    sync.listResourceTemplates().resourceTemplates().forEach(t -> out.add(Catalog.item(t.uriTemplate(), t.description())));
                    yield out;
                }
            };
        }
        return switch (kind) {
            case "tools" -> tools(async.listTools().block().tools());
            case "prompts" -> prompts(async.listPrompts().block().prompts());
            case "resources" -> resources(async.listResources().block().resources());
            default -> {
                List<Map<String, Object>> out = new ArrayList<>();
                async.listResourceTemplates().block().resourceTemplates().forEach(t -> out.add(Catalog.item(t.uriTemplate(), t.description())));
                yield out;
            }
        };
    }

    private boolean ready() {
        return sync != null ? sync.isInitialized() : async != null && async.isInitialized();
    }

    @SuppressWarnings("unchecked")
    private void registerCommands() {
        ctl.on("snapshot", cmd -> {
            String kind = Control.kind(cmd);
            Map<String, Object> r = new HashMap<>();
            r.put("items", snapshots.get(kind));
            return r;
        });
        ctl.on("refresh", cmd -> {
            String kind = Control.kind(cmd);
            if (!ready()) throw new Control.CommandError("the MCP session is not initialized yet");
            long before = listSent.get(kind).get();
            List<Map<String, Object>> items;
            try {
                items = listAll(kind);
            } catch (RuntimeException e) {
                throw Control.rpcError(e);
            }
            publish(kind, items, "refresh");
            return Map.of("items", items, "pages", listSent.get(kind).get() - before);
        });
        ctl.on("call", cmd -> {
            String tool = Control.str(cmd, "tool");
            if (tool == null || tool.isEmpty()) throw new Control.CommandError("call needs tool");
            if (!ready()) throw new Control.CommandError("the MCP session is not initialized yet");
            Object a = cmd.get("arguments");
            Map<String, Object> args = a instanceof Map ? (Map<String, Object>) a : Map.of();
            var req = McpSchema.CallToolRequest.builder(tool).arguments(args).build();
            McpSchema.CallToolResult res;
            try {
                res = sync != null ? sync.callTool(req) : async.callTool(req).block();
            } catch (RuntimeException e) {
                Control.CommandError ce = Control.rpcError(e);
                Map<String, Object> f = new HashMap<>();
                f.put("tool", tool);
                f.put("is_error", true);
                f.put("code", ce.fields.get("code"));
                ctl.event("call_done", f);
                throw ce;
            }
            StringBuilder sb = new StringBuilder();
            if (res.content() != null) {
                res.content().forEach(c -> {
                    if (c instanceof McpSchema.TextContent t) sb.append(t.text());
                });
            }
            boolean isError = Boolean.TRUE.equals(res.isError());
            ctl.event("call_done", Map.of("tool", tool, "is_error", isError));
            return Map.of("is_error", isError, "text", sb.toString());
        });
        ctl.on("subscribe", cmd -> {
            String uri = Control.str(cmd, "uri");
            if (uri == null || uri.isEmpty()) throw new Control.CommandError("subscribe needs uri");
            if (!ready()) throw new Control.CommandError("the MCP session is not initialized yet");
            try {
                if (sync != null) sync.subscribeResource(McpSchema.SubscribeRequest.builder(uri).build());
                else async.subscribeResource(McpSchema.SubscribeRequest.builder(uri).build()).block();
            } catch (RuntimeException e) {
                throw Control.rpcError(e);
            }
            return Map.of();
        });
        ctl.on("listen", cmd -> {
            Object kinds = cmd.get("kinds");
            if (kinds instanceof List<?> l) {
                for (Object k : l) {
                    if (!List.of("tools", "prompts", "resources").contains(k)) throw new Control.CommandError("unknown kind '" + k + "' for listen");
                }
            }
            throw new Control.CommandError("the Java SDK has no subscriptions/listen (protocol 2026-07-28 is not implemented)");
        });
        ctl.on("shutdown", cmd -> Map.of());
    }
}
