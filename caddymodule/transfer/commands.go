package transfer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/backend"

	"github.com/spf13/cobra"
)

func addStoreFlags(c *cobra.Command) {
	c.Flags().String("storage", "", "Store type: badger (give its directory) or postgres (give its URL, default $DATABASE_URL)")
	c.Flags().String("schema", "", "postgres only: the schema holding the tables (default: the URL's search_path, normally public)")
}

// readStoreFlags reads the store of export and import from --storage,
// --schema and the location argument.
func readStoreFlags(c *cobra.Command, args []string) (backend.Config, error) {
	typ, _ := c.Flags().GetString("storage")
	schema, _ := c.Flags().GetString("schema")
	loc := ""
	if len(args) == 1 {
		loc = args[0]
	}
	if typ == "" {
		return backend.Config{}, errors.New("give the store: --storage badger <dir> or --storage postgres <url>")
	}
	f, err := backend.Parse(typ, loc)
	if err != nil {
		return f, fmt.Errorf("unknown --storage %q: use badger <dir> or postgres <url>", typ)
	}
	switch f.Type {
	case backend.Badger:
		if f.Dir == "" {
			return f, errors.New("--storage badger needs the store's directory: --storage badger <dir>")
		}
		if schema != "" {
			return f, errors.New("--schema is for --storage postgres only")
		}
	case backend.Postgres:
		if f.URL == "" {
			f.URL = os.Getenv("DATABASE_URL")
		}
		if f.URL == "" {
			return f, errors.New("--storage postgres needs a URL: --storage postgres <url>, or set DATABASE_URL")
		}
		f.Schema = schema
	}
	return f, nil
}

// openOffline opens the store named by the flags. A badger directory must
// already hold a store when it is exported from (a mistyped path would
// otherwise export an empty new store), and badger refuses a directory a
// running gateway holds.
func openOffline(ctx context.Context, f backend.Config, mustExist bool) (store.Store, error) {
	if f.Type == backend.Badger && mustExist {
		if _, err := os.Stat(filepath.Join(f.Dir, "MANIFEST")); err != nil {
			return nil, fmt.Errorf("%s does not hold a badger store: %v", f.Dir, err)
		}
	}
	s, err := f.Open(ctx)
	if err != nil && f.Type == backend.Badger {
		return nil, fmt.Errorf("%v (a badger directory is opened by one process at a time: stop the gateway that uses it first)", err)
	}
	return s, err
}

func cmdContext(c *cobra.Command) context.Context {
	if ctx := c.Context(); ctx != nil {
		return ctx
	}
	return context.Background()
}

// writeAtomically writes a file through a temporary one renamed into
// place, so a failed export never leaves a complete-looking partial file.
// The file holds key digests: it is created readable by its owner only.
func writeAtomically(path string, fill func(w io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if err := fill(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

const storeCommandsHelp = `
These commands work offline, on the store itself, not through the admin
endpoint. A badger directory can be opened by one process at a time: stop
the gateway that uses it before exporting from it or importing into it
(the command fails with a lock error otherwise). A postgres store may stay
in use, but an export taken while gateways serve traffic is not one
consistent snapshot of every balance.

The format is JSON lines: one object per account (id, balance, created_at),
then one per key (id, account, name, sha256, display, created_at,
revoked_at, credit_limit). A key travels as the SHA-256 digest of its
secret, never the secret (no store holds it), and keeps authenticating with
the secret it was issued with. Runs, usage and per-key spend are not
exported.
`

// AddCommands adds the offline export and import commands, which move
// accounts, keys and balances between stores (badger to PostgreSQL when a
// deployment grows to several nodes, or back).
func AddCommands(cmd *cobra.Command) {
	export := &cobra.Command{
		Use:   "export --storage badger <dir> | --storage postgres [<url>] [--output <file>]",
		Short: "Writes every account, balance and key of a store as JSON lines (offline)",
		Long: `
Writes every account with its balance, then every API key, of a store as
JSON lines to standard output or --output.
` + storeCommandsHelp + `
  caddy sdr export --storage badger ./data --output accounts.jsonl
  caddy sdr import --storage postgres "$DATABASE_URL" --input accounts.jsonl
`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			f, err := readStoreFlags(c, args)
			if err != nil {
				return err
			}
			ctx := cmdContext(c)
			s, err := openOffline(ctx, f, true)
			if err != nil {
				return err
			}
			defer s.Close()
			var st exportStats
			out, _ := c.Flags().GetString("output")
			if out == "" || out == "-" {
				st, err = exportStore(ctx, s, c.OutOrStdout())
			} else {
				err = writeAtomically(out, func(w io.Writer) (err error) {
					st, err = exportStore(ctx, s, w)
					return err
				})
			}
			if err != nil {
				return fmt.Errorf("exporting the %s: %v", f, err)
			}
			fmt.Fprintf(c.ErrOrStderr(), "exported %d accounts and %d keys from the %s\n", st.accounts, st.keys, f)
			return nil
		},
	}
	addStoreFlags(export)
	export.Flags().StringP("output", "o", "", "Write to this file (created mode 0600) instead of standard output")

	imp := &cobra.Command{
		Use:   "import --storage badger <dir> | --storage postgres [<url>] [--input <file>]",
		Short: "Reads accounts, balances and keys written by export into a store (offline, idempotent)",
		Long: `
Reads what "caddy sdr export" wrote, from standard input or --input, into a
store, creating accounts with their balances and keys as they were.

Importing is idempotent: an account or key already present with the same
values is skipped, so an interrupted import can simply be run again. One
present with other values (a balance that moved since, a key id or digest
taken by another key) is a conflict: it is reported, left as it is, and the
command exits non-zero after reading the whole input.
` + storeCommandsHelp + `
  caddy sdr export --storage badger ./data | caddy sdr import --storage postgres "$DATABASE_URL"
`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			f, err := readStoreFlags(c, args)
			if err != nil {
				return err
			}
			in := c.InOrStdin()
			if path, _ := c.Flags().GetString("input"); path != "" && path != "-" {
				file, err := os.Open(path)
				if err != nil {
					return err
				}
				defer file.Close()
				in = file
			}
			ctx := cmdContext(c)
			s, err := openOffline(ctx, f, false)
			if err != nil {
				return err
			}
			st, err := importStore(ctx, s, in, c.ErrOrStderr())
			// Closing badger flushes what the import wrote: its error counts.
			if cerr := s.Close(); err == nil {
				err = cerr
			}
			fmt.Fprintf(c.ErrOrStderr(), "%s into the %s\n", st, f)
			if err != nil {
				return fmt.Errorf("importing into the %s: %v", f, err)
			}
			if n := st.problems(); n > 0 {
				return fmt.Errorf("%d records were not imported (see above)", n)
			}
			return nil
		},
	}
	addStoreFlags(imp)
	imp.Flags().StringP("input", "i", "", "Read from this file instead of standard input")

	cmd.AddCommand(export, imp)
}
