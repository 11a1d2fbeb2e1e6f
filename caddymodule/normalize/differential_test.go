package normalize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"socialrouter/caddymodule/normalize"
	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/servicecheck"
	"socialrouter/internal/jsonscan"
	"socialrouter/internal/testservices"
	"socialrouter/services"
)

// The differential test: the plan and gojq run every fixture item of every
// offer (and mutated copies of each), and must agree.

const fpNow = "2026-01-02T03:04:05.000Z"

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
	// The services' examples: <source>/<platform>__<service>.json upstream
	// payloads, the simulator's copy of the shared fixtures
	// (TestFixturesMatchShared).
	examples, err := fs.Sub(testservices.ServicesFS(services.FS), "examples")
	if err != nil {
		t.Fatal(err)
	}
	paths, _ := fs.Glob(examples, "*/*.json")
	var files []fpFile
	for _, p := range paths {
		b, err := fs.ReadFile(examples, p)
		if err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			continue // not an item list (routes.json)
		}
		src := path.Dir(p)
		platform, svc, ok := strings.Cut(strings.TrimSuffix(path.Base(p), ".json"), "__")
		if !ok {
			continue
		}
		files = append(files, fpFile{src, platform, svc, p, items})
	}
	if len(files) == 0 {
		t.Fatal("no upstream fixtures in services/examples")
	}
	return files
}

// fpVariantsDir holds the registry's variant payloads
// (TestVariantPayloads): <source>/<offer name>/<platform>__<service>.<variant>.json.
const fpVariantsDir = "../registry/testdata/variants"

