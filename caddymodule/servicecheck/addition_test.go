package servicecheck

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"socialrouter/internal/testservices"
)

// TestTestOnlyServicesPassCheck: the test-only declarations (the probe and
// swap services the reload tests add, and the operator set's services) pass
// the checks a reload runs, beside whatever services/ declares; what Add
// keeps of the operator's instead is checked as declared.
func TestTestOnlyServicesPassCheck(t *testing.T) {
	dir := t.TempDir()
	if err := testservices.CopyServices(testservices.ServicesDir(filepath.Join("..", "..", "services")), dir); err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{testservices.Probe, testservices.Swap, testservices.Operator} {
		if skipped, err := testservices.Add(dir, set); err != nil {
			t.Fatal(err)
		} else if len(skipped) > 0 {
			t.Logf("kept as the operator declared: %s", strings.Join(skipped, "; "))
		}
	}
	reg, err := Load(context.Background(), dir)
	if err != nil {
		t.Fatalf("the test-only services fail the check: %v", err)
	}
	for _, key := range append(testservices.Keys(testservices.Probe), testservices.Keys(testservices.Swap)...) {
		p, n, _ := strings.Cut(key, "/")
		if _, ok := reg.Service(p, n); !ok {
			t.Errorf("%s not loaded", key)
		}
	}
}
