package main

// Client role: mcp.NewClient with ToolListChangedHandler / PromptListChangedHandler /
// ResourceListChangedHandler, connected over the process's own stdin/stdout (mcp.IOTransport) with
// ClientSessionOptions.ProtocolVersion = LISTSYNC_ERA (2026-07-28: server/discover, then the SDK opens
// one subscriptions/listen stream by itself for the kinds that have a handler and that the server
// advertises; it does not wait for the acknowledgement). Lists are read with the SDK's iterators
// (ClientSession.Tools etc.), which follow every cursor. The SDK runs notification handlers one at a
// time, in arrival order, on one goroutine.
//
// Variants (how the application reacts, both from the SDK's docs):
//   - `handler` (default): the handler re-lists the kind before it returns;
//   - `channel`: the handler only sends the kind on a buffered channel (the docs' Example_listChanged);
//     one goroutine reads it and re-lists, so the SDK may deliver further notifications meanwhile.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"listsync.local/adapters/internal/control"
)

type goClient struct {
	ctl       *control.Control
	cs        *mcp.ClientSession
	mu        sync.Mutex
	snapshots map[string][]control.Item
	listSent  map[string]*atomic.Int64
}

func runClient(ctl *control.Control, env *control.Env, version string) error {
	variant := env.Variant
	if variant == "" {
		variant = "handler"
	}
	if variant != "handler" && variant != "channel" {
		return fmt.Errorf("unknown LISTSYNC_VARIANT '%s' (handler, channel)", variant)
	}
	c := &goClient{ctl: ctl, snapshots: map[string][]control.Item{}, listSent: map[string]*atomic.Int64{}}
	for _, k := range control.Kinds {
		c.listSent[k] = &atomic.Int64{}
	}
	changed := make(chan string, 16)
	react := func(kind, method string) {
		ctl.Event("notification", map[string]any{"method": method, "params": nil})
		if variant == "handler" {
			c.relist(kind, "handler")
		} else {
			changed <- kind
		}
	}
	opts := &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			react("tools", "notifications/tools/list_changed")
		},
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			react("prompts", "notifications/prompts/list_changed")
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			react("resources", "notifications/resources/list_changed")
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			ctl.Event("notification", map[string]any{"method": "notifications/resources/updated", "params": map[string]any{"uri": req.Params.URI}})
		},
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "listsync-go-sdk-client", Version: "0.1.0"}, opts)

	// Notifications with an application handler are reported from the handler; the others (the
	// listen acknowledgement) when the SDK reads them.
	stdin := control.NewObservedReader(os.Stdin, func(m *control.Message) {
		if m.IsNotification() && control.ListChangedKind(m.Method) == "" && m.Method != "notifications/resources/updated" {
			ctl.Event("notification", map[string]any{"method": m.Method, "params": m.ParamsValue()})
		}
	}, func() { ctl.Exit(0, "stdin reached EOF") })
	stdout := control.NewObservedWriter(os.Stdout, func(m *control.Message) {
		if !m.IsNotification() && m.Method != "" {
			if k := control.ListMethodKind(m.Method); k != "" {
				c.listSent[k].Add(1)
			}
		}
	})

	c.registerCommands()
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: stdin, Writer: stdout}, &mcp.ClientSessionOptions{ProtocolVersion: env.Era})
	if err != nil {
		return fmt.Errorf("Client.Connect: %v", err)
	}
	c.mu.Lock()
	c.cs = cs
	c.mu.Unlock()
	ctl.OnShutdown = func() { _ = cs.Close() }
	if variant == "channel" {
		go func() {
			for kind := range changed {
				c.relist(kind, "channel")
			}
		}()
	}
	init := cs.InitializeResult()
	var caps *mcp.ServerCapabilities
	negotiated := ""
	if init != nil {
		caps = init.Capabilities
		negotiated = init.ProtocolVersion
	}
	ctl.Event("negotiated", map[string]any{"protocol_version": negotiated})
	ctl.Event("ready", map[string]any{
		"impl": "go-sdk", "role": "client", "sdk": sdkModule, "sdk_version": version,
		"era_requested": env.Era, "variant": variant, "server_capabilities": caps,
	})
	// Initial lists, the documented way (the iterators walk every page), for each kind offered.
	if caps != nil {
		offered := map[string]bool{"tools": caps.Tools != nil, "prompts": caps.Prompts != nil, "resources": caps.Resources != nil, "resource_templates": caps.Resources != nil}
		for _, k := range control.Kinds {
			if !offered[k] {
				continue
			}
			items, err := c.listAll(k)
			if err != nil {
				ctl.Event("refresh_failed", map[string]any{"kind": k, "error": err.Error()})
				continue
			}
			c.publish(k, items, "initial")
		}
	}
	return nil
}

