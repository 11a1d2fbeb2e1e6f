package sources

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"socialrouter/internal/jsonscan"
	"socialrouter/services"
)

// The JSON reads of the upstream path, jsonscan against gjson (the reader
// it replaced in the gateway), on real bodies: the services' example
// answers and, when present, the shared upstream fixtures. Figures in
// docs/perf-log.md.
//
//	go test -run '^$' -bench 'BenchmarkRead' -benchmem ./caddymodule/sources/

// sharedFixtures is where the documented upstream answers of the project
// are kept outside the repository; the benchmarks use them when present.
const sharedFixtures = "/work/shared/fixtures/upstream"

// upstreamBodies returns the example and fixture bodies that are item arrays.
func upstreamBodies(tb testing.TB) [][]byte {
	var bodies [][]byte
	add := func(b []byte) {
		if gjson.ValidBytes(b) && gjson.ParseBytes(b).IsArray() {
			bodies = append(bodies, b)
		}
	}
	err := fs.WalkDir(services.FS, "examples", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".json" {
			return err
		}
		b, err := fs.ReadFile(services.FS, p)
		add(b)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	_ = filepath.WalkDir(sharedFixtures, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(p) == ".json" {
			if b, err := os.ReadFile(p); err == nil {
				add(b)
			}
		}
		return nil
	})
	if len(bodies) == 0 {
		tb.Fatal("no upstream bodies")
	}
	return bodies
}

// runAnswer is a run object as the simulator answers a start or a
// waitForFinish poll.
var runAnswer = []byte(`{"data":{"actId":"dev_fusion~linkedin-profile-scraper","defaultDatasetId":"ds-000000000123",` +
	`"id":"run-000000000123","options":{"maxItems":1},"startedAt":"2026-11-26T14:39:30.123456789Z",` +
	`"stats":{"runTimeSecs":12.5},"status":"RUNNING"}}`)

// TestReadersAgree holds the jsonscan reads to gjson's on the bodies the
// benchmarks use: the same items, error counts and poll fields.
func TestReadersAgree(t *testing.T) {
	for _, body := range upstreamBodies(t) {
		items, errs, _, _, err := splitItems(body)
		want, wantErrs, ok := splitItemsRef(body)
		if err != nil || !ok || len(items) != len(want) || errs != wantErrs {
			t.Fatalf("split %d items (%d errors, %v), gjson %d (%d, %v)", len(items), errs, err, len(want), wantErrs, ok)
		}
		for i := range items {
			if string(items[i]) != want[i] {
				t.Fatalf("item %d = %s, gjson %s", i, items[i], want[i])
			}
		}
	}
	for _, path := range [][]string{{"data", "status"}, {"data", "id"}, {"data", "defaultDatasetId"}, {"data", "stats"}, {"data", "nope"}} {
		got, want := jsonscan.Field(runAnswer, path...), gjson.GetBytes(runAnswer, path[0]+"."+path[1]).String()
		if got != want {
			t.Errorf("Field(%v) = %q, gjson %q", path, got, want)
		}
	}
}

// BenchmarkReadSplit splits every body into items and counts the error
// records: splitItems (jsonscan's strict check and split in one pass)
// against the gjson version (validate, then walk).
func BenchmarkReadSplit(b *testing.B) {
	bodies := upstreamBodies(b)
	n := 0
	for _, body := range bodies {
		n += len(body)
	}
	b.Run("jsonscan", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			for _, body := range bodies {
				if _, _, _, _, err := splitItems(body); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		b.SetBytes(int64(n))
		for b.Loop() {
			for _, body := range bodies {
				if _, _, ok := splitItemsRef(body); !ok {
					b.Fatal("not split")
				}
			}
		}
	})
}

// BenchmarkReadPoll reads what the actor_run client reads from a run
// answer: the id and dataset of a start, the status of a poll.
func BenchmarkReadPoll(b *testing.B) {
	b.Run("jsonscan", func(b *testing.B) {
		for b.Loop() {
			if jsonscan.Field(runAnswer, "data", "id") == "" || jsonscan.Field(runAnswer, "data", "defaultDatasetId") == "" ||
				jsonscan.Field(runAnswer, "data", "status") != "RUNNING" {
				b.Fatal("not read")
			}
		}
	})
	b.Run("gjson", func(b *testing.B) {
		for b.Loop() {
			if gjson.GetBytes(runAnswer, "data.id").String() == "" || gjson.GetBytes(runAnswer, "data.defaultDatasetId").String() == "" ||
				gjson.GetBytes(runAnswer, "data.status").String() != "RUNNING" {
				b.Fatal("not read")
			}
		}
	})
}
