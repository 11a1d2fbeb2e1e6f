package normalize

import (
	"bytes"
	"testing"

	"github.com/itchyny/gojq"
)

// TestEmitWritesTheBuiltRecord holds the record emitter to the plan's
// other way, building the record and writing it: the same bytes, or a
// failure on both (which error comes first may differ: both send the
// item to gojq). Each program must get an emitter, or the test would
// compare the built path with itself.
func TestEmitWritesTheBuiltRecord(t *testing.T) {
	const str = `def str: if type == "string" then (if . == "" then null else . end) elif type == "number" then tostring else null end; `
	programs := []string{
		`{v: .a, w: .b}`,
		`{v: .a, w: .b} | del(.. | nulls)`,
		`{b: .b, a: (.a | str), c: 1} | del(.. | nulls)`,
		`if type != "object" then empty else {v: .a} end`,
		`if .a == null then empty else {v: .a, n: null} end`,
		`(.a | objects // {}) as $o | {v: $o.b, w: .b}`,
		`[.a[]? | objects] as $x | {v: [$x[] | {b: .b, n: .n}], w: ($x | length)} | del(.. | nulls)`,
		`{v: ([.a[]? | objects | {b: (.b | str), n: .n}] | nonempty), w: .b} | del(.. | nulls)`,
		`{v: ([.a[]? | objects | {b: (.b | str), n: .n}] | nonempty), w: .b}`,
		`{v: [.a[]?], w: [.a[]? | .b?]}`,
		`{v: [.a[]?] | nonempty} | del(.. | nulls)`,
		`{v: ([.a[]? | {b: .b} | del(.. | nulls)] | nonempty)}`,
		`{v: ({x: .a, y: null} | del(.. | nulls)), w: {x: .b, y: null}}`,
		`{v: [.a[]?]} | del(.. | nulls)`,
		`{v: [.a[]? | select(. != 1)]}`,
		`{v: ([.a[] | {b: .b}] | nonempty)}`,
		`{v: .a, v: .b}`,
		`{z: .a, a: .b, m: (.a | tostring)}`,
		`{v: (.a | tonumber)}`,
		`{v: [.a[]? | objects | {b: (.b | str), c: (.c | str), d: (.d | str)}], w: (.b | str), x: (.c | str), y: (.a | str)}`,
		`{v: [.a[]? | objects | {b: (.b | str), c: (.c | str), d: (.d | str)}], w: (.b | str)} | del(.. | nulls)`,
		`{v: [.a[]? | objects | {b: ((.b // .c) | str)}], w: ((.b // .c) | str), x: (.c | ascii_downcase | str), y: ((.b | tostring) | str), z: ("\(.c)" | str)}`,
		`{v: [.a[]? | {b: (.b | str)}]} | del(.. | nulls)`,
	}
	inputs := []string{
		`{}`, `{"a":null}`, `{"a":1}`, `{"a":"x"}`, `{"a":""}`, `{"a":[]}`, `{"a":{}}`, `{"a":"A <c>"}`,
		`{"a":[1,"two",null,{"b":3},[4]]}`, `{"a":[{"b":"x","n":null},{"b":"","n":[null,1]},{"n":{"m":null}}]}`,
		`{"a":[{"b":null},null,{"b":2}],"b":"y"}`, `{"a":{"b":{"c":"deep"},"n":null}}`, `{"a":{"x":1,"y":2}}`,
		`{"a":[null]}`, `{"a":[{"b":"","c":"x","d":3},{"b":"<\u0041>","c":null,"d":[1]},{"c":"\"q\" & ü"}],"b":"","c":"z"}`, `{"a":"1e400"}`, `{"a":["","x",{"b":""},{"b":"","c":"C"},{"b":7},{"c":1.5}],"b":null,"c":"ABC"}`, `{"a":[{"b":false,"c":""}],"b":"","c":""}`, `{"a":"nan"}`, `{"a":1,"b":[null,{"c":null}]}`,
		`null`, `1`, `"s"`, `[1,2]`, `[]`,
	}
	emitted := 0
	for _, src := range programs {
		plans := [2]*plan{}
		for i := range plans {
			q, err := gojq.Parse(str + src)
			if err != nil {
				t.Fatalf("%s: %v", src, err)
			}
			pl, why := compilePlan(q)
			if pl == nil {
				t.Fatalf("%s: no plan: %s", src, why)
			}
			plans[i] = pl
		}
		if plans[0].emit == nil {
			t.Logf("no emitter: %s", src)
			continue // a shape the emitter leaves to the build (duplicate keys)
		}
		emitted++
		plans[1].emit = nil
		for _, in := range inputs {
			got, gotOK, gotErr := plans[0].run(nil, []byte(in), "i", "n", false)
			want, wantOK, wantErr := plans[1].run(nil, []byte(in), "i", "n", false)
			if (gotErr == nil) != (wantErr == nil) || gotErr == nil && (gotOK != wantOK || !bytes.Equal(got, want)) {
				t.Errorf("%s on %s: emitted %s, %v, %v; built %s, %v, %v", src, in, got, gotOK, gotErr, want, wantOK, wantErr)
			}
		}
	}
	if emitted < len(programs)-1 {
		t.Errorf("%d of %d programs have an emitter; every one but the duplicate key should", emitted, len(programs))
	}
}

// TestEmitRefusesDuplicateKeys: an object declaring a key twice evaluates
// the overridden value too (it may fail), which the emitter would skip.
func TestEmitRefusesDuplicateKeys(t *testing.T) {
	q, err := gojq.Parse(`{v: .a, v: .b}`)
	if err != nil {
		t.Fatal(err)
	}
	if pl, _ := compilePlan(q); pl == nil || pl.emit != nil {
		t.Errorf("plan %v: want a plan without an emitter", pl)
	}
}
