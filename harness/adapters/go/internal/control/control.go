// Package control is the harness side plumbing shared by the Go adapters (go-sdk, mcp-go): the
// LISTSYNC_* environment, the JSON-lines control socket (one reply per command, events, commands
// run concurrently), the catalog model that validates mutate batches, call gates, and process
// exit. It imports no MCP SDK: each adapter brings its own.
package control

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Kinds of list items, in the control protocol's spelling.
var Kinds = []string{"tools", "prompts", "resources", "resource_templates"}

// IsKind reports whether k is one of Kinds.
func IsKind(k string) bool {
	for _, x := range Kinds {
		if x == k {
			return true
		}
	}
	return false
}

// Logf writes to stderr only: stdout is the MCP channel.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[listsync-adapter %s] %s\n", os.Getenv("LISTSYNC_ROLE"), fmt.Sprintf(format, args...))
}

// Env is the LISTSYNC_* environment.
type Env struct {
	Control    string
	Role       string
	Era        string
	PageSize   int
	Initial    []Op
	Variant    string
	DebounceMs *int
}

// ReadEnv reads the environment, with the protocol's defaults.
func ReadEnv() (*Env, error) {
	e := &Env{
		Control: os.Getenv("LISTSYNC_CONTROL"),
		Role:    os.Getenv("LISTSYNC_ROLE"),
		Era:     os.Getenv("LISTSYNC_ERA"),
		Variant: os.Getenv("LISTSYNC_VARIANT"),
	}
	if e.Role == "" {
		e.Role = "server"
	}
	if e.Era == "" {
		e.Era = "2025-11-25"
	}
	if s := os.Getenv("LISTSYNC_PAGE_SIZE"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("LISTSYNC_PAGE_SIZE must be a non-negative integer, got %q", s)
		}
		e.PageSize = n
	}
	if s := os.Getenv("LISTSYNC_INITIAL"); s != "" {
		ops, err := ParseOps(json.RawMessage(s))
		if err != nil {
			return nil, fmt.Errorf("LISTSYNC_INITIAL: %v", err)
		}
		e.Initial = ops
	}
	if s := os.Getenv("LISTSYNC_DEBOUNCE_MS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("LISTSYNC_DEBOUNCE_MS must be an integer, got %q", s)
		}
		e.DebounceMs = &n
	}
	return e, nil
}

// Cmd is one command from the harness.
type Cmd struct {
	ID     any
	Name   string
	Fields map[string]json.RawMessage
}

// String returns a string field ("" when absent or not a string).
func (c *Cmd) String(k string) (string, bool) {
	raw, ok := c.Fields[k]
	if !ok {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// Kind returns the `kind` field, checked against Kinds.
func (c *Cmd) Kind() (string, error) {
	k, _ := c.String("kind")
	if !IsKind(k) {
		return "", fmt.Errorf("unknown kind '%s'", k)
	}
	return k, nil
}

// Int returns an integer field.
func (c *Cmd) Int(k string) (int64, bool) {
	raw, ok := c.Fields[k]
	if !ok {
		return 0, false
	}
	var n int64
	if json.Unmarshal(raw, &n) != nil {
		return 0, false
	}
	return n, true
}

// Error is a command failure carrying extra reply fields (a JSON-RPC `code`).
type Error struct {
	Msg    string
	Fields map[string]any
}

func (e *Error) Error() string { return e.Msg }

// RPCError is a failed SDK request: the reply carries its JSON-RPC code.
func RPCError(code int64, msg string) error {
	return &Error{Msg: msg, Fields: map[string]any{"code": code}}
}

// Handler runs one command; its map is merged into the ok reply.
type Handler func(*Cmd) (map[string]any, error)

// Control is the adapter's end of the control socket.
type Control struct {
	conn     net.Conn
	out      chan []byte
	mu       sync.Mutex
	handlers map[string]Handler
	flushed  chan struct{}
	exitOnce sync.Once
	// OnShutdown runs before the process exits (bounded).
	OnShutdown func()
}

// Connect dials the harness's socket.
func Connect(path string) (*Control, error) {
	if path == "" {
		return nil, errors.New("LISTSYNC_CONTROL is not set (path of the harness control socket)")
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	c := &Control{conn: conn, out: make(chan []byte, 4096), handlers: map[string]Handler{}, flushed: make(chan struct{})}
	go c.writer()
	return c, nil
}

func (c *Control) writer() {
	defer close(c.flushed)
	for line := range c.out {
		if _, err := c.conn.Write(line); err != nil {
			// Keep draining so senders never block.
			for range c.out {
			}
			return
		}
	}
}

func (c *Control) write(obj map[string]any) {
	b, err := json.Marshal(obj)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"type": "event", "event": "log", "message": "unserializable message: " + err.Error()})
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.out == nil {
		return
	}
	c.out <- append(b, '\n')
}

// Event sends an unsolicited event.
func (c *Control) Event(name string, fields map[string]any) {
	m := map[string]any{"type": "event", "event": name}
	for k, v := range fields {
		m[k] = v
	}
	c.write(m)
}

// Log sends a `log` event (and writes it to stderr).
func (c *Control) Log(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	Logf("%s", msg)
	c.Event("log", map[string]any{"message": msg})
}

func (c *Control) reply(id any, ok bool, fields map[string]any) {
	m := map[string]any{"type": "reply", "id": id, "ok": ok}
	for k, v := range fields {
		m[k] = v
	}
	c.write(m)
}

// On registers a command handler.
func (c *Control) On(name string, h Handler) {
	c.mu.Lock()
	c.handlers[name] = h
	c.mu.Unlock()
}

// Serve reads commands until the socket closes, then exits the process with status 0.
func (c *Control) Serve() {
	r := bufio.NewReaderSize(c.conn, 1<<16)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			c.handleLine(line)
		}
		if err != nil {
			c.Exit(0, "control socket closed")
			return
		}
	}
}

