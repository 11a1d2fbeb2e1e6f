// Package mcptest drives an MCP endpoint with the official Go SDK's client,
// for the in-process and end-to-end tests of /mcp.
package mcptest

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// bearer adds an Authorization header to every request of a client.
type bearer struct {
	auth string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.auth != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", b.auth)
	}
	return b.next.RoundTrip(r)
}

// Connect opens a session on the streamable HTTP endpoint url, sending key
// as a bearer token ("" connects anonymously). The session is closed when
// the test ends.
func Connect(t testing.TB, url, key string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	// A new connection per request: a reload closes the old server's idle
	// connections, and a POST sent on one just as it closes fails with EOF
	// (net/http retries only idempotent requests). Tests that reload would
	// see that race of keep-alive, not of the endpoint.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	b := bearer{next: tr}
	if key != "" {
		b.auth = "Bearer " + key
	}
	hc := &http.Client{Transport: b}
	c := sdk.NewClient(&sdk.Implementation{Name: "sdr-test", Version: "1"}, opts)
	cs, err := c.Connect(t.Context(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// Call calls a tool and returns its result with the structured content
// decoded; it fails the test unless the one text content is that same JSON.
func Call(t testing.TB, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, map[string]any) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("calling %s: %v", name, err)
	}
	b, _ := json.Marshal(res.StructuredContent)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: structured content is not an object: %s", name, b)
	}
	var text map[string]any
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks, want 1", name, len(res.Content))
	}
	tc, ok := res.Content[0].(*sdk.TextContent)
	if !ok || json.Unmarshal([]byte(tc.Text), &text) != nil || !reflect.DeepEqual(text, m) {
		t.Errorf("%s: the text content is not the structured content as JSON: %v", name, res.Content[0])
	}
	return res, m
}

// ErrCode is error.code of a tool error's structured content.
func ErrCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// ToolNames lists the session's tools, every page.
func ToolNames(t testing.TB, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	return names
}

// Records are the records of a run document without extracted_at (the
// time each was made), to compare two runs of the same input.
func Records(run map[string]any) []any {
	data, _ := run["data"].([]any)
	for _, d := range data {
		delete(d.(map[string]any), "extracted_at")
	}
	return data
}
