package main

// Client role, one variant `onnotification`: client.NewClient(transport.NewIO(stdin, stdout, ..),
// client.WithProtocolVersion(LISTSYNC_ERA)), Start, OnNotification, Initialize (2026-07-28:
// server/discover; 2025-11-25: initialize). On 2026-07-28 the adapter then opens the stream with
// Client.ListenAsync for tools, prompts and resources, as the SDK's protocol page shows (it returns
// without waiting for the acknowledgement). Lists are read with Client.ListTools etc., which follow
// every cursor and stop with ErrRepeatedListCursor when a cursor repeats.
//
// The SDK calls OnNotification handlers on the goroutine that reads stdin, so a handler that waited
// for a list response would wait forever: the application re-lists in a goroutine of its own, one per
// notification (nothing orders or merges them; the SDK offers nothing to).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"listsync.local/adapters/internal/control"
)

type mcpGoClient struct {
	ctl       *control.Control
	c         *client.Client
	mu        sync.Mutex
	snapshots map[string][]control.Item
	listSent  map[string]*atomic.Int64
	ready     atomic.Bool
}

func runClient(ctl *control.Control, env *control.Env, version string) error {
	variant := env.Variant
	if variant == "" {
		variant = "onnotification"
	}
	if variant != "onnotification" {
		return fmt.Errorf("unknown LISTSYNC_VARIANT '%s' (onnotification)", variant)
	}
	mc := &mcpGoClient{ctl: ctl, snapshots: map[string][]control.Item{}, listSent: map[string]*atomic.Int64{}}
	for _, k := range control.Kinds {
		mc.listSent[k] = &atomic.Int64{}
	}
	stdin := control.NewObservedReader(os.Stdin, nil, func() { ctl.Exit(0, "stdin reached EOF") })
	stdout := control.NewObservedWriter(os.Stdout, func(m *control.Message) {
		if !m.IsNotification() && m.Method != "" {
			if k := control.ListMethodKind(m.Method); k != "" {
				mc.listSent[k].Add(1)
			}
		}
	})
	t := transport.NewIO(stdin, stdout, io.NopCloser(strings.NewReader("")))
	c := client.NewClient(t, client.WithProtocolVersion(env.Era))
	mc.c = c
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		return fmt.Errorf("Client.Start: %v", err)
	}
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		var params any
		if b, err := json.Marshal(n.Params); err == nil {
			_ = json.Unmarshal(b, &params)
		}
		ctl.Event("notification", map[string]any{"method": n.Method, "params": params})
		if kind := control.ListChangedKind(n.Method); kind != "" && mc.ready.Load() {
			go mc.relist(kind, "onNotification")
		}
	})
	mc.registerCommands()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = env.Era
	init.Params.ClientInfo = mcp.Implementation{Name: "listsync-mcp-go-client", Version: "0.1.0"}
	res, err := c.Initialize(ctx, init)
	if err != nil {
		return fmt.Errorf("Client.Initialize: %v", err)
	}
	ctl.OnShutdown = func() { _ = c.Close() }
	mc.ready.Store(true)
	var listen any
	if c.ProtocolVersion() >= "2026-07-28" {
		filter := mcp.SubscriptionFilter{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true}
		if _, err := c.ListenAsync(ctx, filter, func(err error) { ctl.Log("listen stream ended: %v", err) }); err != nil {
			ctl.Log("ListenAsync: %v", err)
		} else {
			listen = filter
		}
	}
	ctl.Event("negotiated", map[string]any{"protocol_version": c.ProtocolVersion()})
	caps := res.Capabilities
	ctl.Event("ready", map[string]any{
		"impl": "mcp-go", "role": "client", "sdk": sdkModule, "sdk_version": version,
		"era_requested": env.Era, "variant": variant, "server_capabilities": caps, "auto_listen": listen,
	})
	offered := map[string]bool{"tools": caps.Tools != nil, "prompts": caps.Prompts != nil, "resources": caps.Resources != nil, "resource_templates": caps.Resources != nil}
	for _, k := range control.Kinds {
		if !offered[k] {
			continue
		}
		items, err := mc.listAll(k)
		if err != nil {
			ctl.Event("refresh_failed", map[string]any{"kind": k, "error": err.Error()})
			continue
		}
		mc.publish(k, items, "initial")
	}
	return nil
}

func (mc *mcpGoClient) listAll(kind string) ([]control.Item, error) {
	ctx := context.Background()
	out := []control.Item{}
	switch kind {
	case "tools":
		r, err := mc.c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			return nil, err
		}
		for _, t := range r.Tools {
			out = append(out, control.Item{Name: t.Name, Description: t.Description})
		}
	case "prompts":
		r, err := mc.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
		if err != nil {
			return nil, err
		}
		for _, p := range r.Prompts {
			out = append(out, control.Item{Name: p.Name, Description: p.Description})
		}
	case "resources":
		r, err := mc.c.ListResources(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			return nil, err
		}
		for _, x := range r.Resources {
			out = append(out, control.Item{Name: x.URI, Description: x.Description})
		}
	default:
		r, err := mc.c.ListResourceTemplates(ctx, mcp.ListResourceTemplatesRequest{})
		if err != nil {
			return nil, err
		}
		for _, x := range r.ResourceTemplates {
			out = append(out, control.Item{Name: x.URITemplate.Raw(), Description: x.Description})
		}
	}
	return out, nil
}

