package listsync.adapter;

import java.io.ByteArrayOutputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

/** Stream wrappers that observe the MCP channel without altering it. */
final class Lines {
    private Lines() {}

    /** Passes bytes through; calls {@code onEof} once when the stream ends. */
    static InputStream eofObserved(InputStream in, Runnable onEof) {
        return new FilterInputStream(in) {
            private boolean seen;

            private int check(int n) {
                if (n < 0 && !seen) {
                    seen = true;
                    Thread t = new Thread(onEof, "stdin-eof");
                    t.setDaemon(true);
                    t.start();
                }
                return n;
            }

            @Override
            public int read() throws IOException {
                return check(super.read());
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                return check(super.read(b, off, len));
            }
        };
    }

    /** Passes bytes through; calls {@code onLine} with each complete line after it was written. */
    static OutputStream lineObserved(OutputStream out, Consumer<String> onLine) {
        return new OutputStream() {
            private final ByteArrayOutputStream buf = new ByteArrayOutputStream();

            @Override
            public synchronized void write(int b) throws IOException {
                out.write(b);
                feed(b);
            }

            @Override
            public synchronized void write(byte[] b, int off, int len) throws IOException {
                out.write(b, off, len);
                for (int i = off; i < off + len; i++) feed(b[i]);
            }

            private void feed(int b) {
                if (b == '\n') {
                    String line = buf.toString(StandardCharsets.UTF_8);
                    buf.reset();
                    if (!line.isBlank()) onLine.accept(line);
                } else {
                    buf.write(b);
                }
            }

            @Override
            public void flush() throws IOException {
                out.flush();
            }
        };
    }
}
