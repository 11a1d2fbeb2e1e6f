package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"socialrouter/caddymodule/registry"
	"socialrouter/services"
)

var update = flag.Bool("update", false, "rewrite testdata/toolsnaps/*.snap")

const snapDir = "testdata/toolsnaps"

var (
	regOnce sync.Once
	reg     *registry.Registry
	regErr  error
)

// servicesRegistry is the registry of the repository's services/.
func servicesRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	regOnce.Do(func() { reg, regErr = registry.LoadFS(svcFS) })
	if regErr != nil {
		t.Fatal(regErr)
	}
	return reg
}

// toolsByName generates the tools of the repository's services.
func toolsByName(t *testing.T) map[string]*tool {
	t.Helper()
	ts, err := buildTools(servicesRegistry(t))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*tool{}
	for _, x := range ts {
		m[x.def.Name] = x
	}
	return m
}

// regenerate is the one command that rewrites every snapshot after a
// change to services/ (the Makefile's snapshots target).
const regenerate = "make snapshots (go test ./caddymodule/mcp -run TestToolSnapshots -update)"

// TestToolSnapshots keeps every tool the repository's services/ generates
// as a golden file, so a change to the declarations (or the generation)
// shows as a reviewed diff. A tool without a snapshot (a service just
// added) is logged, not failed. The snapshots describe services/ itself,
// never the directory testservices.DirEnv names (whose additions they
// cannot know). Regenerate with make snapshots.
func TestToolSnapshots(t *testing.T) {
	r, err := registry.LoadFS(services.FS)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := buildTools(r)
	if err != nil {
		t.Fatal(err)
	}
	tools := map[string]*tool{}
	for _, x := range ts {
		tools[x.def.Name] = x
	}
	if *update {
		old, _ := filepath.Glob(filepath.Join(snapDir, "*.snap"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(snapDir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, x := range tools {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.SetIndent("", "  ")
		if err := enc.Encode(x.def); err != nil {
			t.Fatal(err)
		}
		got := buf.Bytes()
		path := filepath.Join(snapDir, name+".snap")
		if *update {
			if err := os.WriteFile(path, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			// A tool of a service added to services/ is new, not changed:
			// it is generated like every other (TestToolSet and the schema
			// tests hold it), and an addition needs no regeneration.
			t.Logf("tool %s has no snapshot yet; record one to review later changes: %s", name, regenerate)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("tool %s differs from %s (services/ changed, or the generation did); review the diff and regenerate with %s\n%s",
				name, path, regenerate, firstDiff(got, want))
		}
	}
	snaps, _ := filepath.Glob(filepath.Join(snapDir, "*.snap"))
	for _, f := range snaps {
		if _, ok := tools[strings.TrimSuffix(filepath.Base(f), ".snap")]; !ok && !*update {
			t.Errorf("snapshot %s has no tool any more; regenerate with %s", f, regenerate)
		}
	}
}

func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return "line " + itoa(i+1) + ":\n got: " + gl + "\nwant: " + wl
		}
	}
	return ""
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestToolSet: one tool per callable extract service, plus the six fixed
// tools, and nothing else.
func TestToolSet(t *testing.T) {
	r := servicesRegistry(t)
	want := []string{"get_balance", "get_run", "get_service", "get_usage", "list_services", "search"}
	for _, s := range r.Services {
		if s.Callable() {
			want = append(want, ToolName(s))
		}
	}
	sort.Strings(want)
	defs, err := Tools(r)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range defs {
		got = append(got, d.Name)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tools %v\nwant %v", got, want)
	}
	if len(want) < 8 {
		t.Fatalf("only %d tools: the services/ registry should have several extract services", len(want))
	}
}

// compile compiles a tool schema on its own (JSON Schema 2020-12): every
// $ref must resolve inside it.
func compile(t *testing.T, name string, schema any) *jsonschema.Schema {
	t.Helper()
	b, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "mem://" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(url)
	if err != nil {
		t.Fatalf("schema %s does not compile on its own: %v", name, err)
	}
	return s
}

// TestSchemasStandAlone: every input and output schema is an object schema
// (as MCP requires) that compiles without the OpenAPI document.
func TestSchemasStandAlone(t *testing.T) {
	for name, x := range toolsByName(t) {
		for kind, s := range map[string]any{"input": x.def.InputSchema, "output": x.def.OutputSchema} {
			m, _ := s.(obj)
			if m["type"] != "object" {
				t.Errorf("%s %s schema has type %v, want object", name, kind, m["type"])
			}
			b, _ := json.Marshal(s)
			if bytes.Contains(b, []byte(componentPrefix)) {
				t.Errorf("%s %s schema still refers to the OpenAPI components", name, kind)
			}
			compile(t, name+"."+kind, s)
		}
	}
}

// TestArgs: the arguments of the fixed tools are refused with the REST
// codes.
func TestArgs(t *testing.T) {
	for _, tc := range []struct {
		args    string
		allowed []string // nil: a tool without arguments (get_balance)
		code    string
		// envelope lists fragments the error envelope must hold.
		envelope []string
	}{
		{`{"id": "ext_1"}`, []string{"id"}, "", nil},
		{``, []string{"id"}, "invalid_field", nil},
		{`null`, []string{"id"}, "invalid_field", nil},
		{`[1]`, []string{"id"}, "invalid_json", nil},
		{`{"id": "ext_1", "x": 1}`, []string{"id"}, "unknown_field", []string{`"allowed_fields":["id"]`, `allowed: id`}},
		{`{"id": 5}`, []string{"id"}, "invalid_field", nil},
		{`{}`, []string{"id"}, "invalid_field", nil},
		{`{}`, nil, "", nil},
		{``, nil, "", nil},
		{`{"x": 1}`, nil, "unknown_field", []string{`"allowed_fields":[]`, `"unknown_fields":["x"]`, `this tool takes no arguments`}},
	} {
		req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "get_run", Arguments: json.RawMessage(tc.args)}}
		m, e := args(req, tc.allowed...)
		if e == nil && len(tc.allowed) > 0 {
			_, e = stringArg(m, "id", true)
		}
		switch {
		case tc.code == "" && e != nil:
			t.Errorf("%s: %v", tc.args, e)
		case tc.code != "" && (e == nil || e.Code != tc.code):
			t.Errorf("%s: %v, want %s", tc.args, e, tc.code)
		case e != nil && !strings.Contains(string(e.Envelope), `"code":"`+tc.code+`"`):
			t.Errorf("%s: envelope %s", tc.args, e.Envelope)
		}
		for _, frag := range tc.envelope {
			if e == nil || !strings.Contains(string(e.Envelope), frag) {
				t.Errorf("%s (allowed %v): envelope %v lacks %s", tc.args, tc.allowed, e, frag)
			}
		}
	}
}
