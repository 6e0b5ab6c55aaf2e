//! An incremental, bounded reader of `text/event-stream` bodies (the WHATWG server-sent events
//! format, as MCP's Streamable HTTP uses it): bytes are fed as they arrive, in chunks cut
//! anywhere, and each event is handed over the moment its terminating blank line is read, so the
//! recorder can log it before forwarding the chunk that completes it. Lines end with `\n`,
//! `\r\n` or `\r` (a `\r\n` cut between two chunks is one line end); `data:` lines are joined
//! with `\n`; comments (`:`) and the `event`, `id` and `retry` fields are read over; an event
//! whose data is empty (a priming event that only carries an `id`) is no message and is not
//! handed over; an event cut short by the end of the stream is discarded, as a client does.
//!
//! Memory is bounded: at most [`MAX_LINE_BYTES`] of an event's data (and of one line) are
//! kept; a longer event is handed over with its full length so that it is logged as too long.

use crate::log::MAX_LINE_BYTES;

/// The longest line kept: a `data:` field name, its separator and [`MAX_LINE_BYTES`] of value.
const MAX_KEPT_LINE: usize = MAX_LINE_BYTES + 8;

/// One event's data as it completed.
#[derive(Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The data kept (the whole data when `len == data.len()`).
    pub data: &'a [u8],
    /// The data's full length; more than `data.len()` when it was longer than the limit.
    pub len: usize,
}

/// The reader's state between chunks.
#[derive(Debug, Default)]
pub struct SseReader {
    /// The current line's kept bytes.
    line: Vec<u8>,
    /// The current line's full length.
    line_len: usize,
    /// The current event's kept data.
    data: Vec<u8>,
    /// The current event's full data length.
    data_len: usize,
    /// Whether the current event has a `data` field.
    has_data: bool,
    /// The previous chunk ended with `\r`: a `\n` starting the next one belongs to it.
    after_cr: bool,
}

impl SseReader {
    /// Reads `chunk`, calling `on_event` for each event it completes, in order.
    pub fn feed(&mut self, chunk: &[u8], mut on_event: impl FnMut(SseEvent<'_>)) {
        let mut rest = chunk;
        if self.after_cr && !rest.is_empty() {
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
            self.after_cr = false;
        }
        while !rest.is_empty() {
            match rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
                None => {
                    self.push(rest);
                    return;
                }
                Some(i) => {
                    self.push(&rest[..i]);
                    let cr = rest[i] == b'\r';
                    rest = &rest[i + 1..];
                    self.end_line(&mut on_event);
                    if cr {
                        match rest.first() {
                            None => self.after_cr = true,
                            Some(b'\n') => rest = &rest[1..],
                            Some(_) => {}
                        }
                    }
                }
            }
        }
    }

    fn push(&mut self, part: &[u8]) {
        let keep = MAX_KEPT_LINE
            .saturating_sub(self.line.len())
            .min(part.len());
        self.line.extend_from_slice(&part[..keep]);
        self.line_len += part.len();
    }

    fn end_line(&mut self, on_event: &mut impl FnMut(SseEvent<'_>)) {
        let line = std::mem::take(&mut self.line);
        let line_len = std::mem::take(&mut self.line_len);
        if line_len == 0 {
            if self.has_data && self.data_len > 0 {
                on_event(SseEvent {
                    data: &self.data,
                    len: self.data_len,
                });
            }
            self.data.clear();
            self.data_len = 0;
            self.has_data = false;
        } else if line[0] != b':' {
            let (field, value_at) = match line.iter().position(|b| *b == b':') {
                Some(c) if line.get(c + 1) == Some(&b' ') => (&line[..c], c + 2),
                Some(c) => (&line[..c], c + 1),
                None => (&line[..], line.len()),
            };
            if field == b"data" {
                let value = &line[value_at.min(line.len())..];
                let full = line_len - value_at.min(line_len);
                if self.has_data {
                    self.keep_data(b"\n", 1);
                }
                self.keep_data(value, full);
                self.has_data = true;
            }
        }
        // The line's buffer is reused for the next one.
        self.line = line;
        self.line.clear();
    }

    fn keep_data(&mut self, bytes: &[u8], full: usize) {
        let keep = MAX_LINE_BYTES
            .saturating_sub(self.data.len())
            .min(bytes.len());
        self.data.extend_from_slice(&bytes[..keep]);
        self.data_len += full;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event's (data, len) after feeding `chunks` in order.
    fn events(chunks: &[&[u8]]) -> Vec<(String, usize)> {
        let mut r = SseReader::default();
        let mut out = Vec::new();
        for c in chunks {
            r.feed(c, |e| {
                out.push((String::from_utf8_lossy(e.data).into_owned(), e.len))
            });
        }
        out
    }

    #[test]
    fn events_end_at_a_blank_line_whatever_the_line_ends() {
        let text = b"data: {\"a\":1}\n\nid: 7\r\ndata:{\"b\":2}\r\n\r\nevent: message\rdata: x\rdata: y\r\r";
        let want = vec![
            ("{\"a\":1}".to_owned(), 7),
            ("{\"b\":2}".to_owned(), 7),
            ("x\ny".to_owned(), 3),
        ];
        assert_eq!(events(&[text]), want);
        // The same bytes cut at every position, and one byte at a time.
        for cut in 0..text.len() {
            assert_eq!(events(&[&text[..cut], &text[cut..]]), want, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(events(&bytes), want);
    }

    #[test]
    fn an_event_is_handed_over_only_when_its_blank_line_arrives() {
        let mut r = SseReader::default();
        let mut n = 0;
        r.feed(b"data: {}\n", |_| n += 1);
        assert_eq!(n, 0);
        r.feed(b"\r", |_| n += 1);
        assert_eq!(n, 1, "a lone CR ends the line at once");
        r.feed(b"\n", |_| n += 1);
        assert_eq!(n, 1, "the LF after a CR is the same line end");
    }

    #[test]
    fn comments_priming_events_and_a_cut_last_event_are_no_messages() {
        let got =
            events(&[b": keep-alive\n\nid: 0\ndata:\n\nid: 1\n\ndata: {\"c\":3}\n\ndata: half"]);
        assert_eq!(got, vec![("{\"c\":3}".to_owned(), 7)]);
    }

    #[test]
    fn a_field_without_colon_and_without_space_are_read_as_the_standard_says() {
        let got = events(&[b"data\ndata:x\n\n"]);
        assert_eq!(got, vec![("\nx".to_owned(), 2)]);
    }

    #[test]
    fn an_oversized_event_keeps_a_bounded_prefix_and_its_full_length() {
        let mut r = SseReader::default();
        let mut got = Vec::new();
        r.feed(b"data: ", |_| {});
        let block = vec![b'x'; 1 << 20];
        for _ in 0..9 {
            r.feed(&block, |_| {});
        }
        r.feed(b"\n\n", |e| got.push((e.data.len(), e.len)));
        assert_eq!(got, vec![(MAX_LINE_BYTES, 9 << 20)]);
    }
}
