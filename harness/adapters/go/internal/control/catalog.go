package control

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Op is one mutate op.
type Op struct {
	Op          string
	Kind        string
	Name        string
	Description string
	URI         string
	Text        string
}

type rawOp struct {
	Op          *string `json:"op"`
	Kind        *string `json:"kind"`
	Name        *string `json:"name"`
	Description *string `json:"description"`
	URI         *string `json:"uri"`
	Text        *string `json:"text"`
}

// ParseOps checks the shape of a JSON array of ops (not the registry state).
func ParseOps(raw json.RawMessage) ([]Op, error) {
	if len(raw) == 0 {
		return nil, errors.New("mutate needs ops: [...]")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, errors.New("ops must be a JSON array of ops")
	}
	ops := make([]Op, 0, len(items))
	for _, it := range items {
		var r rawOp
		if err := json.Unmarshal(it, &r); err != nil {
			return nil, fmt.Errorf("malformed op %s: %v", string(it), err)
		}
		op, err := r.check()
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, nil
}

func str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func (r rawOp) check() (Op, error) {
	op := Op{Op: str(r.Op), Kind: str(r.Kind), Name: str(r.Name), Description: str(r.Description), URI: str(r.URI), Text: str(r.Text)}
	switch op.Op {
	case "add", "update", "remove":
		if !IsKind(op.Kind) {
			return op, fmt.Errorf("unknown kind '%s'", op.Kind)
		}
		if op.Name == "" {
			return op, errors.New("op.name must be a non-empty string")
		}
	case "set_content":
		if op.URI == "" {
			return op, errors.New("op.uri must be a non-empty string")
		}
		if r.Text == nil {
			return op, errors.New("op.text must be a string")
		}
	default:
		return op, fmt.Errorf("unknown op '%s'", op.Op)
	}
	return op, nil
}

// Item is a list item as the control protocol shows it.
type Item struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

type ordered struct {
	names []string
	defs  map[string]string
}

// Catalog is an insertion-ordered model of the catalog: it validates a batch before the SDK sees
// any of it (a batch that would fail is refused whole) and keeps resource contents.
type Catalog struct {
	mu       sync.Mutex
	items    map[string]*ordered
	contents map[string]string
}

// NewCatalog returns an empty catalog.
func NewCatalog() *Catalog {
	c := &Catalog{items: map[string]*ordered{}, contents: map[string]string{}}
	for _, k := range Kinds {
		c.items[k] = &ordered{defs: map[string]string{}}
	}
	return c
}

func (c *Catalog) clone() *Catalog {
	d := NewCatalog()
	for k, o := range c.items {
		d.items[k].names = append([]string(nil), o.names...)
		for n, v := range o.defs {
			d.items[k].defs[n] = v
		}
	}
	for u, t := range c.contents {
		d.contents[u] = t
	}
	return d
}

func (c *Catalog) apply(ops []Op) error {
	for _, op := range ops {
		if op.Op == "set_content" {
			c.contents[op.URI] = op.Text
			continue
		}
		o := c.items[op.Kind]
		_, exists := o.defs[op.Name]
		switch op.Op {
		case "add":
			if exists {
				return fmt.Errorf("%s '%s' already exists", op.Kind, op.Name)
			}
			o.names = append(o.names, op.Name)
			o.defs[op.Name] = op.Description
		case "remove":
			if !exists {
				return fmt.Errorf("%s '%s' does not exist", op.Kind, op.Name)
			}
			delete(o.defs, op.Name)
			for i, n := range o.names {
				if n == op.Name {
					o.names = append(o.names[:i], o.names[i+1:]...)
					break
				}
			}
		case "update":
			if !exists {
				return fmt.Errorf("%s '%s' does not exist", op.Kind, op.Name)
			}
			o.defs[op.Name] = op.Description
		}
	}
	return nil
}

// Check reports whether the batch fits the current state, applying nothing.
func (c *Catalog) Check(ops []Op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clone().apply(ops)
}

// Apply applies a batch that Check accepted.
func (c *Catalog) Apply(ops []Op) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.apply(ops)
}

// List returns a kind's items in insertion order.
func (c *Catalog) List(kind string) []Item {
	c.mu.Lock()
	defer c.mu.Unlock()
	o := c.items[kind]
	out := make([]Item, 0, len(o.names))
	for _, n := range o.names {
		out = append(out, Item{Name: n, Description: o.defs[n]})
	}
	return out
}

// SortedList returns a kind's items ordered by name (the order both Go SDKs list in).
func (c *Catalog) SortedList(kind string) []Item {
	items := c.List(kind)
	sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
	return items
}

// Has reports whether a kind holds a name.
func (c *Catalog) Has(kind, name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[kind].defs[name]
	return ok
}

// Def returns an item's description.
func (c *Catalog) Def(kind, name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[kind].defs[name]
}

// Content returns a resource's text.
func (c *Catalog) Content(uri string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.contents[uri]
}

// Gates parks the next invocation of an armed tool inside its handler until released.
type Gates struct {
	ctl      *Control
	mu       sync.Mutex
	next     int64
	armed    map[string][]int64
	chans    map[int64]chan struct{}
	released map[int64]bool
}

// NewGates returns an empty gate table.
func NewGates(ctl *Control) *Gates {
	return &Gates{ctl: ctl, next: 1, armed: map[string][]int64{}, chans: map[int64]chan struct{}{}, released: map[int64]bool{}}
}

// Arm arms a gate for the next call of tool.
func (g *Gates) Arm(tool string) (int64, error) {
	if tool == "" {
		return 0, errors.New("gate_call needs a tool name")
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	id := g.next
	g.next++
	g.armed[tool] = append(g.armed[tool], id)
	g.chans[id] = make(chan struct{})
	return id, nil
}

// Release lets a parked (or not yet parked) call through.
func (g *Gates) Release(id int64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.chans[id]
	if !ok || g.released[id] {
		return fmt.Errorf("unknown gate %d", id)
	}
	g.released[id] = true
	close(ch)
	return nil
}

// Pass is called by a tool handler after dispatch: it parks if a gate is armed for the tool.
func (g *Gates) Pass(tool string) {
	g.mu.Lock()
	q := g.armed[tool]
	if len(q) == 0 {
		g.mu.Unlock()
		return
	}
	id := q[0]
	g.armed[tool] = q[1:]
	ch := g.chans[id]
	g.mu.Unlock()
	g.ctl.Event("call_parked", map[string]any{"tool": tool, "gate": id})
	<-ch
}

// OnGateCommands registers gate_call and release.
func (g *Gates) OnGateCommands(ctl *Control) {
	ctl.On("gate_call", func(c *Cmd) (map[string]any, error) {
		tool, _ := c.String("tool")
		id, err := g.Arm(tool)
		if err != nil {
			return nil, err
		}
		return map[string]any{"gate": id}, nil
	})
	ctl.On("release", func(c *Cmd) (map[string]any, error) {
		id, ok := c.Int("gate")
		if !ok {
			return nil, errors.New("release needs gate: N")
		}
		return map[string]any{}, g.Release(id)
	})
}
