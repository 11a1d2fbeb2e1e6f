package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// The differential test: the plan and gojq run every fixture item of every
// offer (and mutated copies of each), and must agree.

const (
	fpServicesDir = "../../services"
	fpNow         = "2026-01-02T03:04:05.000Z"
)

// fpFixtureDirs hold <source>/<platform>__<service>.json upstream payloads:
// the simulator's copy of the shared fixtures (TestFixturesMatchShared).
var fpFixtureDirs = []string{fixturesDir}

// fpExtra feeds fixtures to offers whose service has none of its own name.
var fpExtra = map[string][]string{
	"video_net/video.search|source_a/actor_4":     {"source_a/video_net__channel.videos.json"},
	"photo_net/profile.search|source_b/photo_net": {"source_b/photo_net__profile.info.json"},
}

type fpFile struct {
	source, platform, service, rel string
	items                          []json.RawMessage
}

func fpLoadFixtures(t testing.TB) []fpFile {
	t.Helper()
	var files []fpFile
	seen := map[string]bool{}
	for _, dir := range fpFixtureDirs {
		paths, _ := filepath.Glob(filepath.Join(dir, "*", "*.json"))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(b, &items); err != nil {
				continue // not an item list (routes.json)
			}
			src := filepath.Base(filepath.Dir(p))
			platform, svc, ok := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".json"), "__")
			if !ok {
				continue
			}
			rel := src + "/" + filepath.Base(p)
			key := rel + "\x00" + string(b)
			if seen[key] {
				continue // the simulator's copy of a shared fixture
			}
			seen[key] = true
			files = append(files, fpFile{src, platform, svc, rel, items})
		}
	}
	if len(files) == 0 {
		t.Skip("no upstream fixtures found")
	}
	return files
}

type fpOffer struct {
	service *Service
	offer   *Offer
}

func (o fpOffer) name() string { return o.service.Key + "|" + o.offer.ID }

