package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// updateVariants rewrites the variant goldens (the package's external
// tests hold -update for the OpenAPI golden).
var updateVariants = flag.Bool("update-variants", false, "rewrite testdata/variants/**/*.golden.json")

// TestVariantPayloads runs upstream answers in shapes other than the
// examples' (services/examples holds one payload per offer, byte for byte
// the shared fixtures): other published samples of the same actor or
// dataset, older or newer field layouts, counts and dates written another
// way. Each file is testdata/variants/<source>/<offer name>/
// <platform>__<service>.<variant>.json, an array of upstream items; beside
// it, <…>.golden.json holds what the offer's normalizer makes of each item
// (a record, or null where the item is dropped), every record on its
// schema. (The normalize package's differential test runs the same items,
// and mutated copies, on the plan and on gojq.) Regenerate the goldens with -update-variants, then
// read them: they are the review of what each shape yields.
func TestVariantPayloads(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "variants", "*", "*", "*.json"))
	reg := declared(t)
	n := 0
	for _, file := range files {
		if strings.HasSuffix(file, ".golden.json") {
			continue
		}
		n++
		t.Run(strings.TrimPrefix(file, filepath.Join("testdata", "variants")+"/"), func(t *testing.T) {
			rel, _ := filepath.Rel(filepath.Join("testdata", "variants"), file)
			parts := strings.Split(filepath.ToSlash(rel), "/")
			offerID := parts[0] + "/" + parts[1]
			// <platform>__<noun>.<verb>.<variant>.json: a service name holds
			// one dot itself (profile.info).
			platform, rest, _ := strings.Cut(strings.TrimSuffix(parts[2], ".json"), "__")
			f := strings.SplitN(rest, ".", 3)
			if len(f) < 3 {
				t.Fatalf("%s is not named <platform>__<service>.<variant>.json", parts[2])
			}
			s, ok := reg.Service(platform, f[0]+"."+f[1])
			if !ok {
				t.Fatalf("no service %s/%s.%s", platform, f[0], f[1])
			}
			o, ok := s.Offer(offerID)
			if !ok {
				t.Fatalf("service %s has no offer %s", s.Key, offerID)
			}
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var items []json.RawMessage
			if err := json.Unmarshal(b, &items); err != nil || len(items) == 0 {
				t.Fatalf("not a non-empty JSON array of items: %v", err)
			}
			got := make([]json.RawMessage, len(items))
			kept := 0
			for i, item := range items {
				rec, ok, err := o.Normalize.NormalizeItem(context.Background(), item, firstInput(s), fixtureNow)
				if err != nil {
					t.Fatalf("item %d: %v", i, err)
				}
				got[i] = json.RawMessage("null")
				if !ok {
					continue
				}
				kept++
				if v := s.CheckRecord(rec); v != nil {
					t.Errorf("item %d: record off its schema: %v\n%s", i, v, rec)
				}
				got[i] = rec
			}
			if kept == 0 {
				t.Error("every item was dropped: a variant must show what a data item yields")
			}
			var out bytes.Buffer
			enc := json.NewEncoder(&out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			_ = enc.Encode(got)
			golden := strings.TrimSuffix(file, ".json") + ".golden.json"
			if *updateVariants {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("no golden (run make snapshots, then read it): %v", err)
			}
			if !bytes.Equal(want, out.Bytes()) {
				t.Errorf("records differ from %s (run make snapshots and read the diff):\n%s", golden, out.String())
			}
		})
	}
	if n == 0 {
		t.Skip("no variant payloads under testdata/variants")
	}
}
