package normalize

import (
	"context"
	"strings"
	"testing"
)

// TestErrorItemsAreNeverRecords: a program that forgets to guard the
// sources' error rows still makes no record of one, on either engine path
// (the compiled plan and gojq), while the same program keeps data items.
func TestErrorItemsAreNeverRecords(t *testing.T) {
	programs := map[string]string{
		"plan": `{source: "x", extracted_at: $now, name: .name}`,
		"gojq": `label $out | reduce . as $i ({source: "x", extracted_at: $now}; .name = $i.name)`,
	}
	items := []struct {
		item   string
		record bool
	}{
		{`{"error": "Event not found", "error_code": "dead_page", "input": {"url": "x"}}`, false},
		{`{"error_code": "crawl_failed"}`, false},
		{`{"warning": "page does not exist", "warning_code": "dead_page"}`, false},
		{`{"name": "Ann", "warning": "partial"}`, false},
		{`{"name": "Ann", "error": null, "warning_code": null}`, true},
		{`{"name": "Ann", "details": {"error": "nested, not a marker"}}`, true},
		{`{"name": "Ann", "\u0065rror": "a marker spelled with an escape"}`, false},
		{`{"name": "Ann", "warning_code": false}`, false},
		{`{"name": "Ann", "errors": "not a marker"}`, true},
	}
	for engine, src := range programs {
		p, err := CompileNormalizer(src)
		if err != nil {
			t.Fatal(err)
		}
		if fast, _ := p.FastPath(); fast != (engine == "plan") {
			t.Fatalf("%s: program on the wrong engine (fast path %v)", engine, fast)
		}
		for _, it := range items {
			for _, checked := range []bool{false, true} {
				rec, ok, err := p.normalizeItem(context.Background(), []byte(it.item), "", "2026-01-01T00:00:00Z", checked)
				if err != nil || ok != it.record {
					t.Errorf("%s: %s: record %v (%s), error %v; want record %v", engine, it.item, ok, rec, err, it.record)
				}
			}
			if engine == "plan" {
				// The plan tells an error row itself, without leaving the
				// item to gojq's path.
				if rec, ok, err := p.plan.run(nil, []byte(it.item), "", "2026-01-01T00:00:00Z", false); err != nil || ok != it.record {
					t.Errorf("plan alone: %s: record %v (%s), error %v; want record %v", it.item, ok, rec, err, it.record)
				}
			}
		}
	}
}

func TestIsErrorItem(t *testing.T) {
	for item, want := range map[string]bool{
		`{"error": "x"}`:                true,
		`{"error_code": "dead_page"}`:   true,
		`{"warning_code": "dead_page"}`: true,
		`{"warning": "partial"}`:        true,
		`{"error": null}`:               false,
		`{"\u0065rror": "x"}`:           true,
		`{"a": "\u00e9", "b": 1}`:       false,
		`[{"error": "x"}]`:              false,
		`"error"`:                       false,
		`{"error": `:                    false,
		`{}`:                            false,
	} {
		if got := IsErrorItem([]byte(item)); got != want {
			t.Errorf("IsErrorItem(%s) = %v, want %v", item, got, want)
		}
	}
}

// BenchmarkIsErrorItem is the guard's cost per item, on the largest
// example item (a pro_net profile of a few KB).
func BenchmarkIsErrorItem(b *testing.B) {
	item := []byte(`{"id": "x", "name": "Ann", "about": "` + strings.Repeat("text ", 400) + `", "experience": [` +
		strings.Repeat(`{"title": "t", "company": "c", "start_date": "2020"},`, 20) + `{}], "followers": 1234}`)
	b.SetBytes(int64(len(item)))
	for b.Loop() {
		if IsErrorItem(item) {
			b.Fatal("a data item read as an error row")
		}
	}
}
