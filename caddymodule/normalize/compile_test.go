package normalize_test

import (
	"testing"

	"socialrouter/caddymodule/normalize"
)

// TestFastPathCompile checks which programs the plan takes and why it
// refuses the others.
func TestFastPathCompile(t *testing.T) {
	tests := []struct {
		src, why string
	}{
		{`{a: .b}`, ""},
		{`if type != "object" then empty else {a: (.b | toint)} | del(.. | nulls) end`, ""},
		{`def f: .a; def g: f | f; {a: g}`, ""},
		{`def f(x): x; f(.)`, "function definitions with parameters"},
		{`def f: f; f`, "recursive function f"},
		{`reduce .[] as $x (0; . + $x)`, "reduce"},
		{`foreach .[] as $x (0; . + $x)`, "foreach"},
		{`.[1:]`, "slices"},
		{`@base64`, "formats (@…)"},
		{`[..]`, "recursion (..) outside del(.. | nulls)"},
		{`del(.a)`, "del(f) other than del(.. | nulls)"},
		{`try .a catch "x"`, "try … catch"},
		{`. as [$a] | $a`, "destructuring patterns"},
		{`{(.a): 1}`, "computed object keys"},
		{`test(.re)`, "test with a computed pattern"},
		{`scan("a*")`, "scan with a pattern that can match the empty string"},
		{`.a |= 1`, "operator |="},
		{`.a.b = 1`, "assignment to a path other than .key"},
		{`error("x")`, "function error/1"},
		{`$ENV`, "variable $ENV"},
		{`label $f | 1`, "label/break"},
	}
	for _, tt := range tests {
		p := fpProgram(t, tt.src)
		ok, why := p.FastPath()
		if ok != (tt.why == "") || why != tt.why {
			t.Errorf("%s: FastPath() = %v, %q; want %q", tt.src, ok, why, tt.why)
		}
	}
	if ok, why := (&normalize.Program{}).FastPath(); ok || why == "" {
		t.Errorf("a request program: FastPath() = %v, %q", ok, why)
	}
}
