package main

// Server role. One variant, `addtool` (default): the SDK's registry API, Server.AddTool / RemoveTools
// (and the prompt, resource and template counterparts), called once per op; an update is AddTool with
// the same name, which replaces the tool. The SDK sends list_changed by itself: each call arms a 10 ms
// timer per method and calls within it are merged into one notification. It has no public API to
// send list_changed by hand, so `notify` answers ok:false for the list kinds (Server.ResourceUpdated
// serves `resource_updated`). The server is pinned to LISTSYNC_ERA through
// ServerOptions.SupportedProtocolVersions; pagination is the SDK's own (ServerOptions.PageSize,
// cursors keyed by the last name sent).

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"listsync.local/adapters/internal/control"
)

type goServer struct {
	ctl   *control.Control
	srv   *mcp.Server
	model *control.Catalog
	gates *control.Gates
	// mu serialises batches: one batch's SDK calls and model updates are not interleaved with another's.
	mu sync.Mutex
}

func runServer(ctl *control.Control, env *control.Env, version string) error {
	variant := env.Variant
	if variant == "" {
		variant = "addtool"
	}
	if variant != "addtool" {
		return fmt.Errorf("unknown LISTSYNC_VARIANT '%s' (addtool)", variant)
	}
	if env.Era != "2025-11-25" && env.Era != "2026-07-28" {
		return fmt.Errorf("unknown LISTSYNC_ERA '%s'", env.Era)
	}
	caps := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true},
	}
	opts := &mcp.ServerOptions{
		Capabilities:              caps,
		PageSize:                  env.PageSize, // 0: the SDK's default
		SupportedProtocolVersions: []string{env.Era},
		SubscribeHandler:          func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler:        func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}
	s := &goServer{
		ctl:   ctl,
		srv:   mcp.NewServer(&mcp.Implementation{Name: "listsync-go-sdk-server", Version: "0.1.0"}, opts),
		model: control.NewCatalog(),
		gates: control.NewGates(ctl),
	}
	// Initial catalog, before the transport starts (no session: nothing is sent).
	if err := s.model.Check(env.Initial); err != nil {
		return fmt.Errorf("LISTSYNC_INITIAL: %v", err)
	}
	if err := s.applyOps(env.Initial); err != nil {
		return err
	}

	ctl.On("mutate", func(c *control.Cmd) (map[string]any, error) {
		ops, err := control.ParseOps(c.Fields["ops"])
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err := s.model.Check(ops); err != nil {
			return nil, err
		}
		return map[string]any{}, s.applyOps(ops)
	})
	ctl.On("notify", func(c *control.Cmd) (map[string]any, error) {
		kind, _ := c.String("kind")
		if kind == "resource_updated" {
			uri, ok := c.String("uri")
			if !ok || uri == "" {
				return nil, fmt.Errorf("notify resource_updated needs uri")
			}
			return map[string]any{}, s.srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
		if !control.IsKind(kind) {
			return nil, fmt.Errorf("unknown kind '%s'", kind)
		}
		return nil, fmt.Errorf("go-sdk has no API to send a list_changed notification by hand: Server.AddTool/RemoveTools (and the prompt and resource counterparts) send it by themselves")
	})
	ctl.On("catalog", func(c *control.Cmd) (map[string]any, error) {
		kind, err := c.Kind()
		if err != nil {
			return nil, err
		}
		// The SDK exposes no getter for its registry; the model mirrors each registry call, in the
		// SDK's list order (by name).
		return map[string]any{"items": s.model.SortedList(kind)}, nil
	})
	s.gates.OnGateCommands(ctl)
	ctl.On("shutdown", func(*control.Cmd) (map[string]any, error) { return map[string]any{}, nil })

	stdout := control.NewObservedWriter(os.Stdout, func(m *control.Message) {
		if m.IsNotification() {
			ctl.Event("notified", map[string]any{"method": m.Method, "params": m.ParamsValue()})
		}
	})
	stdin := control.NewObservedReader(os.Stdin, nil, func() { ctl.Exit(0, "stdin reached EOF") })
	ss, err := s.srv.Connect(context.Background(), &mcp.IOTransport{Reader: stdin, Writer: stdout}, nil)
	if err != nil {
		return fmt.Errorf("Server.Connect: %v", err)
	}
	ctl.OnShutdown = func() { _ = ss.Close() }
	ctl.Event("ready", map[string]any{
		"impl": "go-sdk", "role": "server", "sdk": sdkModule, "sdk_version": version,
		"era_requested": env.Era, "variant": variant, "page_size": env.PageSize,
	})
	return nil
}

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

func (s *goServer) toolHandler(name, def string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		s.ctl.Event("dispatched", map[string]any{"tool": name, "present": s.model.Has("tools", name)})
		s.gates.Pass(name)
		s.ctl.Event("call_done", map[string]any{"tool": name})
		return &mcp.CallToolResult{Content: text(name + ":" + def)}, nil
	}
}

// applyOps applies ops one by one through the SDK's registry API, each followed by the model.
func (s *goServer) applyOps(ops []control.Op) error {
	for i, op := range ops {
		if err := s.applyOne(op); err != nil {
			return fmt.Errorf("the SDK refused op %d (%d applied before it): %v", i+1, i, err)
		}
		if err := s.model.Apply([]control.Op{op}); err != nil {
			return err
		}
	}
	return nil
}

func (s *goServer) applyOne(op control.Op) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	srv := s.srv
	switch op.Op {
	case "set_content":
		return nil // the model serves the text; the SDK sends nothing
	case "remove":
		switch op.Kind {
		case "tools":
			srv.RemoveTools(op.Name)
		case "prompts":
			srv.RemovePrompts(op.Name)
		case "resources":
			srv.RemoveResources(op.Name)
		case "resource_templates":
			srv.RemoveResourceTemplates(op.Name)
		}
		return nil
	}
	// add and update: Add* replaces an item of the same name.
	name, def := op.Name, op.Description
	switch op.Kind {
	case "tools":
		srv.AddTool(&mcp.Tool{Name: name, Description: def, InputSchema: map[string]any{"type": "object"}}, s.toolHandler(name, def))
	case "prompts":
		srv.AddPrompt(&mcp.Prompt{Name: name, Description: def}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name + ":" + def}}}}, nil
		})
	case "resources":
		srv.AddResource(&mcp.Resource{URI: name, Name: name, Description: def, MIMEType: "text/plain"}, s.readHandler)
	case "resource_templates":
		srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: name, Name: name, Description: def}, s.readHandler)
	}
	return nil
}

func (s *goServer) readHandler(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	if !s.model.Has("resources", uri) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: s.model.Content(uri)}}}, nil
}