func (c *goClient) session() (*mcp.ClientSession, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cs == nil {
		return nil, errors.New("the MCP session is not connected yet")
	}
	return c.cs, nil
}

func collect[T any](seq func(func(*T, error) bool), item func(*T) control.Item) ([]control.Item, error) {
	out := []control.Item{}
	var failure error
	seq(func(t *T, err error) bool {
		if err != nil {
			failure = err
			return false
		}
		out = append(out, item(t))
		return true
	})
	return out, failure
}

func (c *goClient) listAll(kind string) ([]control.Item, error) {
	cs, err := c.session()
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	switch kind {
	case "tools":
		return collect(cs.Tools(ctx, nil), func(t *mcp.Tool) control.Item { return control.Item{Name: t.Name, Description: t.Description} })
	case "prompts":
		return collect(cs.Prompts(ctx, nil), func(p *mcp.Prompt) control.Item { return control.Item{Name: p.Name, Description: p.Description} })
	case "resources":
		return collect(cs.Resources(ctx, nil), func(r *mcp.Resource) control.Item { return control.Item{Name: r.URI, Description: r.Description} })
	default:
		return collect(cs.ResourceTemplates(ctx, nil), func(r *mcp.ResourceTemplate) control.Item {
			return control.Item{Name: r.URITemplate, Description: r.Description}
		})
	}
}

func (c *goClient) publish(kind string, items []control.Item, source string) {
	c.mu.Lock()
	c.snapshots[kind] = items
	c.mu.Unlock()
	c.ctl.Event("published", map[string]any{"kind": kind, "items": items, "source": source})
}

func (c *goClient) relist(kind, source string) {
	c.ctl.Event("refresh_started", map[string]any{"kind": kind})
	items, err := c.listAll(kind)
	if err != nil {
		c.ctl.Event("refresh_failed", map[string]any{"kind": kind, "error": err.Error()})
		return
	}
	c.publish(kind, items, source)
}

func rpcErr(err error) error {
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return control.RPCError(je.Code, err.Error())
	}
	return err
}

func (c *goClient) registerCommands() {
	ctl := c.ctl
	ctl.On("snapshot", func(cmd *control.Cmd) (map[string]any, error) {
		kind, err := cmd.Kind()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		items, ok := c.snapshots[kind]
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
		before := c.listSent[kind].Load()
		items, err := c.listAll(kind)
		if err != nil {
			return nil, rpcErr(err)
		}
		c.publish(kind, items, "refresh")
		return map[string]any{"items": items, "pages": c.listSent[kind].Load() - before}, nil
	})
	ctl.On("call", func(cmd *control.Cmd) (map[string]any, error) {
		tool, ok := cmd.String("tool")
		if !ok || tool == "" {
			return nil, errors.New("call needs tool")
		}
		cs, err := c.session()
		if err != nil {
			return nil, err
		}
		args := map[string]any{}
		if raw, ok := cmd.Fields["arguments"]; ok {
			if err := control.Unmarshal(raw, &args); err != nil {
				return nil, fmt.Errorf("arguments must be an object: %v", err)
			}
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			var code any
			var je *jsonrpc.Error
			if errors.As(err, &je) {
				code = je.Code
			}
			ctl.Event("call_done", map[string]any{"tool": tool, "is_error": true, "code": code})
			return nil, rpcErr(err)
		}
		var sb strings.Builder
		for _, ct := range res.Content {
			if t, ok := ct.(*mcp.TextContent); ok {
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
		cs, err := c.session()
		if err != nil {
			return nil, err
		}
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: uri}); err != nil {
			return nil, rpcErr(err)
		}
		return map[string]any{}, nil
	})
	ctl.On("listen", func(cmd *control.Cmd) (map[string]any, error) {
		var kinds []string
		_ = control.Unmarshal(cmd.Fields["kinds"], &kinds)
		for _, k := range kinds {
			if k != "tools" && k != "prompts" && k != "resources" {
				return nil, fmt.Errorf("unknown kind '%s' for listen", k)
			}
		}
		return nil, errors.New("go-sdk has no public subscriptions/listen API: on 2026-07-28 Client.Connect opens one stream by itself for the kinds that have a list-changed handler")
	})
	ctl.On("shutdown", func(*control.Cmd) (map[string]any, error) { return map[string]any{}, nil })
}
