package listsync.adapter;

import io.modelcontextprotocol.client.McpClient;
import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.server.McpServer;
import io.modelcontextprotocol.server.McpServerFeatures.SyncToolSpecification;
import io.modelcontextprotocol.server.transport.StdioServerTransportProvider;
import io.modelcontextprotocol.spec.McpSchema;

import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * {@code --warm-up}: a server and a client of the SDK talking over in-process pipes (initialize, list,
 * call, a tool added and the client's re-list), run once at provisioning under
 * -XX:ArchiveClassesAtExit so that the class-data-sharing archive holds the classes every adapter
 * run loads. Nothing here is part of a matrix run.
 */
final class WarmUp {
    private WarmUp() {}

    static void run() {
        try {
            var json = McpJsonDefaults.getMapper();
            var toServer = new PipedOutputStream();
            var serverIn = new PipedInputStream(toServer, 1 << 16);
            var toClient = new PipedOutputStream();
            var clientIn = new PipedInputStream(toClient, 1 << 16);
            var tool = McpSchema.Tool.builder("a", Map.of("type", "object")).description("a1").build();
            var spec = SyncToolSpecification.builder().tool(tool)
                    .callHandler((ex, req) -> McpSchema.CallToolResult.builder().addTextContent("a:a1").build()).build();
            var server = McpServer.sync(new StdioServerTransportProvider(json, serverIn, toClient))
                    .serverInfo("warm-up", "0")
                    .capabilities(McpSchema.ServerCapabilities.builder().tools(true).prompts(true).resources(true, true).build())
                    .tools(spec).build();
            var changed = new CountDownLatch(1);
            var transport = new OwnStdioClientTransport(json, clientIn, toServer, m -> {}, m -> {});
            var client = McpClient.sync(transport).requestTimeout(Duration.ofSeconds(20))
                    .toolsChangeConsumer(l -> changed.countDown()).build();
            client.initialize();
            client.listTools();
            client.listPrompts();
            client.listResources();
            client.callTool(McpSchema.CallToolRequest.builder("a").arguments(Map.of()).build());
            var tool2 = McpSchema.Tool.builder("b", Map.of("type", "object")).description("b1").build();
            server.addTool(SyncToolSpecification.builder().tool(tool2)
                    .callHandler((ex, req) -> McpSchema.CallToolResult.builder().addTextContent("b").build()).build());
            changed.await(10, TimeUnit.SECONDS);
            server.removeTool("b");
            try {
                client.callTool(McpSchema.CallToolRequest.builder("zz").arguments(Map.of()).build());
            } catch (RuntimeException expected) {
                // an unknown tool: the error path's classes
            }
            List.of(client.listTools()).size();
            System.err.println("warm-up done");
        } catch (Exception e) {
            System.err.println("warm-up failed: " + e);
        }
        System.err.flush();
        System.exit(0);
    }
}