func (mc *mcpGoClient) publish(kind string, items []control.Item, source string) {
	mc.mu.Lock()
	mc.snapshots[kind] = items
	mc.mu.Unlock()
	mc.ctl.Event("published", map[string]any{"kind": kind, "items": items, "source": source})
}

func (mc *mcpGoClient) relist(kind, source string) {
	mc.ctl.Event("refresh_started", map[string]any{"kind": kind})
	items, err := mc.listAll(kind)
	if err != nil {
		mc.ctl.Event("refresh_failed", map[string]any{"kind": kind, "error": err.Error()})
		return
	}
	mc.publish(kind, items, source)
}

// codeOf recovers the JSON-RPC code of an SDK error: mcp-go turns the standard codes into sentinel
// errors (the message is dropped), others into their message.
func codeOf(err error) any {
	for code, sentinel := range map[int]error{
		-32700: mcp.ErrParseError, -32600: mcp.ErrInvalidRequest, -32601: mcp.ErrMethodNotFound,
		-32602: mcp.ErrInvalidParams, -32603: mcp.ErrInternalError, -32002: mcp.ErrResourceNotFound,
	} {
		if errors.Is(err, sentinel) {
			return code
		}
	}
	return nil
}

func rpcErr(err error) error {
	if code, ok := codeOf(err).(int); ok {
		return control.RPCError(int64(code), err.Error())
	}
	return err
}

func (mc *mcpGoClient) registerCommands() {
	ctl := mc.ctl
	notReady := errors.New("the MCP session is not initialized yet")
	ctl.On("snapshot", func(cmd *control.Cmd) (map[string]any, error) {
		kind, err := cmd.Kind()
		if err != nil {
			return nil, err
		}
		mc.mu.Lock()
		defer mc.mu.Unlock()
		items, ok := mc.snapshots[kind]
		if !ok {
			return map[string]any{"items": nil}, nil
		}
		return map[string]any{"items": items}, nil
	})
	ctl.On("refresh", func(cmd *control.Cmd) (map[string]any, error) {
		kind, err := cmd.Kind()
		if err != nil {
			return nil, err
		}
		if !mc.ready.Load() {
			return nil, notReady
		}
		before := mc.listSent[kind].Load()
		items, err := mc.listAll(kind)
		if err != nil {
			return nil, rpcErr(err)
		}
		mc.publish(kind, items, "refresh")
		return map[string]any{"items": items, "pages": mc.listSent[kind].Load() - before}, nil
	})
	ctl.On("call", func(cmd *control.Cmd) (map[string]any, error) {
		tool, ok := cmd.String("tool")
		if !ok || tool == "" {
			return nil, errors.New("call needs tool")
		}
		if !mc.ready.Load() {
			return nil, notReady
		}
		args := map[string]any{}
		if raw, ok := cmd.Fields["arguments"]; ok {
			if err := control.Unmarshal(raw, &args); err != nil {
				return nil, fmt.Errorf("arguments must be an object: %v", err)
			}
		}
		req := mcp.CallToolRequest{}
		req.Params.Name = tool
		req.Params.Arguments = args
		res, err := mc.c.CallTool(context.Background(), req)
		if err != nil {
			ctl.Event("call_done", map[string]any{"tool": tool, "is_error": true, "code": codeOf(err)})
			return nil, rpcErr(err)
		}
		var sb strings.Builder
		for _, ct := range res.Content {
			if t, ok := mcp.AsTextContent(ct); ok {
				sb.WriteString(t.Text)
			}
		}
		ctl.Event("call_done", map[string]any{"tool": tool, "is_error": res.IsError})
		return map[string]any{"is_error": res.IsError, "text": sb.String()}, nil
	})
	ctl.On("subscribe", func(cmd *control.Cmd) (map[string]any, error) {
		uri, ok := cmd.String("uri")
		if !ok || uri == "" {
			return nil, errors.New("subscribe needs uri")
		}
		if !mc.ready.Load() {
			return nil, notReady
		}
		req := mcp.SubscribeRequest{}
		req.Params.URI = uri
		if err := mc.c.Subscribe(context.Background(), req); err != nil {
			return nil, rpcErr(err)
		}
		return map[string]any{}, nil
	})
	ctl.On("listen", func(cmd *control.Cmd) (map[string]any, error) {
		var kinds []string
		_ = control.Unmarshal(cmd.Fields["kinds"], &kinds)
		filter := mcp.SubscriptionFilter{}
		for _, k := range kinds {
			switch k {
			case "tools":
				filter.ToolsListChanged = true
			case "prompts":
				filter.PromptsListChanged = true
			case "resources":
				filter.ResourcesListChanged = true
			default:
				return nil, fmt.Errorf("unknown kind '%s' for listen", k)
			}
		}
		var uris []string
		_ = control.Unmarshal(cmd.Fields["uris"], &uris)
		filter.ResourceSubscriptions = uris
		if !mc.ready.Load() {
			return nil, notReady
		}
		// Listen blocks for the stream's life; the reply waits for nothing more than the SDK does
		// (ListenAsync returns once the request is on its way).
		if _, err := mc.c.ListenAsync(context.Background(), filter, func(err error) { ctl.Log("listen stream ended: %v", err) }); err != nil {
			return nil, rpcErr(err)
		}
		return map[string]any{"honored": nil, "note": "mcp-go exposes no acknowledgement: replied when the request was sent"}, nil
	})
	ctl.On("shutdown", func(*control.Cmd) (map[string]any, error) { return map[string]any{}, nil })
}
