package servicecheck

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"socialrouter/internal/testservices"
)

// TestTestOnlyServicesPassCheck: the test-only declarations (the probe the
// reload tests add, and the trial's two services) pass the checks a reload
// runs, beside whatever services/ declares.
func TestTestOnlyServicesPassCheck(t *testing.T) {
	dir := t.TempDir()
	if err := testservices.CopyServices(filepath.Join("..", "..", "services"), dir); err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{testservices.Probe, testservices.Addition} {
		if skipped, err := testservices.Add(dir, set); err != nil {
			t.Fatal(err)
		} else if len(skipped) > 0 {
			t.Logf("services/ already declares %s: kept as declared", strings.Join(skipped, ", "))
		}
	}
	reg, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("the test-only services fail the check: %v", err)
	}
	for _, key := range append(testservices.Keys(testservices.Probe), testservices.Keys(testservices.Addition)...) {
		p, n, _ := strings.Cut(key, "/")
		if _, ok := reg.Service(p, n); !ok {
			t.Errorf("%s not loaded", key)
		}
	}
}
