package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"socialrouter/caddymodule/registry"
)

// SessionTimeout closes a session idle for this long (a client then starts
// a new one, as the protocol has it).
const SessionTimeout = time.Hour

const instructions = "Social Data Router extracts normalized records from public social and maps platforms. " +
	"Call list_services (no sign-in) to see the services, their accepted inputs and prices; each extract " +
	"service is a tool named <platform>_<service>. Calls are billed per returned record to the signed-in " +
	"account, exactly as the REST API bills them; get_balance, get_usage and get_run read the account."

// Endpoint is the /mcp endpoint: one MCP server and its streamable HTTP
// handler (sessions included), kept across config reloads; Swap replaces
// the tool set and the backend of a new config.
type Endpoint struct {
	server  *sdk.Server
	handler *sdk.StreamableHTTPHandler
	backend atomic.Pointer[Backend]
	logger  *slog.Logger

	mu        sync.Mutex        // serializes Swap and Release
	defs      map[string][]byte // tool name → its definition as registered
	cur, prev *generation       // the config serving, and the one it replaced while that still runs
}

// generation is the tools and backend of one config.
type generation struct {
	owner   any
	tools   *Toolset
	backend Backend
}

// NewEndpoint makes an endpoint with no tools; Swap gives it its tools.
func NewEndpoint(version string, logger *slog.Logger) *Endpoint {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Endpoint{defs: map[string][]byte{}, logger: logger}
	e.server = sdk.NewServer(&sdk.Implementation{Name: "social-data-router", Title: "Social Data Router", Version: version},
		&sdk.ServerOptions{
			Instructions: instructions,
			Logger:       logger,
			Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}},
		})
	e.handler = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return e.server },
		&sdk.StreamableHTTPOptions{Logger: logger, SessionTimeout: SessionTimeout,
			// The SDK refuses a request that arrived on a loopback address
			// with a Host that is not loopback (DNS rebinding of a local
			// MCP server). The gateway is a public server: a connection on
			// loopback comes from a proxy or TLS terminator on the same
			// host, whose Host is the public name, and every /mcp call
			// carries a bearer (no ambient credential for a rebinding page
			// to borrow).
			DisableLocalhostProtection: true})
	return e
}

// ServeHTTP serves the streamable HTTP transport (POST, GET, DELETE).
func (e *Endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.handler.ServeHTTP(w, r)
}

// Toolset is the tools of one registry, generated when a config is
// provisioned (so a registry whose tools cannot be made fails there).
type Toolset struct {
	tools []*tool
	defs  map[string][]byte // tool name → its encoded definition
}

// NewToolset generates the tools of reg.
func NewToolset(reg *registry.Registry) (*Toolset, error) {
	tools, err := buildTools(reg)
	if err != nil {
		return nil, fmt.Errorf("generating MCP tools: %v", err)
	}
	ts := &Toolset{tools: tools, defs: map[string][]byte{}}
	for _, t := range tools {
		def, err := json.Marshal(t.def)
		if err != nil {
			return nil, fmt.Errorf("encoding MCP tool %s: %v", t.def.Name, err)
		}
		ts.defs[t.def.Name] = def
	}
	return ts, nil
}

// Swap makes ts, calling b, the endpoint's tools, for the config owner:
// tools that changed or are new are (re)registered, tools gone are
// removed, and sessions are sent one tools/list_changed if anything
// changed. A tool call reads the backend when it starts, so a call in
// flight during a reload finishes on the config it began on.
func (e *Endpoint) Swap(owner any, ts *Toolset, b Backend) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.prev, e.cur = e.cur, &generation{owner: owner, tools: ts, backend: b}
	e.apply(ts, b)
}

// Replace gives owner's config new tools and backend in place: its
// services were recompiled without a config reload (a registry swap).
// Sessions are sent one tools/list_changed if the tools changed, as by
// Swap; a tool call in flight finishes on the backend it started with.
// When owner is not the config serving (a reload is under way), only its
// remembered generation changes, for Release to bring back.
func (e *Endpoint) Replace(owner any, ts *Toolset, b Backend) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := &generation{owner: owner, tools: ts, backend: b}
	switch {
	case e.cur != nil && e.cur.owner == owner:
		e.cur = g
		e.apply(ts, b)
	case e.prev != nil && e.prev.owner == owner:
		e.prev = g
	}
}

// Release tells the endpoint that owner's config stopped. When it is the
// config the current one replaced, that is the end of a reload; when it is
// the current one while the replaced one still runs (a reload whose start
// failed), the replaced config's tools come back.
func (e *Endpoint) Release(owner any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.prev != nil && e.prev.owner == owner:
		e.prev = nil
	case e.cur != nil && e.cur.owner == owner && e.prev != nil:
		e.cur, e.prev = e.prev, nil
		e.apply(e.cur.tools, e.cur.backend)
	}
}

// apply registers ts with backend b; e.mu is held.
func (e *Endpoint) apply(ts *Toolset, b Backend) {
	e.backend.Store(&b)
	seen := map[string]bool{}
	for _, t := range ts.tools {
		def := ts.defs[t.def.Name]
		seen[t.def.Name] = true
		if string(e.defs[t.def.Name]) == string(def) {
			continue
		}
		e.defs[t.def.Name] = def
		call := t.call
		e.server.AddTool(t.def, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			start := time.Now()
			res := call(ctx, *e.backend.Load(), req)
			e.logCall(req.Params.Name, time.Since(start), res)
			return res, nil
		})
	}
	var gone []string
	for name := range e.defs {
		if !seen[name] {
			gone = append(gone, name)
			delete(e.defs, name)
		}
	}
	if len(gone) > 0 {
		e.server.RemoveTools(gone...)
	}
}

// logCall writes one line per tool call, with the run id (or the error
// code) as REST's access log line has the request.
func (e *Endpoint) logCall(tool string, took time.Duration, res *sdk.CallToolResult) {
	attrs := []any{slog.String("tool", tool), slog.Duration("took", took), slog.Bool("is_error", res.IsError)}
	doc, _ := res.StructuredContent.(json.RawMessage)
	if res.IsError {
		var env struct {
			Error struct {
				Code  string `json:"code"`
				RunID string `json:"run_id"`
			} `json:"error"`
		}
		_ = json.Unmarshal(doc, &env)
		attrs = append(attrs, slog.String("code", env.Error.Code))
		if env.Error.RunID != "" {
			attrs = append(attrs, slog.String("run_id", env.Error.RunID))
		}
	} else if id := leadingID(doc); id != "" {
		attrs = append(attrs, slog.String("run_id", id))
	}
	e.logger.Info("tool call", attrs...)
}

// leadingID is the value of "id" when it is the first key of a run
// document (as the store encodes runs), read without decoding the records.
func leadingID(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	if k, err := dec.Token(); err != nil || k != "id" {
		return ""
	}
	if v, err := dec.Token(); err == nil {
		if id, ok := v.(string); ok && strings.HasPrefix(id, "ext_") {
			return id
		}
	}
	return ""
}

// Close ends every session (the server is going away).
func (e *Endpoint) Close() error {
	for s := range e.server.Sessions() {
		_ = s.Close()
	}
	return nil
}
