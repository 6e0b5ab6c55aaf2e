package main

// Server role: server.NewMCPServer with WithToolCapabilities(true), WithPromptCapabilities(true),
// WithResourceCapabilities(true, true) and, when LISTSYNC_PAGE_SIZE > 0, WithPaginationLimit (cursors
// are the base64 of the last name sent; lists are sorted by name), served by
// server.NewStdioServer(..).Listen over the process's own stdin/stdout. The SDK decides the era from
// the client's first request.
//
// Variants (the SDK's two registry styles):
//   - `addtool` (default): one call per op: AddTool / DeleteTools, AddPrompt / DeletePrompts,
//     AddResource / RemoveResource, AddResourceTemplate (an update is Add* with the same name). Each
//     call sends its list_changed at once; there is no API to remove a resource template (ok:false).
//   - `settools`: one SetTools / SetPrompts / SetResources / SetResourceTemplates per touched kind and
//     batch, with the whole new list: one notification per kind and batch.
//
// `notify` uses MCPServer.SendNotificationToAllClients, the SDK's explicit API.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"listsync.local/adapters/internal/control"
)

type mcpGoServer struct {
	ctl     *control.Control
	srv     *server.MCPServer
	model   *control.Catalog
	gates   *control.Gates
	variant string
	mu      sync.Mutex
}

var listChangedMethod = map[string]string{
	"tools":              mcp.MethodNotificationToolsListChanged,
	"prompts":            "notifications/prompts/list_changed",
	"resources":          mcp.MethodNotificationResourcesListChanged,
	"resource_templates": mcp.MethodNotificationResourcesListChanged,
}

func runServer(ctl *control.Control, env *control.Env, version string) error {
	variant := env.Variant
	if variant == "" {
		variant = "addtool"
	}
	if variant != "addtool" && variant != "settools" {
		return fmt.Errorf("unknown LISTSYNC_VARIANT '%s' (addtool, settools)", variant)
	}
	opts := []server.ServerOption{
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
	}
	if env.PageSize > 0 {
		opts = append(opts, server.WithPaginationLimit(env.PageSize))
	}
	s := &mcpGoServer{
		ctl:     ctl,
		srv:     server.NewMCPServer("listsync-mcp-go-server", "0.1.0", opts...),
		model:   control.NewCatalog(),
		gates:   control.NewGates(ctl),
		variant: variant,
	}
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
				return nil, errors.New("notify resource_updated needs uri")
			}
			s.srv.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
			return map[string]any{}, nil
		}
		if !control.IsKind(kind) {
			return nil, fmt.Errorf("unknown kind '%s'", kind)
		}
		s.srv.SendNotificationToAllClients(listChangedMethod[kind], nil)
		return map[string]any{}, nil
	})
	ctl.On("catalog", func(c *control.Cmd) (map[string]any, error) {
		kind, err := c.Kind()
		if err != nil {
			return nil, err
		}
		return map[string]any{"items": s.catalog(kind)}, nil
	})
	s.gates.OnGateCommands(ctl)
	ctl.On("shutdown", func(*control.Cmd) (map[string]any, error) { return map[string]any{}, nil })

	stdout := control.NewObservedWriter(os.Stdout, func(m *control.Message) {
		if m.IsNotification() {
			ctl.Event("notified", map[string]any{"method": m.Method, "params": m.ParamsValue()})
		}
	})
	stdin := control.NewObservedReader(os.Stdin, nil, nil)
	ctx, cancel := context.WithCancel(context.Background())
	ctl.OnShutdown = cancel
	stdio := server.NewStdioServer(s.srv)
	go func() {
		err := stdio.Listen(ctx, stdin, stdout)
		if err != nil && ctx.Err() == nil {
			control.Logf("stdio server ended: %v", err)
		}
		ctl.Exit(0, "stdin reached EOF")
	}()
	ctl.Event("ready", map[string]any{
		"impl": "mcp-go", "role": "server", "sdk": sdkModule, "sdk_version": version,
		"era_requested": env.Era, "variant": variant, "page_size": env.PageSize,
	})
	return nil
}