// fpLoadVariants reads the variant payloads, keyed by service and offer
// (fpOffer.name).
func fpLoadVariants(t testing.TB) map[string][]json.RawMessage {
	t.Helper()
	paths, _ := filepath.Glob(filepath.Join(fpVariantsDir, "*", "*", "*.json"))
	out := map[string][]json.RawMessage{}
	for _, p := range paths {
		if strings.HasSuffix(p, ".golden.json") {
			continue
		}
		rel, _ := filepath.Rel(fpVariantsDir, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		platform, rest, _ := strings.Cut(parts[2], "__")
		f := strings.SplitN(rest, ".", 3) // a service name holds one dot itself
		if len(f) < 3 {
			t.Fatalf("variant %s is not named <platform>__<service>.<variant>.json", rel)
		}
		service := f[0] + "." + f[1]
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var items []json.RawMessage
		if err := json.Unmarshal(b, &items); err != nil {
			t.Fatalf("variant %s: %v", rel, err)
		}
		key := platform + "/" + service + "|" + parts[0] + "/" + parts[1]
		out[key] = append(out[key], items...)
	}
	return out
}

type fpOffer struct {
	service *registry.Service
	offer   *registry.Offer
}

func (o fpOffer) name() string { return o.service.Key + "|" + o.offer.ID }

func fpOffers(t testing.TB) []fpOffer {
	t.Helper()
	reg, err := registry.LoadFS(testservices.ServicesFS(services.FS))
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
func fpDiff(t *testing.T, p *normalize.Program, item []byte, input string, st *fpStats, what string) {
	t.Helper()
	st.runs++
	want, wantOK, wantErr := p.NormalizeGojq(context.Background(), item, input, fpNow)
	got, gotOK, gotErr := p.RunPlan(item, input, fpNow)
	switch {
	case gotErr == normalize.ErrPanic:
		t.Errorf("%s: the plan panicked\nitem: %s", what, item)
		return
	case gotErr == normalize.ErrJQ && wantErr == nil:
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
	// The public entry point must answer exactly as gojq does, behind the
	// pipeline's guard: an error row is never a record.
	if normalize.IsErrorItem(item) {
		want, wantOK = nil, false
	}
	pub, pubOK, pubErr := p.NormalizeItem(context.Background(), item, input, fpNow)
	if pubErr != nil || pubOK != wantOK || !bytes.Equal(pub, want) {
		t.Errorf("%s: NormalizeItem = %s %v %v, gojq %s", what, pub, pubOK, pubErr, want)
	}
	// So must the entry point for items the splitter checked, for every item
	// jsonscan's strict check accepts (the others reach the plan only through NormalizeItem).
	var c jsonscan.Checker
	if c.Valid(string(item)) {
		chk, chkOK, chkErr := p.NormalizeCheckedItem(context.Background(), item, input, fpNow)
		if chkErr != nil || chkOK != wantOK || !bytes.Equal(chk, want) {
			t.Errorf("%s: NormalizeCheckedItem = %s %v %v, gojq %s", what, chk, chkOK, chkErr, want)
		}
		// And the one the router calls with the members the splitter
		// located while it checked the item.
		if ms := fpMembers(item); ms != nil {
			idx, idxOK, idxErr := p.AppendIndexedItem(context.Background(), nil, item, ms, input, fpNow)
			if idxErr != nil || idxOK != wantOK || !bytes.Equal(idx, want) {
				t.Errorf("%s: AppendIndexedItem = %s %v %v, gojq %s", what, idx, idxOK, idxErr, want)
			}
		}
	}
}

// fpMembers locates the members of item, a checked object from its first
// byte, as the upstream splitter does while it checks a body
// (jsonscan.MemberAt in Checker.Object's callback); nil when it cannot
// (not an object there, a key with an escape).
func fpMembers(item []byte) []jsonscan.Member {
	s := jsonscan.Bytes(item)
	if len(s) == 0 || s[0] != '{' {
		return nil
	}
	var c jsonscan.Checker
	ms, all := []jsonscan.Member{}, true
	end := c.Object(s, 0, func(k, v string) {
		m, ok := jsonscan.MemberAt(s, k, v)
		all = all && ok
		ms = append(ms, m)
	})
	if end != len(s) || !all {
		return nil
	}
	return ms
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
	variants := fpLoadVariants(t)
	offers := fpOffers(t)
	before := normalize.FastPathPanics()
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
			own = append(own, variants[o.name()]...)
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
	if n := normalize.FastPathPanics() - before; n != 0 {
		t.Errorf("the plan panicked %d times", n)
	}
	t.Logf("total: %d runs, %d records, %d bails to gojq", total.runs, total.records, total.bails)
	if len(fallbacks) == 0 {
		t.Logf("every normalizer (%d) runs on the fast path", len(offers))
	}
	// A normalizer off the plan is valid and runs every item on gojq, ~8 ×
	// the CPU (make bench's 6b); sdr check names it (TestOffPlanIsReported)
	// and SUBSET.md says which constructs keep a program off the plan.
	for _, f := range fallbacks {
		t.Logf("runs on gojq: %s", f)
	}
}

// TestOffPlanIsReported holds the tests, sdr check and SUBSET.md to one rule:
// a normalizer outside the compiled subset serves on gojq, and sdr check
// names exactly those offers, with the construct, without failing.
func TestOffPlanIsReported(t *testing.T) {
	reg, err := registry.LoadFS(services.FS)
	if err != nil {
		t.Fatal(err)
	}
	reported := strings.Join(servicecheck.SlowOffers(reg), "\n")
	for _, o := range fpOffers(t) {
		if !slices.Contains(o.service.LiveOffers(), o.offer) {
			continue // sdr check runs live offers only
		}
		fast, why := o.offer.Normalize.FastPath()
		named := strings.Contains(reported, "offer "+o.offer.ID+" of "+o.service.Key+" ")
		if fast == named || !fast && !strings.Contains(reported, why) {
			t.Errorf("%s: on the plan %v (%s), but sdr check's notes say: %q", o.name(), fast, why, reported)
		}
	}
	// A program off the plan still normalizes, on gojq.
	p, err := normalize.CompileNormalizer(`{name: .a, n: (reduce .xs[] as $x (0; . + $x))}`)
	if err != nil {
		t.Fatal(err)
	}
	if fast, why := p.FastPath(); fast || why != "reduce" {
		t.Fatalf("FastPath() = %v, %q; want false, reduce", fast, why)
	}
	rec, ok, err := p.NormalizeItem(t.Context(), []byte(`{"a":"x","xs":[1,2]}`), "", fpNow)
	if err != nil || !ok || string(rec) != `{"n":3,"name":"x"}` {
		t.Errorf("NormalizeItem = %s, %v, %v", rec, ok, err)
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
		for _, k := range slices.Sorted(maps.Keys(x)) {
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