func (c *Control) handleLine(line []byte) {
	trimmed := line
	for len(trimmed) > 0 && (trimmed[len(trimmed)-1] == '\n' || trimmed[len(trimmed)-1] == '\r') {
		trimmed = trimmed[:len(trimmed)-1]
	}
	if len(trimmed) == 0 {
		return
	}
	var any0 any
	if err := json.Unmarshal(trimmed, &any0); err != nil {
		c.reply(nil, false, map[string]any{"error": "invalid JSON: " + err.Error()})
		return
	}
	obj, isObj := any0.(map[string]any)
	var id any
	if isObj {
		id = obj["id"]
	}
	name, _ := obj["cmd"].(string)
	if !isObj || obj["type"] != "cmd" || name == "" {
		c.reply(id, false, map[string]any{"error": `expected {"type":"cmd","id":N,"cmd":"..."}`})
		return
	}
	var fields map[string]json.RawMessage
	_ = json.Unmarshal(trimmed, &fields)
	c.mu.Lock()
	h := c.handlers[name]
	c.mu.Unlock()
	if h == nil {
		c.reply(id, false, map[string]any{"error": fmt.Sprintf("unknown command '%s'", name)})
		return
	}
	cmd := &Cmd{ID: id, Name: name, Fields: fields}
	// Commands run concurrently (a parked call must not block the release that frees it).
	go func() {
		extra, err := runHandler(h, cmd)
		if err != nil {
			fields := map[string]any{"error": err.Error()}
			var ce *Error
			if errors.As(err, &ce) {
				for k, v := range ce.Fields {
					fields[k] = v
				}
			}
			c.reply(id, false, fields)
			return
		}
		c.reply(id, true, extra)
		if name == "shutdown" {
			c.Exit(0, "shutdown command")
		}
	}()
}

// runHandler turns a panic inside a handler (an SDK's or ours) into an error reply.
func runHandler(h Handler, cmd *Cmd) (extra map[string]any, err error) {
	defer func() {
		if r := recover(); r != nil {
			extra = nil
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return h(cmd)
}

// Exit flushes the socket, runs OnShutdown, and ends the process. Idempotent.
func (c *Control) Exit(code int, reason string) {
	c.exitOnce.Do(func() {
		Logf("exiting: %s", reason)
		done := make(chan struct{})
		go func() {
			if c.OnShutdown != nil {
				c.OnShutdown()
			}
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
		}
		c.mu.Lock()
		close(c.out)
		c.out = nil
		c.mu.Unlock()
		select {
		case <-c.flushed:
		case <-time.After(2 * time.Second):
		}
		_ = c.conn.Close()
		os.Exit(code)
	})
	// Another goroutine is exiting: wait for it.
	select {}
}

// Fail reports a start-up failure and exits with status 2.
func Fail(c *Control, err error) {
	Logf("start-up failed: %v", err)
	if c == nil {
		os.Exit(2)
	}
	c.Event("log", map[string]any{"message": "start-up failed: " + err.Error()})
	c.Exit(2, "start-up failed")
}
