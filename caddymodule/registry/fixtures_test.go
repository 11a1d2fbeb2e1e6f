package registry

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
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The fixtures are the services' examples, real (or documented) upstream
// payloads, one file per <source>/<platform>__<service>.json under
// services/examples: shared/fixtures/upstream plus the examples of offers
// it has none for (TestFixturesMatchShared keeps the copies in step).
// Reading the in-repository copy means a clone without shared/ beside it
// runs these tests instead of skipping them. Every fixture goes through the
// normalizer of each offer of its source that serves that service; every
// record must validate against the service's record definition.

// fixturesFS is services/examples as embedded in package services; file
// names are <source>/<platform>__<service>.json.
var fixturesFS = mustSub(svcFS, "examples")

func mustSub(fsys fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// sharedFixturesDir is where the fixtures come from, when it is there.
const sharedFixturesDir = "../../../shared/fixtures/upstream"

// TestFixturesMatchShared checks that the simulator's copies are the
// shared fixtures, byte for byte, when shared/ sits beside the repository.
func TestFixturesMatchShared(t *testing.T) {
	shared, _ := filepath.Glob(filepath.Join(sharedFixturesDir, "*", "*.json"))
	if len(shared) == 0 {
		t.Skipf("no shared fixtures at %s: nothing to compare the simulator's copies with", sharedFixturesDir)
	}
	for _, p := range shared {
		rel, _ := filepath.Rel(sharedFixturesDir, p)
		want, _ := os.ReadFile(p)
		got, err := fs.ReadFile(fixturesFS, filepath.ToSlash(rel))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: the simulator's copy differs from shared/ (copy it over): %v", rel, err)
		}
	}
}

const fixtureNow = "2026-01-02T03:04:05.000Z"

