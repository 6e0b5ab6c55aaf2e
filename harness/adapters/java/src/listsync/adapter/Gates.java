package listsync.adapter;

import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/** gate_call arms a gate for the next invocation of a tool; the tool handler parks on it until release. */
final class Gates {
    private final Control ctl;
    private long next = 1;
    private final Map<String, ArrayDeque<Long>> armed = new HashMap<>();
    private final Map<Long, CountDownLatch> latches = new HashMap<>();

    Gates(Control ctl) {
        this.ctl = ctl;
        ctl.on("gate_call", cmd -> Map.of("gate", arm(Control.str(cmd, "tool"))));
        ctl.on("release", cmd -> {
            Object g = cmd.get("gate");
            if (!(g instanceof Number n)) throw new Control.CommandError("release needs gate: N");
            release(n.longValue());
            return Map.of();
        });
    }

    synchronized long arm(String tool) {
        if (tool == null || tool.isEmpty()) throw new Control.CommandError("gate_call needs a tool name");
        long id = next++;
        armed.computeIfAbsent(tool, t -> new ArrayDeque<>()).add(id);
        latches.put(id, new CountDownLatch(1));
        return id;
    }

    synchronized void release(long id) {
        CountDownLatch l = latches.get(id);
        if (l == null || l.getCount() == 0) throw new Control.CommandError("unknown gate " + id);
        l.countDown();
    }

    /** Called by a tool handler after dispatch: parks if a gate is armed for the tool. */
    void pass(String tool) throws InterruptedException {
        long id;
        CountDownLatch l;
        synchronized (this) {
            ArrayDeque<Long> q = armed.get(tool);
            if (q == null || q.isEmpty()) return;
            id = q.poll();
            l = latches.get(id);
        }
        ctl.event("call_parked", Map.of("tool", tool, "gate", id));
        l.await();
    }
}
