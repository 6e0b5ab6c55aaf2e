package listsync.adapter;

import io.modelcontextprotocol.json.McpJsonMapper;
import io.modelcontextprotocol.json.TypeRef;
import io.modelcontextprotocol.spec.McpClientTransport;
import io.modelcontextprotocol.spec.McpSchema;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * A client transport over this process's own stdin/stdout. The SDK's StdioClientTransport only
 * spawns a server process; this one does what it does with that process's pipes: one thread reads
 * lines into an inbound sink that is handled with {@code flatMap} (messages are not serialised), and
 * one thread writes. {@code onInbound} sees each message just before the SDK does, {@code onOutbound}
 * each message after it was written.
 */
final class OwnStdioClientTransport implements McpClientTransport {
    private final McpJsonMapper json;
    private final InputStream in;
    private final OutputStream out;
    private final Consumer<McpSchema.JSONRPCMessage> onInbound;
    private final Consumer<McpSchema.JSONRPCMessage> onOutbound;
    private final Sinks.Many<McpSchema.JSONRPCMessage> inbound = Sinks.many().unicast().onBackpressureBuffer();
    private final Scheduler outbound = Schedulers.fromExecutorService(Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "outbound");
        t.setDaemon(true);
        return t;
    }), "outbound");

    OwnStdioClientTransport(McpJsonMapper json, InputStream in, OutputStream out,
            Consumer<McpSchema.JSONRPCMessage> onInbound, Consumer<McpSchema.JSONRPCMessage> onOutbound) {
        this.json = json;
        this.in = in;
        this.out = out;
        this.onInbound = onInbound;
        this.onOutbound = onOutbound;
    }

    @Override
    public Mono<Void> connect(Function<Mono<McpSchema.JSONRPCMessage>, Mono<McpSchema.JSONRPCMessage>> handler) {
        return Mono.fromRunnable(() -> {
            inbound.asFlux().flatMap(m -> Mono.just(m).transform(handler)).subscribe();
            Thread reader = new Thread(this::readLoop, "inbound");
            reader.setDaemon(true);
            reader.start();
        });
    }

    private void readLoop() {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                if (line.isBlank()) continue;
                McpSchema.JSONRPCMessage m;
                try {
                    m = McpSchema.deserializeJsonRpcMessage(json, line);
                } catch (Exception e) {
                    Control.log("unreadable inbound line: " + line);
                    continue;
                }
                onInbound.accept(m);
                inbound.tryEmitNext(m);
            }
        } catch (Exception e) {
            Control.log("stdin: " + e);
        } finally {
            inbound.tryEmitComplete();
        }
    }

    @Override
    public Mono<Void> sendMessage(McpSchema.JSONRPCMessage message) {
        return Mono.fromCallable(() -> {
            String line = json.writeValueAsString(message).replace("\r\n", "\\n").replace("\n", "\\n").replace("\r", "\\n");
            synchronized (out) {
                out.write(line.getBytes(StandardCharsets.UTF_8));
                out.write('\n');
                out.flush();
            }
            onOutbound.accept(message);
            return message;
        }).subscribeOn(outbound).then();
    }

    @Override
    public Mono<Void> closeGracefully() {
        return Mono.fromRunnable(outbound::dispose);
    }

    @Override
    public <T> T unmarshalFrom(Object data, TypeRef<T> typeRef) {
        return json.convertValue(data, typeRef);
    }
}
