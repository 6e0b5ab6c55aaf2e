package listsync.adapter;

import io.modelcontextprotocol.json.McpJsonDefaults;
import io.modelcontextprotocol.json.TypeRef;

import java.util.List;

/** The LISTSYNC_* environment. */
record Env(String role, String era, int pageSize, List<Catalog.Op> initial, String variant) {
    static Env read() throws Exception {
        String role = orDefault(System.getenv("LISTSYNC_ROLE"), "server");
        String era = orDefault(System.getenv("LISTSYNC_ERA"), "2025-11-25");
        int pageSize = 0;
        String ps = System.getenv("LISTSYNC_PAGE_SIZE");
        if (ps != null && !ps.isEmpty()) {
            try {
                pageSize = Integer.parseInt(ps);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("LISTSYNC_PAGE_SIZE must be an integer, got '" + ps + "'");
            }
        }
        List<Catalog.Op> initial = List.of();
        String init = System.getenv("LISTSYNC_INITIAL");
        if (init != null && !init.isEmpty()) {
            Object raw = McpJsonDefaults.getMapper().readValue(init, new TypeRef<Object>() {});
            initial = Catalog.parse(raw);
        }
        String variant = System.getenv("LISTSYNC_VARIANT");
        return new Env(role, era, pageSize, initial, variant == null || variant.isEmpty() ? null : variant);
    }

    private static String orDefault(String v, String d) {
        return v == null || v.isEmpty() ? d : v;
    }
}
