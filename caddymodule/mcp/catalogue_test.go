package mcp

import (
	"reflect"
	"strings"
	"testing"
)

// TestCatalogueTools: discovery tools are read-only, need no sign-in, and
// take the platform (and service) as REST's path does.
func TestCatalogueTools(t *testing.T) {
	r := servicesRegistry(t)
	tools := toolsByName(t)
	for name, required := range map[string][]any{"list_services": nil, "get_service": {"platform", "service"}} {
		x := tools[name]
		in := x.def.InputSchema.(obj)
		if x.group != GroupCatalogue || !x.def.Annotations.ReadOnlyHint || !strings.Contains(x.def.Description, "No sign-in needed") {
			t.Errorf("%s: %+v", name, x.def)
		}
		if got, _ := in["required"].([]any); !reflect.DeepEqual(got, required) {
			t.Errorf("%s requires %v, want %v", name, got, required)
		}
		if ref := dig(in, "properties", "platform", "$ref"); ref != "#/$defs/Platform" {
			t.Errorf("%s: platform is %v", name, dig(in, "properties", "platform"))
		}
		enum, _ := dig(in, "$defs", "Platform", "enum").([]any)
		if len(enum) != len(r.Platforms) {
			t.Errorf("%s: platform enum %v, want the %d platforms", name, enum, len(r.Platforms))
		}
	}
}
