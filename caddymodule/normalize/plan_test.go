package normalize_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"socialrouter/caddymodule/normalize"
)

// fpProgram compiles a normalize program for the table tests.
func fpProgram(t *testing.T, src string) *normalize.Program {
	t.Helper()
	p, err := normalize.CompileNormalizer(src)
	if err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	return p
}

// TestFastPathPrograms runs small programs on both engines over a set of
// inputs chosen to reach their edge cases.
func TestFastPathPrograms(t *testing.T) {
	inputs := []string{
		`{}`, `{"a":null}`, `{"a":1}`, `{"a":-2.5}`, `{"a":"x"}`, `{"a":""}`, `{"a":"A,B <c>"}`,
		`{"a":true}`, `{"a":false}`, `{"a":[]}`, `{"a":[1,"two",null,{"b":3},[4]]}`, `{"a":{}}`,
		`{"a":{"b":{"c":"deep"},"n":null,"x":[null,{"y":null}]}}`, `{"a":"12:34:56"}`, `{"a":"1,234"}`,
		`{"a":"10K+"}`, `{"a":"1.5M"}`, `{"a":"3b"}`, `{"a":" 7 "}`, `{"a":"1e400"}`, `{"a":"NaN"}`,
		`{"a":1700000000}`, `{"a":1700000000123}`, `{"a":"2024-05-06T07:08:09Z"}`, `{"a":"2024-05-06 07:08:09"}`,
		`{"a":"2024-05-06"}`, `{"a":"Mon, 02 Jan 2006 15:04:05 -0700"}`, `{"a":"yesterday"}`, `{"a":12345678901234567890}`,
		`{"a":1e300}`, `{"a":0.000001}`, `{"a":1e-7}`, `{"a":"#tag"}`, `{"a":"https://x.example/company/acme?x=1"}`,
		`{"a":"www.acme.example/about"}`, `{"a":"p.m. 3 PM"}`, `{"a":"12 am"}`, `{"a":["#x","y",1]}`,
		`{"a":{"Monday":["9-5","6-8"],"Tuesday":"closed","Sunday":null}}`, `{"a":"a · b · c"}`,
		`{"a":[{"key":"k","value":1},{"name":"n","Value":2},{"key":"k","value":3}]}`, `{"a":[{"key":1,"value":1}]}`,
		`{"a":{"x":{"p":true,"q":false},"y":[{"r":true}],"z":{}}}`, `{"a":"\u00e9t\u00e9 \ud83d\ude00"}`,
		`{"a":"7290111122223333444"}`, `{"a":"a\/b"}`, `{"a":[3,1,2]}`, `{"a":2,"b":3}`, `{"a":"x","b":"y"}`,
		`{"a":[1,2],"b":[3]}`, `{"a":0,"b":0}`, `{"a":7,"b":-1}`, `{"a":{"b":1},"b":{"b":1}}`, `{"a":"abc","b":1}`,
		`null`, `1`, `"s"`, `[1,2,3]`, `[]`,
	}
	programs := []string{
		`{v: .a}`, `{v: .a.b}`, `{v: .a?}`, `{v: .a.b?}`, `{v: [.a[]?]}`, `{v: [.a[]]}`, `{v: .a[0]}`, `{v: .a[-1]}`,
		`{v: .a[1.7]}`, `{v: .a["b"]}`, `{v: (.a | first)}`, `{v: (.a | last)}`, `{v: .["a"]}`, `{v: ."a"}`,
		`{v: (.a // "d")}`, `{v: (.a // empty)}`, `{v: ((.a | strings) // null)}`, `{v: (.a | objects | .b)}`,
		`{v: [.a | arrays, numbers, booleans, nulls, values, scalars, iterables]}`,
		`{v: (.a | type)}`, `{v: (.a | length)}`, `{v: (.a | tostring)}`, `{v: (.a | tonumber)}`,
		`{v: (.a | ascii_downcase)}`, `{v: (.a | ascii_upcase)}`, `{v: (.a | keys)}`, `{v: (.a | to_entries)}`,
		`{v: (.a | from_entries)}`, `{v: (.a | with_entries(.value |= 1))}`, `{v: (.a | with_entries(select(.value != null)))}`,
		`{v: (.a | with_entries(.value = [.value[]? | objects | to_entries[] | select(.value == true) | .key]) | with_entries(select(.value | length > 0)))}`,
		`{v: (.a | toint)}`, `{v: (.a | tonum)}`, `{v: (.a | iso8601)}`, `{v: (.a | nonempty)}`, `{v: ([.a[]? | toint] | nonempty)}`,
		`{v: (.a | split(":"))}`, `{v: (.a | split(""))}`, `{v: (.a | split(" · ")[1])}`, `{v: (.a | join("-"))}`, `{v: (.a | join(", "))}`,
		`{v: (.a | ltrimstr("#"))}`, `{v: (.a | rtrimstr("c"))}`, `{v: (.a | startswith("http"))}`, `{v: (.a | endswith("c"))}`,
		`{v: (.a | test("^[0-9]+(:[0-9]{1,2}){0,2}$"))}`, `{v: (.a | test("(?i)p\\.?m"))}`, `{v: (.a | capture("/company/(?<s>[^/?#]+)").s)}`,
		`{v: [.a | capture("(?<h>[0-9]{1,2})(?<m>:[0-9]+)?")]}`, `{v: [.a | scan("[0-9]+")]}`, `{v: [.a | scan("([a-z])([0-9])?")]}`,
		`{v: (.a | sub("^[A-Za-z][A-Za-z0-9+.-]*://"; "") | sub("^www\\."; "") | sub("[/?#].*$"; ""))}`,
		`{v: (.a | map(toint))}`, `{v: (.a | map(. * 2))}`, `{v: (.a | not)}`, `{v: (.a | select(. != null))}`,
		`{v: (if .a then "t" elif .b then "b" else "f" end)}`, `{v: (if .a == null then 0 end)}`,
		`{v: (.a and .b), w: (.a or .b), x: (.a | not)}`, `{v: [(.a, .b) and (.a, .b)], w: [(.a, .b) or (.a, .b)]}`,
		`{v: (.a + .b)}`, `{v: (.a - .b)}`, `{v: (.a * .b)}`, `{v: (.a / .b)}`, `{v: (.a % .b)}`, `{v: (-.a)}`,
		`{v: (.a == .b), w: (.a != .b), x: (.a < .b), y: (.a <= .b), z: (.a > .b), u: (.a >= .b)}`,
		`{v: [(1,2) + (10,20)]}`, `{v: "\(.a)-\(.b // "none")"}`, `{v: "\((.a, .b))!"}`, `{v: "x\(.a | toint)y"}`,
		`{v: (.a | tostring | length)}`, `{v: ([.a[]?, .b[]? | strings][0])}`, `{v: (.a as $x | $x)}`, `{v: (.a as $x | .b as $y | [$x, $y])}`,
		`{v: (((.a | objects) // {}) as $o | {x: $o.b, y: $o.n, z: $o.x, w: $o["b"]})}`, `{v: (.a as $o | $o[.b])}`,
		`{v: ({"x": 1, "y": 2} as $m | $m[.a])}`, `{v: (["Monday","Tuesday","Sunday"] | [.[] | select(. != "Tuesday")])}`,
		`{v: (.a | objects | . as $oh | ["Monday","Tuesday","Sunday"] | [.[] | select($oh[.] != null) | {day: ., hours: ($oh[.] | if type == "array" then join(", ") else . end)}])}`,
		`{a: 1, a: 2, b: .a}`, `{a: (1,2), b: (3,4)}`, `{a: empty, b: .a}`, `{a, b}`, `{"a b": .a}`,
		`{v: .a} | del(.. | nulls)`, `.a | del(.. | nulls)`, `{v: .a, w: [.a, null]} | del(.. | nulls)`,
		`if type != "object" then empty else {v: .a} end`, `.a`, `.a[]?`, `empty`, `null`, `{v: try .a.b}`, `{v: [.a[] | .b?]}`,
		`{v: [.[]?]}`, `{v: (.a | .[0]?)}`, `{v: [.a | .. ]}`, `{v: (.a | @base64)}`, `def f: 1; {v: f}`,
		`def s: if type == "string" then (if . == "" then null else . end) elif type == "number" then tostring else null end; {v: (.a | s), w: (.b | s)}`,
		`def f: .a; def g: f as $x | {x: $x, y: f}; .a as $a | def h: $a; {g: g, h: h, a: (def f: 2; f)}`,
		`{v: (.a | reduce .[] as $x (0; . + $x))}`, `{v: .a[1:2]}`, `{v: (.a | error)}`, `{v: [.a | splits(",")]}`,
		`{v: (.a | tojson)}`, `{v: ((.a | toint) as $h | if $h == null then null elif $h < 12 then $h + 12 else $h end)}`,
		`{v: ([.a, .b | strings] | join(" ") | nonempty)}`, `{v: (.a // .b // "c")}`, `{v: ((.a, .b) // 9)}`,
		`{v: [.a[]? | objects | {k: .b, n: .n}] | nonempty}`, `{v: (.a | if type == "number" then tostring else . end)}`,
		`{v: (.a | tostring), w: (.a | tojson?)}`, `{v: .a, n: $now, i: $input}`, `{v: (.a.b = 1)}`, `{v: (. as $e | $e.a)}`,
		// if . == c with the input or constants as branches (ifEqConstNode), alone and in a type switch
		`{v: (.a | if . == "x" then . else "no" end), w: (.a | if . != "" then . else 0 end), x: (.b | if . == 3 then null else . end)}`,
		`{v: (.a | if . == true then "T" elif . == null then "N" else . end), w: (.a | if . != 1 then . else 1.5 end)}`,
		`{v: (.a | if type == "boolean" then . elif . == "true" then true elif . == "false" then false else null end)}`,
	}
	for _, src := range programs {
		p, err := normalize.CompileNormalizer(src)
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if ok, why := p.FastPath(); !ok {
			t.Logf("falls back: %-60s %s", src, why)
			continue
		}
		st := fpStats{}
		for _, in := range inputs {
			fpDiff(t, p, []byte(in), "https://x.example/in", &st, fmt.Sprintf("%s on %s", src, in))
		}
		for _, b := range st.bailed {
			t.Logf("bailed to gojq: %s", b)
		}
	}
}

