package tests

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadKeepsTheStore: a reload that would move the running gateway to
// another store (a reload from a shell without SDR_DATA_DIR, say) is
// refused with a message naming both stores, and the gateway keeps
// serving its keys from the store it runs on; a reload on the same store
// still works.
func TestReloadKeepsTheStore(t *testing.T) {
	c := defaultConfig(t, nil)
	g := startGateway(t, c)
	key := g.account("acme", 5)

	moved := c
	moved.Storage = "badger " + filepath.Join(t.TempDir(), "elsewhere")
	out := reload(t, g, writeCaddyfile(t, t.TempDir(), moved), false)
	from, to := strings.TrimPrefix(c.Storage, "badger "), strings.TrimPrefix(moved.Storage, "badger ")
	if want := "storage: this reload would switch the running gateway from badger " + from + " to badger " + to; !strings.Contains(out, want) {
		t.Errorf("reload output lacks %q:\n%s", want, out)
	}
	if r := g.do("GET", "/v1/account/balance", key, nil); r.Status != 200 {
		t.Errorf("the key stopped working after the refused reload: %d %s", r.Status, r.Body)
	}

	same := c
	same.RateCount++ // a real change, on the same store
	reload(t, g, writeCaddyfile(t, t.TempDir(), same), true)
	if r := g.do("GET", "/v1/account/balance", key, nil); r.Status != 200 {
		t.Errorf("the key stopped working after a reload on the same store: %d %s", r.Status, r.Body)
	}
}
