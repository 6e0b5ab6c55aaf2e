package control

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
)

// Message is the part of a JSON-RPC line the adapters look at.
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// IsNotification reports whether m is a notification (a method and no id).
func (m *Message) IsNotification() bool {
	return m.Method != "" && (len(m.ID) == 0 || string(m.ID) == "null")
}

// ParamsValue decodes the params for an event (nil when absent).
func (m *Message) ParamsValue() any {
	if len(m.Params) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.Params, &v) != nil {
		return nil
	}
	return v
}

type lineSplitter struct {
	mu  sync.Mutex
	buf []byte
	on  func(*Message)
}

func (s *lineSplitter) feed(p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return
		}
		line := bytes.TrimSpace(s.buf[:i])
		s.buf = s.buf[i+1:]
		if len(line) == 0 {
			continue
		}
		var m Message
		if json.Unmarshal(line, &m) == nil {
			s.on(&m)
		}
	}
}

// ObservedWriter passes writes through unchanged and calls on for every complete JSON-RPC line
// (after it was written).
type ObservedWriter struct {
	W  io.Writer
	sp lineSplitter
}

// NewObservedWriter wraps w.
func NewObservedWriter(w io.Writer, on func(*Message)) *ObservedWriter {
	return &ObservedWriter{W: w, sp: lineSplitter{on: on}}
}

func (o *ObservedWriter) Write(p []byte) (int, error) {
	n, err := o.W.Write(p)
	o.sp.feed(p[:n])
	return n, err
}

// Close does nothing: stdout stays open until the process exits.
func (o *ObservedWriter) Close() error { return nil }

// ObservedReader passes reads through unchanged, calls on for every complete JSON-RPC line read
// (before the SDK sees it), and onEOF once when the underlying reader ends.
type ObservedReader struct {
	R     io.Reader
	sp    lineSplitter
	onEOF func()
	once  sync.Once
}

// NewObservedReader wraps r.
func NewObservedReader(r io.Reader, on func(*Message), onEOF func()) *ObservedReader {
	if on == nil {
		on = func(*Message) {}
	}
	return &ObservedReader{R: r, sp: lineSplitter{on: on}, onEOF: onEOF}
}

func (o *ObservedReader) Read(p []byte) (int, error) {
	n, err := o.R.Read(p)
	if n > 0 {
		o.sp.feed(p[:n])
	}
	if err != nil && o.onEOF != nil {
		o.once.Do(func() { go o.onEOF() })
	}
	return n, err
}

// Close does nothing (stdin ends with the process).
func (o *ObservedReader) Close() error { return nil }

// ListChangedKind maps a list_changed method to its kind ("" for other methods).
func ListChangedKind(method string) string {
	switch method {
	case "notifications/tools/list_changed":
		return "tools"
	case "notifications/prompts/list_changed":
		return "prompts"
	case "notifications/resources/list_changed":
		return "resources"
	}
	return ""
}

// IsListRequest maps a list method to its kind ("" otherwise).
func ListMethodKind(method string) string {
	switch method {
	case "tools/list":
		return "tools"
	case "prompts/list":
		return "prompts"
	case "resources/list":
		return "resources"
	case "resources/templates/list":
		return "resource_templates"
	}
	return ""
}

// HasCursor reports whether a request's params carry a non-empty cursor.
func HasCursor(params json.RawMessage) bool {
	var p struct {
		Cursor *string `json:"cursor"`
	}
	if json.Unmarshal(params, &p) != nil || p.Cursor == nil {
		return false
	}
	return strings.TrimSpace(*p.Cursor) != ""
}

// Unmarshal decodes raw JSON (an absent field is an error).
func Unmarshal(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		return io.ErrUnexpectedEOF
	}
	return json.Unmarshal(raw, v)
}