func fpOffers(t testing.TB) []fpOffer {
	t.Helper()
	reg, err := Load(fpServicesDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []fpOffer
	for _, s := range reg.Services {
		for _, o := range s.Offers {
			if o.Normalize != nil {
				out = append(out, fpOffer{s, o})
			}
		}
	}
	return out
}

// ownItems are the fixture items of the offer's own source and service.
func (o fpOffer) ownItems(files []fpFile) []json.RawMessage {
	var items []json.RawMessage
	for _, f := range files {
		own := f.source == o.offer.Source.ID && f.platform+"/"+f.service == o.service.Key
		for _, x := range fpExtra[o.name()] {
			own = own || f.rel == x
		}
		if own {
			items = append(items, f.items...)
		}
	}
	return items
}

// fpStats counts what the differential runs saw.
type fpStats struct {
	runs, records, drops, errors, bails, byteDiffs int
	bailed                                         []string
}

// fpDiff runs item through the plan and through gojq and reports any
// disagreement. A bail is not a disagreement (the item goes to gojq) but
// is counted.
func fpDiff(t *testing.T, p *Program, item []byte, input string, st *fpStats, what string) {
	t.Helper()
	st.runs++
	want, wantOK, wantErr := p.normalizeGojq(context.Background(), item, input, fpNow)
	got, gotOK, gotErr := p.plan.run(item, input, fpNow)
	switch {
	case gotErr == errPanic:
		t.Errorf("%s: the plan panicked\nitem: %s", what, item)
		return
	case gotErr == errJQ && wantErr == nil:
		t.Errorf("%s: the plan raises a jq error, gojq yields ok=%v %s\nitem: %s", what, wantOK, want, item)
		return
	case wantErr != nil:
		st.errors++
		if gotErr == nil {
			t.Errorf("%s: gojq fails (%v) but the plan yields ok=%v %s\nitem: %s", what, wantErr, gotOK, got, item)
		}
		return
	case gotErr != nil:
		st.bails++
		st.bailed = append(st.bailed, what)
		return
	case gotOK != wantOK:
		t.Errorf("%s: plan ok=%v, gojq ok=%v\nplan: %s\ngojq: %s\nitem: %s", what, gotOK, wantOK, got, want, item)
		return
	case !wantOK:
		st.drops++
		return
	}
	st.records++
	if !fpSameJSON(got, want) {
		t.Errorf("%s: records differ\nplan: %s\ngojq: %s\nitem: %s", what, got, want, item)
		return
	}
	if !bytes.Equal(got, want) {
		st.byteDiffs++
		t.Errorf("%s: records equal as JSON but not byte for byte\nplan: %s\ngojq: %s", what, got, want)
	}
	// The public entry point must answer exactly as gojq does.
	pub, pubOK, pubErr := p.NormalizeItem(context.Background(), item, input, fpNow)
	if pubErr != nil || pubOK != wantOK || !bytes.Equal(pub, want) {
		t.Errorf("%s: NormalizeItem = %s %v %v, gojq %s", what, pub, pubOK, pubErr, want)
	}
}

func fpSameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func TestFastPathAgreesWithGojq(t *testing.T) {
	files := fpLoadFixtures(t)
	offers := fpOffers(t)
	before := fastPathPanics.Load()
	var fallbacks []string
	total := fpStats{}
	for _, o := range offers {
		p := o.offer.Normalize
		if ok, why := p.FastPath(); !ok {
			fallbacks = append(fallbacks, fmt.Sprintf("%s: %s", o.name(), why))
			continue
		}
		input := o.service.Accepts[0].Example
		t.Run(o.name(), func(t *testing.T) {
			st := fpStats{}
			own := o.ownItems(files)
			if len(own) == 0 {
				t.Errorf("no fixture items for %s", o.name())
			}
			for i, item := range own {
				fpDiff(t, p, item, input, &st, fmt.Sprintf("own item %d", i))
				for j, v := range fpVariants(item) {
					fpDiff(t, p, v.item, input, &st, fmt.Sprintf("own item %d variant %d (%s)", i, j, v.what))
				}
				// The same item answering another input, or none.
				fpDiff(t, p, item, "", &st, fmt.Sprintf("own item %d, empty input", i))
			}
			// Every other fixture item, of any layout, must agree too.
			for _, f := range files {
				for i, item := range f.items {
					fpDiff(t, p, item, input, &st, fmt.Sprintf("%s item %d", f.rel, i))
				}
			}
			for i, item := range fpOddItems {
				fpDiff(t, p, []byte(item), input, &st, fmt.Sprintf("odd item %d %q", i, item))
			}
			if st.records == 0 {
				t.Errorf("no record produced")
			}
			t.Logf("%d runs: %d records, %d drops, %d gojq errors, %d bails to gojq", st.runs, st.records, st.drops, st.errors, st.bails)
			for _, b := range st.bailed {
				t.Logf("bailed to gojq: %s", b)
			}
			total.runs += st.runs
			total.records += st.records
			total.bails += st.bails
		})
	}
	if n := fastPathPanics.Load() - before; n != 0 {
		t.Errorf("the plan panicked %d times", n)
	}
	t.Logf("total: %d runs, %d records, %d bails to gojq", total.runs, total.records, total.bails)
	if len(fallbacks) == 0 {
		t.Logf("every normalizer (%d) runs on the fast path", len(offers))
	}
	for _, f := range fallbacks {
		t.Logf("falls back to gojq: %s", f)
	}
}

// fpOddItems are items no fixture has: other JSON types, invalid JSON,
// duplicate and escaped keys, numbers and strings at the edges.
var fpOddItems = []string{
	`null`, `true`, `1`, `"x"`, `[]`, `[1,2]`, `{}`, ` {} `, `{`, `{"a":1,}`, `[1 2]`, `nul`,
	`{"a":1,"a":2}`, `{"title":"x","title":"y","id":1}`, `{"\u0069d":"1","title":"t"}`, `{"id":"1","\u0069d":"2","title":"t"}`,
	`{"id":"x","title":"t","external_url_title":{"https:\/\/a.example\/x":"A","b\u00e9":"B"},"input":{"url":"https:\/\/u.example"}}`,
	`{"id":1e400,"title":"x"}`, `{"id":-0,"title":"x"}`, `{"id":12345678901234567890,"title":"x"}`,
	`{"id":1.5e300,"title":"x","views":"1e400"}`, `{"id":"a\ud800b","title":"\ud83d\ude00 \u2028 <&>"}`,
	`{"id":"` + "\xff" + `","title":"x"}`, `{"id":"x","title":"tab\there"}`, "{\"id\":\"x\",\"title\":\"raw\ttab\"}",
	`{"title":{"a":null,"b":[null,1,{"c":null}]},"id":"x","description":[null,{"x":null}]}`,
	`{"error":"boom"}`, `{"error":null,"id":"1"}`, `{"error_code":"x","errorDescription":"y"}`,
	`{"id":"1","name":"n","url":"u","username":"u","title":"t","fullName":"f","urn":"u","reactor":{},"place_id":"p","placeId":"p","post_id":"1","event_id":"1","account":"a","publicIdentifier":"p","post_text":"t","video_url":"v"}`,
}

type fpVariant struct {
	what string
	item []byte
}

// fpVariants mutates item: every member (at any depth, up to a bound)
// removed, set to null and given other types; numbers written as strings
// and as floats; strings with characters JSON writers escape; the whole
// text with escaped slashes and escaped non-ASCII.
func fpVariants(item []byte) []fpVariant {
	var v any
	d := json.NewDecoder(bytes.NewReader(item))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return nil
	}
	var out []fpVariant
	add := func(what string, x any) {
		b, err := json.Marshal(x)
		if err == nil {
			out = append(out, fpVariant{what, b})
		}
	}
	for _, p := range fpPaths(v, nil, 0) {
		for _, m := range fpMutations {
			if w, ok := fpMutate(v, p, m.f); ok {
				add(fmt.Sprintf("%s %s", m.name, strings.Join(p, ".")), w)
			}
		}
	}
	add("numbers as strings", fpMap(v, func(x any) any {
		if n, ok := x.(json.Number); ok {
			return string(n)
		}
		return x
	}))
	add("numbers as floats", fpMap(v, func(x any) any {
		if n, ok := x.(json.Number); ok && !strings.ContainsAny(string(n), ".eE") {
			return json.Number(string(n) + ".0")
		}
		return x
	}))
	add("numbers with exponents", fpMap(v, func(x any) any {
		if n, ok := x.(json.Number); ok && !strings.ContainsAny(string(n), ".eE") {
			return json.Number(string(n) + "e0")
		}
		return x
	}))
	add("strings with specials", fpMap(v, func(x any) any {
		if s, ok := x.(string); ok {
			return s + " <&> \u2028 é \"q\" \\ \t"
		}
		return x
	}))
	add("strings empty", fpMap(v, func(x any) any {
		if _, ok := x.(string); ok {
			return ""
		}
		return x
	}))
	add("numeric strings", fpMap(v, func(x any) any {
		if _, ok := x.(string); ok {
			return "1,234"
		}
		return x
	}))
	out = append(out, fpVariant{"escaped slashes", bytes.ReplaceAll(item, []byte("/"), []byte(`\/`))})
	out = append(out, fpVariant{"escaped non-ASCII", fpEscapeNonASCII(item)})
	return out
}

