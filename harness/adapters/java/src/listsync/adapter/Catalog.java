package listsync.adapter;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An insertion-ordered model of the catalog: validates a mutate batch before the SDK sees any of it
 * (a batch that would fail is refused whole), and keeps resource contents. Also the op parser.
 */
final class Catalog {
    record Op(String op, String kind, String name, String description, String uri, String text) {}

    private final Map<String, LinkedHashMap<String, String>> items = new HashMap<>();
    private final Map<String, String> contents = new HashMap<>();

    Catalog() {
        for (String k : Control.KINDS) items.put(k, new LinkedHashMap<>());
    }

    private Catalog copy() {
        Catalog c = new Catalog();
        items.forEach((k, m) -> c.items.put(k, new LinkedHashMap<>(m)));
        c.contents.putAll(contents);
        return c;
    }

    /** Parses and shape-checks a JSON array of ops (not the registry state). */
    @SuppressWarnings("unchecked")
    static List<Op> parse(Object raw) {
        if (!(raw instanceof List<?> list)) throw new Control.CommandError("mutate needs ops: [...]");
        List<Op> ops = new ArrayList<>();
        for (Object o : list) {
            if (!(o instanceof Map)) throw new Control.CommandError("op must be an object");
            Map<String, Object> m = (Map<String, Object>) o;
            String op = Control.str(m, "op");
            String kind = Control.str(m, "kind");
            String name = Control.str(m, "name");
            Object desc = m.get("description");
            if (desc != null && !(desc instanceof String)) throw new Control.CommandError("op.description must be a string");
            if ("add".equals(op) || "update".equals(op) || "remove".equals(op)) {
                if (kind == null || !Control.KINDS.contains(kind)) throw new Control.CommandError("unknown kind '" + kind + "'");
                if (name == null || name.isEmpty()) throw new Control.CommandError("op.name must be a non-empty string");
                ops.add(new Op(op, kind, name, desc == null ? "" : (String) desc, null, null));
            } else if ("set_content".equals(op)) {
                String uri = Control.str(m, "uri");
                String text = Control.str(m, "text");
                if (uri == null || uri.isEmpty()) throw new Control.CommandError("op.uri must be a non-empty string");
                if (text == null) throw new Control.CommandError("op.text must be a string");
                ops.add(new Op(op, null, null, null, uri, text));
            } else {
                throw new Control.CommandError("unknown op '" + op + "'");
            }
        }
        return ops;
    }

    private void applyUnchecked(List<Op> ops) {
        for (Op op : ops) {
            if (op.op().equals("set_content")) {
                contents.put(op.uri(), op.text());
                continue;
            }
            LinkedHashMap<String, String> m = items.get(op.kind());
            boolean exists = m.containsKey(op.name());
            switch (op.op()) {
                case "add" -> {
                    if (exists) throw new Control.CommandError(op.kind() + " '" + op.name() + "' already exists");
                    m.put(op.name(), op.description());
                }
                case "remove" -> {
                    if (!exists) throw new Control.CommandError(op.kind() + " '" + op.name() + "' does not exist");
                    m.remove(op.name());
                }
                default -> {
                    if (!exists) throw new Control.CommandError(op.kind() + " '" + op.name() + "' does not exist");
                    m.put(op.name(), op.description());
                }
            }
        }
    }

    synchronized void check(List<Op> ops) {
        copy().applyUnchecked(ops);
    }

    synchronized void apply(List<Op> ops) {
        applyUnchecked(ops);
    }

    synchronized boolean has(String kind, String name) {
        return items.get(kind).containsKey(name);
    }

    synchronized String content(String uri) {
        return contents.getOrDefault(uri, "");
    }

    synchronized List<Map<String, Object>> list(String kind) {
        List<Map<String, Object>> out = new ArrayList<>();
        items.get(kind).forEach((n, d) -> out.add(item(n, d)));
        return out;
    }

    static Map<String, Object> item(String name, String description) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", name);
        m.put("description", description == null ? "" : description);
        return m;
    }
}