// catalog reads the SDK's registry (its getters) in its list order (by name); templates have no
// getter, so the model answers for them.
func (s *mcpGoServer) catalog(kind string) []control.Item {
	out := []control.Item{}
	switch kind {
	case "tools":
		for name, t := range s.srv.ListTools() {
			out = append(out, control.Item{Name: name, Description: t.Tool.Description})
		}
	case "prompts":
		for name, p := range s.srv.ListPrompts() {
			out = append(out, control.Item{Name: name, Description: p.Prompt.Description})
		}
	case "resources":
		for uri, r := range s.srv.ListResources() {
			out = append(out, control.Item{Name: uri, Description: r.Resource.Description})
		}
	default:
		return s.model.SortedList(kind)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func (s *mcpGoServer) tool(name, def string) server.ServerTool {
	return server.ServerTool{
		Tool: mcp.NewTool(name, mcp.WithDescription(def)),
		Handler: func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.ctl.Event("dispatched", map[string]any{"tool": name, "present": s.srv.GetTool(name) != nil})
			s.gates.Pass(name)
			s.ctl.Event("call_done", map[string]any{"tool": name})
			return mcp.NewToolResultText(name + ":" + def), nil
		},
	}
}

func (s *mcpGoServer) prompt(name, def string) server.ServerPrompt {
	return server.ServerPrompt{
		Prompt: mcp.NewPrompt(name, mcp.WithPromptDescription(def)),
		Handler: func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return mcp.NewGetPromptResult(def, []mcp.PromptMessage{mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent(name+":"+def))}), nil
		},
	}
}

func (s *mcpGoServer) read(_ context.Context, req mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	uri := req.Params.URI
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: uri, MIMEType: "text/plain", Text: s.model.Content(uri)}}, nil
}

func (s *mcpGoServer) resource(uri, def string) server.ServerResource {
	return server.ServerResource{
		Resource: mcp.NewResource(uri, uri, mcp.WithResourceDescription(def), mcp.WithMIMEType("text/plain")),
		Handler:  s.read,
	}
}

func (s *mcpGoServer) template(uri, def string) server.ServerResourceTemplate {
	return server.ServerResourceTemplate{
		Template: mcp.NewResourceTemplate(uri, uri, mcp.WithTemplateDescription(def)),
		Handler:  s.read,
	}
}

func (s *mcpGoServer) applyOps(ops []control.Op) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the SDK refused the batch: %v", r)
		}
	}()
	if s.variant == "settools" {
		return s.applySet(ops)
	}
	for i, op := range ops {
		if e := s.applyOne(op); e != nil {
			return fmt.Errorf("the SDK refused op %d (%d applied before it): %v", i+1, i, e)
		}
		if e := s.model.Apply([]control.Op{op}); e != nil {
			return e
		}
	}
	return nil
}

func (s *mcpGoServer) applyOne(op control.Op) error {
	switch op.Op {
	case "set_content":
		return nil
	case "remove":
		switch op.Kind {
		case "tools":
			s.srv.DeleteTools(op.Name)
		case "prompts":
			s.srv.DeletePrompts(op.Name)
		case "resources":
			s.srv.RemoveResource(op.Name)
		default:
			return errors.New("mcp-go has no API to remove one resource template (only SetResourceTemplates)")
		}
		return nil
	}
	switch op.Kind {
	case "tools":
		t := s.tool(op.Name, op.Description)
		s.srv.AddTool(t.Tool, t.Handler)
	case "prompts":
		p := s.prompt(op.Name, op.Description)
		s.srv.AddPrompt(p.Prompt, p.Handler)
	case "resources":
		r := s.resource(op.Name, op.Description)
		s.srv.AddResource(r.Resource, r.Handler)
	default:
		t := s.template(op.Name, op.Description)
		s.srv.AddResourceTemplate(t.Template, t.Handler)
	}
	return nil
}

// applySet applies the batch to the model, then hands each touched kind's whole list to Set*.
func (s *mcpGoServer) applySet(ops []control.Op) error {
	if err := s.model.Apply(ops); err != nil {
		return err
	}
	touched := map[string]bool{}
	for _, op := range ops {
		if op.Op != "set_content" {
			touched[op.Kind] = true
		}
	}
	for _, kind := range control.Kinds {
		if !touched[kind] {
			continue
		}
		items := s.model.List(kind)
		switch kind {
		case "tools":
			all := make([]server.ServerTool, 0, len(items))
			for _, it := range items {
				all = append(all, s.tool(it.Name, it.Description))
			}
			s.srv.SetTools(all...)
		case "prompts":
			all := make([]server.ServerPrompt, 0, len(items))
			for _, it := range items {
				all = append(all, s.prompt(it.Name, it.Description))
			}
			s.srv.SetPrompts(all...)
		case "resources":
			all := make([]server.ServerResource, 0, len(items))
			for _, it := range items {
				all = append(all, s.resource(it.Name, it.Description))
			}
			s.srv.SetResources(all...)
		default:
			all := make([]server.ServerResourceTemplate, 0, len(items))
			for _, it := range items {
				all = append(all, s.template(it.Name, it.Description))
			}
			s.srv.SetResourceTemplates(all...)
		}
	}
	return nil
}
