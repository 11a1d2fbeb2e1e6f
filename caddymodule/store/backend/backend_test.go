package backend

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
)

func TestParse(t *testing.T) {
	tests := []struct {
		typ, loc string
		want     Config
		err      string
	}{
		{"badger", "./data", Config{Type: Badger, Dir: "./data"}, ""},
		{"postgres", "postgres://h/db", Config{Type: Postgres, URL: "postgres://h/db"}, ""},
		{"sqlite", "./x", Config{}, `unknown storage "sqlite": use badger <dir> or postgres <url>`},
	}
	for _, tt := range tests {
		got, err := Parse(tt.typ, tt.loc)
		if tt.err != "" {
			if err == nil || err.Error() != tt.err {
				t.Errorf("Parse(%q) error %v, want %q", tt.typ, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Parse(%q, %q) = %+v, %v; want %+v", tt.typ, tt.loc, got, err, tt.want)
		}
	}
}

func TestOpenRefusesIncompleteConfigs(t *testing.T) {
	tests := []struct {
		cfg  Config
		want string
	}{
		{Config{Type: Badger}, "storage badger needs a directory"},
		{Config{Type: Postgres}, "storage postgres needs a URL"},
		{Config{Type: "bolt", Dir: "x"}, `unknown storage type "bolt"`},
	}
	for _, tt := range tests {
		if _, err := tt.cfg.Open(context.Background()); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open(%+v) = %v, want an error containing %q", tt.cfg, err, tt.want)
		}
	}
	if _, err := (Config{Type: "bolt"}).Key(); err == nil {
		t.Error("Key of an unknown type: no error")
	}
}

// TestOpenBadger opens a badger store through the config, writes to it,
// and checks that the key is the absolute directory.
func TestOpenBadger(t *testing.T) {
	dir := t.TempDir()
	cfg := Config{Type: Badger, Dir: dir}
	s, err := cfg.Open(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateAccount(context.Background(), "acme", credits.Micros(5), testNow); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		t.Errorf("no badger store in %s: %v", dir, err)
	}
	key, err := cfg.Key()
	if err != nil || key != "badger:"+dir {
		t.Errorf("Key = %q, %v; want badger:%s", key, err, dir)
	}
	if got := cfg.String(); got != "badger store in "+dir {
		t.Errorf("String = %q", got)
	}
	if got := (Config{Type: Postgres, URL: "postgres://u:secret@h/db", Schema: "s"}).String(); strings.Contains(got, "secret") || got != "postgres store (schema s)" {
		t.Errorf("postgres String = %q", got)
	}
}

var testNow = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