var utcTimestampRE = regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$`)

type fixtureRun struct {
	file    string
	service *Service
	offer   *Offer
}

// fixtureRuns lists every (fixture file, service, offer) pair to run.
func fixtureRuns(t *testing.T, reg *Registry) []fixtureRun {
	t.Helper()
	files, err := fs.Glob(fixturesFS, "*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures under services/examples: %v", err)
	}
	var runs []fixtureRun
	for _, f := range files {
		src := path.Dir(f)
		platform, name, ok := strings.Cut(strings.TrimSuffix(path.Base(f), ".json"), "__")
		if !ok {
			t.Errorf("fixture %s is not named <platform>__<service>.json", f)
			continue
		}
		s, ok := reg.Service(platform, name)
		if !ok {
			t.Errorf("fixture %s: no service %s/%s", f, platform, name)
			continue
		}
		n := 0
		for _, o := range s.Offers {
			if o.Source.ID == src {
				runs = append(runs, fixtureRun{f, s, o})
				n++
			}
		}
		if n == 0 {
			t.Errorf("fixture %s: service %s has no %s offer", f, s.Key, src)
		}
	}
	return runs
}

func readItems(t *testing.T, file string) []json.RawMessage {
	t.Helper()
	b, err := fs.ReadFile(fixturesFS, file)
	if err != nil {
		t.Fatal(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(b, &items); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return items
}

// isErrorItem reports whether an upstream item is a per-input error or
// warning record (no data).
func isErrorItem(t *testing.T, item json.RawMessage) bool {
	var m map[string]any
	if err := json.Unmarshal(item, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"error", "error_code", "warning_code"} {
		if m[k] != nil {
			return true
		}
	}
	return false
}

// firstInput is the service's first example, the input the fixture items
// are taken to answer.
func firstInput(s *Service) string { return s.Accepts[0].Example }

func normalizeAll(t *testing.T, r fixtureRun) (records []map[string]any, dataItems int) {
	t.Helper()
	for i, item := range readItems(t, r.file) {
		rec, ok, err := r.offer.Normalize.NormalizeItem(context.Background(), item, firstInput(r.service), fixtureNow)
		if err != nil {
			t.Errorf("item %d: normalize: %v", i, err)
			continue
		}
		errItem := isErrorItem(t, item)
		if !errItem {
			dataItems++
		}
		if !ok {
			if !errItem {
				t.Errorf("item %d: a data item was dropped", i)
			}
			continue
		}
		if errItem {
			t.Errorf("item %d: an error record was not dropped: %s", i, rec)
		}
		if err := declared(t).ValidateRecord(r.service, rec); err != nil {
			t.Errorf("item %d: record does not validate against %s: %v\n%s", i, r.service.Record, err, rec)
		}
		if v := r.service.CheckRecord(rec); v != nil {
			t.Errorf("item %d: CheckRecord refuses a record CUE accepts: %v\n%s", i, v, rec)
		}
		var m map[string]any
		if err := json.Unmarshal(rec, &m); err != nil {
			t.Fatal(err)
		}
		records = append(records, m)
	}
	return records, dataItems
}

func TestFixturesNormalize(t *testing.T) {
	reg := declared(t)
	covered := map[*Offer]bool{}
	for _, r := range fixtureRuns(t, reg) {
		covered[r.offer] = true
		t.Run(fmt.Sprintf("%s/%s/%s", r.file, r.service.Key, r.offer.ID), func(t *testing.T) {
			records, dataItems := normalizeAll(t, r)
			if len(records) != dataItems {
				t.Errorf("%d records from %d data items", len(records), dataItems)
			}
			if len(records) == 0 {
				t.Fatal("no record")
			}
			for i, rec := range records {
				if rec["source"] != r.service.Platform {
					t.Errorf("record %d: source = %v, want %s", i, rec["source"], r.service.Platform)
				}
				at, _ := rec["extracted_at"].(string)
				if !utcTimestampRE.MatchString(at) {
					t.Errorf("record %d: extracted_at = %v, want an ISO 8601 UTC timestamp", i, rec["extracted_at"])
				}
				if len(rec) < 5 {
					t.Errorf("record %d has only %d fields: %v", i, len(rec), rec)
				}
				if p := nullPath(rec, ""); p != "" {
					t.Errorf("record %d: null at %s", i, p)
				}
			}
		})
	}
	// Every offer with a normalizer must be exercised by a fixture.
	for _, s := range reg.Services {
		for _, o := range s.Offers {
			if o.Normalize != nil && !covered[o] {
				t.Errorf("%s %s: no fixture exercises its normalizer", s.Key, o.ID)
			}
		}
	}
}

// nullPath returns the path of a null value anywhere in v ("" when none):
// a field is present only when it has a value.
func nullPath(v any, at string) string {
	switch x := v.(type) {
	case nil:
		return at
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if p := nullPath(x[k], at+"."+k); p != "" {
				return p
			}
		}
	case []any:
		for i, e := range x {
			if p := nullPath(e, fmt.Sprintf("%s[%d]", at, i)); p != "" {
				return p
			}
		}
	}
	return ""
}

// TestNormalizersAreRobust feeds items that are absent, null, mistyped or
// error-shaped: a normalizer must drop or map them without failing, and any
// record it yields must still validate.
func TestNormalizersAreRobust(t *testing.T) {
	reg := declared(t)
	odd := []string{
		`null`, `1`, `"text"`, `[]`, `{}`,
		`{"error": "upstream said no"}`,
		`{"error": "upstream said no", "url": "https://example.com/x"}`,
		`{"error": "Event not found", "error_code": "dead_page", "input": {"url": "x"}, "timestamp": "2026-05-02T10:11:12.000Z"}`,
		`{"warning": "page does not exist", "warning_code": "dead_page", "input": {"url": "x"}}`,
	}
	for _, s := range reg.Services {
		for _, o := range s.Offers {
			for _, item := range odd {
				rec, ok, err := o.Normalize.NormalizeItem(context.Background(), []byte(item), firstInput(s), fixtureNow)
				if err != nil {
					t.Errorf("%s %s: item %s: %v", s.Key, o.ID, item, err)
					continue
				}
				// None of these carries data: each must be dropped.
				if ok {
					t.Errorf("%s %s: item %s yielded a record %s", s.Key, o.ID, item, rec)
				}
			}
		}
	}
	// Every fixture item with each of its fields replaced by null, a string,
	// a number and an object: no error, and any record still validates.
	for _, r := range fixtureRuns(t, reg) {
		valid := map[string]bool{} // records already validated
		for _, item := range readItems(t, r.file) {
			var m map[string]any
			if json.Unmarshal(item, &m) != nil {
				continue
			}
			for k := range m {
				for _, repl := range []any{nil, "1,234", 7.5, map[string]any{"x": 1}, []any{"a", nil}} {
					mutated := map[string]any{}
					for kk, vv := range m {
						mutated[kk] = vv
					}
					mutated[k] = repl
					b, _ := json.Marshal(mutated)
					rec, ok, err := r.offer.Normalize.NormalizeItem(context.Background(), b, firstInput(r.service), fixtureNow)
					if err != nil {
						t.Errorf("%s %s: field %s = %v: %v", r.service.Key, r.offer.ID, k, repl, err)
						continue
					}
					if !ok || valid[string(rec)] {
						continue
					}
					valid[string(rec)] = true
					if err := reg.ValidateRecord(r.service, rec); err != nil {
						t.Errorf("%s %s: field %s = %v: record invalid: %v", r.service.Key, r.offer.ID, k, repl, err)
					}
				}
			}
		}
	}
}

// requestBody runs an offer's request program the way the router calls it.
func requestBody(t *testing.T, o *Offer, inputs []string, options map[string]any, limit int) map[string]any {
	t.Helper()
	ins := make([]any, len(inputs))
	for i, in := range inputs {
		ins[i] = in
	}
	opts := map[string]any{}
	for k, v := range options {
		opts[k] = v
	}
	outs, err := o.Request.Run(context.Background(), map[string]any{"inputs": ins, "options": opts, "limit": limit}, inputs[0], fixtureNow)
	if err != nil {
		t.Fatalf("%s request: %v", o.ID, err)
	}
	if len(outs) != 1 {
		t.Fatalf("%s request yielded %d values, want 1", o.ID, len(outs))
	}
	body, ok := outs[0].(map[string]any)
	if !ok {
		t.Fatalf("%s request yielded %T, want a JSON object", o.ID, outs[0])
	}
	return body
}

func marshalBody(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return buf.String()
}

// alterLastAlnum changes the last letter or digit of s.
func alterLastAlnum(s string) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		switch c := b[i]; {
		case c >= '0' && c <= '9':
			b[i] = '0' + (c-'0'+1)%10
			return string(b)
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z':
			if c == 'q' || c == 'Q' {
				b[i] = c - 1
			} else {
				b[i] = 'q'
			}
			return string(b)
		}
	}
	return s + "1"
}

// probeValue is a value of option o that differs from its default.
func probeValue(o *Option) any {
	switch o.Type {
	case "boolean":
		if b, ok := o.Default.(bool); ok {
			return !b
		}
		return true
	case "integer":
		return 42
	case "enum":
		for _, v := range o.Values {
			if v != o.Default {
				return v
			}
		}
	case "date":
		return "2024-02-03"
	}
	return "zz-probe"
}

func TestRequestPrograms(t *testing.T) {
	reg := declared(t)
	for _, s := range reg.Services {
		for _, o := range s.Offers {
			t.Run(s.Key+"/"+o.ID, func(t *testing.T) {
				// Every example (within max_inputs) is one input of the batch.
				var inputs []string
				for _, a := range s.Accepts {
					if len(inputs) < o.MaxInputs {
						inputs = append(inputs, a.Example)
					}
				}
				defaults, problems := s.ValidateOptions(nil)
				if len(problems) > 0 {
					t.Fatalf("defaults: %v", problems)
				}
				base := requestBody(t, o, inputs, defaults, 7)
				text := marshalBody(base)
				// Each input reaches the body, as is or transformed (a
				// program may send a username, an id or a canonical form):
				// changing one character of it changes the body.
				for i, in := range inputs {
					other := append([]string(nil), inputs...)
					other[i] = alterLastAlnum(in)
					if got := requestBody(t, o, other, defaults, 7); reflect.DeepEqual(got, base) {
						t.Errorf("request body does not depend on input %q: %s", in, text)
					}
				}
				if o.Source.Protocol == "dataset_scrape" {
					list, _ := base["input"].([]any)
					if len(list) != len(inputs) {
						t.Errorf("dataset body has %d inputs, want %d: %s", len(list), len(inputs), text)
					}
				}
				// A declared option reaches the body when the offer implements
				// it, and changes nothing when it does not.
				for _, opt := range s.Options {
					withOpt := map[string]any{}
					for k, v := range defaults {
						withOpt[k] = v
					}
					withOpt[opt.Name] = probeValue(opt)
					got := requestBody(t, o, inputs, withOpt, 7)
					changed := !reflect.DeepEqual(got, base)
					if o.Implements[opt.Name] && !changed {
						t.Errorf("option %s=%v (implemented) did not reach the body: %s", opt.Name, withOpt[opt.Name], marshalBody(got))
					}
					if !o.Implements[opt.Name] && changed {
						t.Errorf("option %s (not implemented) changed the body: %s", opt.Name, marshalBody(got))
					}
				}
			})
		}
	}
}

// TestForumSortOverridesURLSuffix: the sort option replaces a sort suffix of
// the subreddit URL and keeps its query string.
func TestForumSortOverridesURLSuffix(t *testing.T) {
	reg := declared(t)
	s, _ := reg.Service("forum_net", "subreddit.posts")
	for _, o := range s.Offers {
		body := requestBody(t, o, []string{"https://www.reddit.com/r/golang/top/?t=week", "https://www.reddit.com/r/rust"}, map[string]any{"sort": "new"}, 5)
		got := marshalBody(body["startUrls"])
		want := marshalBody([]any{map[string]any{"url": "https://www.reddit.com/r/golang/new/?t=week"}, map[string]any{"url": "https://www.reddit.com/r/rust/new/"}})
		if got != want {
			t.Errorf("%s startUrls = %s, want %s", o.ID, got, want)
		}
	}
}

// typeShape maps every path of a record (arrays as []) to its JSON type.
func typeShape(v any, at string, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		out[at] = "object"
		for k, e := range x {
			typeShape(e, at+"."+k, out)
		}
	case []any:
		out[at] = "array"
		for _, e := range x {
			typeShape(e, at+"[]", out)
		}
	case string:
		out[at] = "string"
	case float64:
		out[at] = "number"
	case bool:
		out[at] = "boolean"
	case nil:
		out[at] = "null"
	}
}

// TestOffersOfOneServiceAgree: where two offers serve one service, the
// fields both produce have the same types (the same entity comes out the
// same whichever offer served).
func TestOffersOfOneServiceAgree(t *testing.T) {
	reg := declared(t)
	shapes := map[*Service]map[*Offer]map[string]string{}
	for _, r := range fixtureRuns(t, reg) {
		if len(r.service.Offers) < 2 {
			continue
		}
		records, _ := normalizeAll(t, r)
		if shapes[r.service] == nil {
			shapes[r.service] = map[*Offer]map[string]string{}
		}
		if shapes[r.service][r.offer] == nil {
			shapes[r.service][r.offer] = map[string]string{}
		}
		for _, rec := range records {
			typeShape(rec, "", shapes[r.service][r.offer])
		}
	}
	for _, s := range reg.Services {
		if len(s.Offers) < 2 {
			continue
		}
		a, b := shapes[s][s.Offers[0]], shapes[s][s.Offers[1]]
		if a == nil || b == nil {
			t.Errorf("%s: both offers need fixtures to compare", s.Key)
			continue
		}
		common := 0
		for path, ta := range a {
			if tb, ok := b[path]; ok {
				common++
				if ta != tb {
					t.Errorf("%s: %s is %s from %s but %s from %s", s.Key, path, ta, s.Offers[0].ID, tb, s.Offers[1].ID)
				}
			}
		}
		if common < 5 {
			t.Errorf("%s: only %d fields in common between %s and %s", s.Key, common, s.Offers[0].ID, s.Offers[1].ID)
		}
	}
}
