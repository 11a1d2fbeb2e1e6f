// Package backend opens the account store a configuration names: badger in
// a directory (one process) or postgres at a URL (several gateway nodes).
// It is the one place that knows the store types; the app, the Caddyfile
// and the export/import commands all go through it.
package backend

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
	pgstore "socialrouter/caddymodule/store/postgres"
)

// The store types.
const (
	Badger   = "badger"
	Postgres = "postgres"
)

// Config selects the store: Type Badger with Dir, or Type Postgres with URL.
// Its JSON form is the app's "storage" object.
type Config struct {
	Type string `json:"type"`
	Dir  string `json:"dir,omitempty"`
	URL  string `json:"url,omitempty"`
	// MinFree, badger only, is the free space in bytes the store keeps in
	// reserve on its filesystem: below it, calls are refused with 503
	// store_unavailable before any upstream work. Default 0: 256 MiB;
	// negative: no reserve.
	MinFree int64 `json:"min_free,omitempty"`
	// Schema, postgres only, is the schema holding the tables (default: the
	// URL's search_path). The offline commands set it; the app does not.
	Schema string `json:"-"`
}

// Parse builds a config from a type and its location, as the Caddyfile's
// `storage <type> <location>` and the --storage flag give them.
func Parse(typ, loc string) (Config, error) {
	switch typ {
	case Badger:
		return Config{Type: typ, Dir: loc}, nil
	case Postgres:
		return Config{Type: typ, URL: loc}, nil
	}
	return Config{}, fmt.Errorf("unknown storage %q: use badger <dir> or postgres <url>", typ)
}

// Key names the store's location, so that config generations share one
// open store: the absolute directory or the URL.
func (c Config) Key() (string, error) {
	switch c.Type {
	case Badger:
		dir, err := filepath.Abs(c.Dir)
		if err != nil {
			return "", fmt.Errorf("resolving storage directory: %v", err)
		}
		return Badger + ":" + dir, nil
	case Postgres:
		return Postgres + ":" + c.URL, nil
	}
	return "", c.unknown()
}

// Open opens the store. A badger directory is opened by one process at a
// time; a postgres store is migrated to the current schema version.
func (c Config) Open(ctx context.Context) (store.Store, error) {
	switch c.Type {
	case Badger:
		if c.Dir == "" {
			return nil, fmt.Errorf("opening badger store: storage badger needs a directory")
		}
		s, err := badgerstore.Open(c.Dir, badgerstore.Options{MinFreeBytes: c.MinFree})
		if err != nil {
			return nil, fmt.Errorf("opening badger store: %v", err)
		}
		return s, nil
	case Postgres:
		if c.URL == "" {
			return nil, fmt.Errorf("opening postgres store: storage postgres needs a URL")
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		var opts []pgstore.Option
		if c.Schema != "" {
			opts = append(opts, pgstore.WithSchema(c.Schema))
		}
		s, err := pgstore.Open(cctx, c.URL, opts...)
		if err != nil {
			return nil, fmt.Errorf("opening postgres store: %v", err)
		}
		return s, nil
	}
	return nil, c.unknown()
}

func (c Config) unknown() error {
	return fmt.Errorf("opening store: unknown storage type %q (use badger or postgres)", c.Type)
}

// String names the store for messages, never with the URL (it may hold a
// password).
func (c Config) String() string {
	switch {
	case c.Type == Badger:
		return "badger store in " + c.Dir
	case c.Schema != "":
		return c.Type + " store (schema " + c.Schema + ")"
	}
	return c.Type + " store"
}