var fpMutations = []struct {
	name string
	f    func(any) any
}{
	{"remove", nil},
	{"null", func(any) any { return nil }},
	{"empty string", func(any) any { return "" }},
	{"string", func(x any) any {
		if n, ok := x.(json.Number); ok {
			return string(n)
		}
		return "12"
	}},
	{"number", func(any) any { return json.Number("1700000000") }},
	{"float", func(any) any { return json.Number("2.5") }},
	{"bool", func(any) any { return true }},
	{"false", func(any) any { return false }},
	{"array", func(x any) any { return []any{x, nil, "s", json.Number("3")} }},
	{"empty array", func(any) any { return []any{} }},
	{"object", func(x any) any { return map[string]any{"url": "u", "name": x, "x": nil} }},
	{"empty object", func(any) any { return map[string]any{} }},
}

// fpPaths lists member paths of v, depth first, bounded.
func fpPaths(v any, prefix []string, depth int) [][]string {
	if depth > 3 {
		return nil
	}
	var out [][]string
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := append(append([]string(nil), prefix...), k)
			out = append(out, p)
			out = append(out, fpPaths(x[k], p, depth+1)...)
		}
	case []any:
		for i, e := range x {
			if i > 1 {
				break
			}
			p := append(append([]string(nil), prefix...), strconv.Itoa(i))
			out = append(out, p)
			out = append(out, fpPaths(e, p, depth+1)...)
		}
	}
	return out
}

// fpMutate returns a copy of v with the member at path p replaced by f of
// it (removed when f is nil).
func fpMutate(v any, p []string, f func(any) any) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		old, ok := x[p[0]]
		if !ok {
			return nil, false
		}
		w := make(map[string]any, len(x))
		for k, e := range x {
			w[k] = e
		}
		if len(p) > 1 {
			e, ok := fpMutate(old, p[1:], f)
			if !ok {
				return nil, false
			}
			w[p[0]] = e
		} else if f == nil {
			delete(w, p[0])
		} else {
			w[p[0]] = f(old)
		}
		return w, true
	case []any:
		i, err := strconv.Atoi(p[0])
		if err != nil || i >= len(x) {
			return nil, false
		}
		w := append([]any(nil), x...)
		if len(p) > 1 {
			e, ok := fpMutate(x[i], p[1:], f)
			if !ok {
				return nil, false
			}
			w[i] = e
		} else if f == nil {
			w = append(w[:i], w[i+1:]...)
		} else {
			w[i] = f(x[i])
		}
		return w, true
	}
	return nil, false
}