// TestFastPathConcurrent runs every plan from several goroutines at once
// (run it with -race): plans and their pooled run state must not leak
// between runs.
func TestFastPathConcurrent(t *testing.T) {
	files := fpLoadFixtures(t)
	type job struct {
		p     *normalize.Program
		input string
		item  []byte
		want  []byte
		ok    bool
	}
	var jobs []job
	for _, o := range fpOffers(t) {
		input := o.service.Accepts[0].Example
		for _, item := range o.ownItems(files) {
			want, ok, err := o.offer.Normalize.NormalizeGojq(context.Background(), item, input, fpNow)
			if normalize.IsErrorItem(item) { // the pipeline's guard
				want, ok = nil, false
			}
			if err == nil {
				jobs = append(jobs, job{o.offer.Normalize, input, item, want, ok})
			}
		}
	}
	errs := make(chan error, 8)
	for g := range 8 {
		go func() {
			for r := range 5 {
				for i := range jobs {
					j := jobs[(i+g*7+r)%len(jobs)]
					got, ok, err := j.p.NormalizeItem(context.Background(), j.item, j.input, fpNow)
					if err != nil || ok != j.ok || !bytes.Equal(got, j.want) {
						errs <- fmt.Errorf("goroutine %d: got %s %v %v, want %s", g, got, ok, err, j.want)
						return
					}
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}

// TestFastPathIndexedArrays: arrays that an object's indexing pass skipped
// element by element (their ends noted for the iteration that follows),
// iterated once, twice, nested, empty, spaced out, and beside arrays it
// did not note, agree with gojq.
func TestFastPathIndexedArrays(t *testing.T) {
	inputs := []string{
		`{"a":[1,"x",{"k":[2,3]},[4,[5]],null],"b":"s","c":[{"p":1,"q":[{"m":1},{"m":2}],"r":"r","s":[[]]},{"p":2}],"d":[]}`,
		" { \"a\" : [ 1 , \"x\" , { \"k\" : [ 2 , 3 ] } ] ,\n\t\"c\" : [ { \"q\" : [ { \"m\" : \"y\" } ] , \"p\" : 0 } ] , \"b\" : null , \"d\" : [ ] } ",
		`{"c":[{"q":[]},{"q":[{"m":[1,2]}]}],"a":[],"b":[1],"d":[[1],[2]]}`,
		`{"a":"no","b":{},"c":{"p":1},"d":[{"a":[9]}]}`,
	}
	programs := []string{
		`{x: [.a[]?], y: .b, z: [.c[]? | {p: .p, q: [.q[]? | .m], r: .r, s: [.s[]?]}], w: [.a[]? | objects | .k[]?], v: [.d[]?]}`,
		`{x: [.a[]?, .a[]?], y: ([.c[]?] | length), z: [.c[]?, .c[]? | .p], w: .d}`,
		`[.c[]? | objects | {q: [.q[]? | objects | .m], q2: [.q[]?], p: .p, r: .r}] as $c | {c: $c, n: [$c[] | .q[]], b: .b, a: [.a[]?], d: [.d[]?[]?]}`,
	}
	fpOnPlan(t, programs, inputs)
}

// TestFastPathMemberIndexes: objects read through their member index (an
// element of an array a frame reads, or an object read twice in a row)
// and objects read once, with escaped keys, keys whose text holds a
// backslash escape that spells another key, and absent keys, agree with
// gojq.
func TestFastPathMemberIndexes(t *testing.T) {
	inputs := []string{
		`{"c":[{"p":1,"q":"x","r":{"s":2,"t":3}},{"q":"y"},{"p\u0031":5,"p":6},{}],"o":{"s":"a","t":"b","u":{"v":1}}}`,
		`{"c":[{"a\\nb":1,"p":2},{"a\nb":3,"q":4}],"o":{"a\\nb":"lit","a\nb":"nl","s":null}}`,
		`{"c":[],"o":{}}`, `{"c":[1,"x",null,[{"p":1}]],"o":[]}`, `{"o":{"s":{"s":{"s":1}}}}`,
	}
	programs := []string{
		`{a: [.c[]? | objects | {p, q, r: .r.s, t: .r.t, p1: .p1}], b: [.c[]? | objects | select(.q != null) | .p], o: .o.s, t: .o.t, v: .o.u.v}`,
		`.o as $o | {s: $o.s, t: $o.t, n: $o["a\nb"], l: $o["a\\nb"], c: [.c[]? | objects | .["a\\nb"], .["a\nb"], .p]}`,
		`{x: (.o | objects | .s), y: (.o | objects | .t), z: [.c[]? | objects | .p, .p, .q]}`,
	}
	fpOnPlan(t, programs, inputs)
}

// fpOnPlan runs each program, which must be on the plan, over each input
// on both engines; none may leave an input to gojq.
func fpOnPlan(t *testing.T, programs, inputs []string) {
	t.Helper()
	for _, src := range programs {
		p := fpProgram(t, src)
		if ok, why := p.FastPath(); !ok {
			t.Fatalf("%s: not on the plan: %s", src, why)
		}
		st := fpStats{}
		for _, in := range inputs {
			fpDiff(t, p, []byte(in), "", &st, fmt.Sprintf("%s on %s", src, in))
		}
		if len(st.bailed) > 0 {
			t.Errorf("%s: left to gojq, so not tested on the plan: %q", src, st.bailed)
		}
	}
}
