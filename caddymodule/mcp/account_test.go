package mcp

import (
	"reflect"
	"strings"
	"testing"
)

// TestAccountTools: the account tools need sign-in, are read-only and take
// REST's parameters.
func TestAccountTools(t *testing.T) {
	tools := toolsByName(t)
	for _, tc := range []struct {
		name     string
		props    []string
		required []any
	}{
		{"get_run", []string{"id"}, []any{"id"}},
		{"get_balance", nil, nil},
		{"get_usage", []string{"days"}, nil},
	} {
		x := tools[tc.name]
		if x == nil || x.group != GroupAccount || !x.def.Annotations.ReadOnlyHint || !strings.HasSuffix(x.def.Description, "Needs sign-in.") {
			t.Fatalf("%s: %+v", tc.name, x)
		}
		in := x.def.InputSchema.(obj)
		props, _ := in["properties"].(obj)
		var names []string
		for k := range props {
			names = append(names, k)
		}
		if len(names) != len(tc.props) || (len(names) == 1 && names[0] != tc.props[0]) {
			t.Errorf("%s takes %v, want %v", tc.name, names, tc.props)
		}
		if got, _ := in["required"].([]any); !reflect.DeepEqual(got, tc.required) {
			t.Errorf("%s requires %v, want %v", tc.name, got, tc.required)
		}
	}
	days := dig(tools["get_usage"].def.InputSchema, "properties", "days").(obj)
	if days["minimum"] != float64(1) || days["maximum"] != float64(365) || days["default"] != float64(30) {
		t.Errorf("days: %v", days)
	}
}