// fpMap applies f to every value of v, bottom up.
func fpMap(v any, f func(any) any) any {
	switch x := v.(type) {
	case map[string]any:
		w := make(map[string]any, len(x))
		for k, e := range x {
			w[k] = fpMap(e, f)
		}
		return f(w)
	case []any:
		w := make([]any, len(x))
		for i, e := range x {
			w[i] = fpMap(e, f)
		}
		return f(w)
	}
	return f(v)
}

func fpEscapeNonASCII(b []byte) []byte {
	var out []byte
	for _, r := range string(b) {
		switch {
		case r < utf8.RuneSelf:
			out = append(out, byte(r))
		case r > 0xFFFF:
			r -= 0x10000
			out = fmt.Appendf(out, `\u%04x\u%04x`, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
		default:
			out = fmt.Appendf(out, `\u%04X`, r)
		}
	}
	return out
}

// fpProgram compiles a normalize program for the table tests.
func fpProgram(t *testing.T, src string) *Program {
	t.Helper()
	p, err := compileProgram(src, true)
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
	}
	for _, src := range programs {
		p, err := compileProgram(src, true)
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
	if ok, why := (&Program{}).FastPath(); ok || why == "" {
		t.Errorf("a request program: FastPath() = %v, %q", ok, why)
	}
}

// TestFastPathHelpers holds the plan's toint, tonum, iso8601 and nonempty
// to the Go helpers gojq calls.
func TestFastPathHelpers(t *testing.T) {
	values := []string{
		`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `1.5`, `2.5`, `-2.5`, `1e21`, `1e300`, `12345678901234567890`,
		`1700000000`, `1700000000.5`, `1700000000123`, `99999999999`, `100000000001`, `-5`, `""`, `" "`, `"0"`, `"12"`,
		`"1,234"`, `"1,234.5"`, `"10K"`, `"10k+"`, `"1.5M"`, `"2B"`, `"3b"`, `"K"`, `"+"`, `"1e3"`, `"0x10"`, `"NaN"`,
		`"Inf"`, `"-Inf"`, `"1e400"`, `"abc"`, `" 42 "`, `"9007199254740993"`, `"2024-05-06T07:08:09Z"`,
		`"2024-05-06T07:08:09.123456789+02:00"`, `"2024-05-06T07:08:09"`, `"2024-05-06 07:08:09"`,
		`"2024-05-06T07:08:09.000+0200"`, `"2024-05-06"`, `"Mon, 06 May 2024 07:08:09 +0200"`,
		`"Mon, 06 May 2024 07:08:09 GMT"`, `"0001-01-01T00:00:00Z"`, `"2024-05-06T07:08:09.5"`, `"2024-05-06T07:08:09+0200"`, `"2024-05-06T07:08:09.000+0200"`, `"2024-05-06T07:08"`, `"2024-05-06 07:08"`, `"2024-05-06x"`, `"2024-13-45"`, `"1e3"`, `"-1e3"`, `"1e-3"`, `"+5"`, `"0x1p-2"`, `"infinity"`, `"1_000"`, `"12:30"`, `" 2024-05-06 "`, `"1,234 followers"`, `"12.5K views"`, `"500+ connections"`, `"3 days ago"`, `"1 234"`, `"2 - 3 people"`, `"1.2 M"`, `"12 "`, `"no reviews"`, `"1700000000"`, `[]`, `[0]`, `{}`, `{"a":1}`,
	}
	for _, f := range []string{"toint", "tonum", "iso8601", "nonempty"} {
		p := fpProgram(t, fmt.Sprintf("{v: (.[] | %s)}", f))
		st := fpStats{}
		for _, v := range values {
			fpDiff(t, p, []byte("["+v+"]"), "", &st, f+" of "+v)
		}
		if st.bails != 0 {
			t.Errorf("%s: %d bails", f, st.bails)
		}
	}
}

// TestFastPathLayouts keeps parseLayouts' shortcuts in step with
// timeLayouts: a layout whose text starts YYYY-MM-DD is listed under the
// character that follows (or none), in timeLayouts' order; the others
// cannot read such a string.
func TestFastPathLayouts(t *testing.T) {
	ref := time.Date(2006, 1, 2, 15, 4, 5, 123456789, time.UTC)
	var only, tee, space []string
	for _, l := range timeLayouts {
		s := ref.Format(l)
		if !strings.HasPrefix(l, "2006-01-02") && !strings.HasPrefix(l, "Mon, ") {
			t.Errorf("layout %q starts with neither a YYYY-MM-DD date nor a weekday and a comma", l)
		}
		if !strings.HasPrefix(l, "2006-01-02") {
			if len(s) >= 10 && s[4] == '-' && s[7] == '-' {
				t.Errorf("layout %q writes a YYYY-MM-DD prefix without starting with one", l)
			}
			if _, err := time.Parse(l, "2006-01-02T15:04:05Z"); err == nil {
				t.Errorf("layout %q reads a YYYY-MM-DD string", l)
			}
			continue
		}
		switch {
		case len(l) == 10:
			only = append(only, l)
		case l[10] == 'T':
			tee = append(tee, l)
		case l[10] == ' ':
			space = append(space, l)
		default:
			t.Errorf("layout %q: unexpected character after the date", l)
		}
	}
	for _, c := range []struct {
		got, want []string
	}{{isoDateOnly, only}, {isoDateT, tee}, {isoDateSpace, space}} {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("shortcut layouts %q, timeLayouts give %q", c.got, c.want)
		}
	}
}

// TestFastPathConcurrent runs every plan from several goroutines at once
// (run it with -race): plans and their pooled run state must not leak
// between runs.
func TestFastPathConcurrent(t *testing.T) {
	files := fpLoadFixtures(t)
	type job struct {
		p     *Program
		input string
		item  []byte
		want  []byte
		ok    bool
	}
	var jobs []job
	for _, o := range fpOffers(t) {
		input := o.service.Accepts[0].Example
		for _, item := range o.ownItems(files) {
			want, ok, err := o.offer.Normalize.normalizeGojq(context.Background(), item, input, fpNow)
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

// TestParseNumString pins what toint and tonum read from strings (both
// engines share parseNumString; TestFastPathHelpers holds them together).
func TestParseNumString(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"12", 12, true}, {" 42 ", 42, true}, {"1,234", 1234, true}, {"10,001+", 10001, true},
		{"1.2K", 1200, true}, {"10k+", 10000, true}, {"1.5M", 1.5e6, true}, {"2B", 2e9, true},
		{"1,234 followers", 1234, true}, {"12.5K views", 12500, true}, {"500+ connections", 500, true},
		{"1.2 M views", 1.2e6, true}, {"1.2 M", 1.2e6, true}, {"3 abonnés", 3, true},
		{"", 0, false}, {"abc", 0, false}, {"no reviews", 0, false}, {"1 234", 0, false},
		{"2 - 3 people", 0, false}, {"2024-05-06", 0, false}, {"12:30", 0, false}, {"1.2.3 views", 0, false},
		{"NaN", 0, false}, {"1e400", 0, false}, {"K", 0, false}, {"5 views 3", 0, false},
	}
	for _, tc := range tests {
		got, ok := parseNumString(tc.in)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("parseNumString(%q) = %v, %v; want %v, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// TestToISO pins what iso8601 reads (both engines share fromEpoch and the
// layouts; TestFastPathHelpers holds them together): epoch seconds and
// milliseconds from 1973 on, the declared layouts; a year, a count or 0
// is no timestamp.
func TestToISO(t *testing.T) {
	tests := []struct {
		in   any
		want any
	}{
		{1700000000, "2023-11-14T22:13:20.000Z"}, {1700000000.5, "2023-11-14T22:13:20.500Z"},
		{1700000000123.0, "2023-11-14T22:13:20.123Z"}, {"1700000000", "2023-11-14T22:13:20.000Z"},
		{100000000, "1973-03-03T09:46:40.000Z"}, {"2024-05-06", "2024-05-06T00:00:00.000Z"},
		{"2024-05-06T07:08:09+02:00", "2024-05-06T05:08:09.000Z"},
		{"2021", nil}, {2021, nil}, {0, nil}, {"0", nil}, {99999999, nil}, {-5, nil}, {"10 months ago", nil}, {nil, nil},
	}
	for _, tc := range tests {
		if got := toISO(tc.in); got != tc.want {
			t.Errorf("toISO(%#v) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}
