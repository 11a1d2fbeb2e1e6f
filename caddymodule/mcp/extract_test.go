package mcp

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
)

func TestToolName(t *testing.T) {
	for _, tc := range []struct{ platform, service, want string }{
		{"pro_net", "profile.info", "pro_net_profile_info"},
		{"video_net", "video.transcript", "video_net_video_transcript"},
		{"maps", "place.search", "maps_place_search"},
	} {
		if got := ToolName(&registry.Service{Platform: tc.platform, Name: tc.service}); got != tc.want {
			t.Errorf("ToolName(%s/%s) = %s, want %s", tc.platform, tc.service, got, tc.want)
		}
	}
}

// TestExtractToolsAreTheOpenAPIOperations: each extract tool takes exactly
// the request body of its REST operation (and max_age, the Cache-Control
// of REST, where the service may be cached) and answers its 200 schema, with
// the service's record schema for data, or its 202 schema (an async run,
// running).
func TestExtractToolsAreTheOpenAPIOperations(t *testing.T) {
	r := servicesRegistry(t)
	var doc map[string]any
	if err := json.Unmarshal(r.OpenAPIJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	tools := toolsByName(t)
	for _, s := range r.Services {
		if !s.Callable() {
			continue
		}
		x := tools[ToolName(s)]
		if x == nil || x.group != GroupExtract {
			t.Fatalf("no extract tool for %s", s.Key)
		}
		op := dig(doc, "paths", "/v1/"+s.Platform+"/"+s.Name, "post")
		body := dig(op, "requestBody", "content", "application/json", "schema")
		if s.Cache != nil {
			withMaxAge(body.(obj)) // what REST says with Cache-Control
		}
		if !reflect.DeepEqual(x.def.InputSchema, body) {
			t.Errorf("%s: input schema is not the OpenAPI request body (with max_age where the service may be cached)", x.def.Name)
		}
		out := x.def.OutputSchema.(obj)
		anyOf, _ := out["anyOf"].([]any)
		if len(anyOf) != 2 || dig(anyOf[1], "oneOf") == nil {
			t.Fatalf("%s: output schema is not the 200 or 202 answer: %v", x.def.Name, out)
		}
		allOf, _ := anyOf[0].(obj)["allOf"].([]any)
		if len(allOf) != 2 || dig(allOf[0], "$ref") != "#/$defs/Run" {
			t.Fatalf("%s: output schema is not the Run of the service: %v", x.def.Name, out)
		}
		recRef, _ := dig(allOf[1], "properties", "data", "items", "$ref").(string)
		rec := strings.TrimPrefix(recRef, "#/$defs/")
		want, _ := json.Marshal(dig(doc, "components", "schemas", rec))
		got, _ := json.Marshal(dig(out, "$defs", rec))
		if rec == "" || string(got) != strings.ReplaceAll(string(want), componentPrefix, "#/$defs/") {
			t.Errorf("%s: data items %q are not the record schema of the document", x.def.Name, recRef)
		}
		for _, a := range s.Accepts {
			if !strings.Contains(x.def.Description, a.Example) {
				t.Errorf("%s: description lacks the accepted example %s", x.def.Name, a.Example)
			}
		}
		for _, o := range s.LiveOffers() {
			if !strings.Contains(x.def.Description, "`"+o.ID+"`: "+o.Price.String()+" credits per record") {
				t.Errorf("%s: description lacks offer %s at %s", x.def.Name, o.ID, o.Price)
			}
		}
		if a := x.def.Annotations; a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
			t.Errorf("%s: an extract tool spends credits upstream: %+v", x.def.Name, a)
		}
	}
}

func TestSearchTool(t *testing.T) {
	r := servicesRegistry(t)
	x := toolsByName(t)["search"]
	for _, slug := range r.SearchSlugs() {
		if !strings.Contains(x.def.Description, slug) {
			t.Errorf("search description lacks slug %s", slug)
		}
	}
	if req := x.def.InputSchema.(obj)["required"]; !reflect.DeepEqual(req, []any{"queries", "provider"}) {
		t.Errorf("search requires %v", req)
	}
}
