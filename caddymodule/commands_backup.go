package caddymodule

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"

	caddycmd "github.com/caddyserver/caddy/v2/cmd"
	"github.com/spf13/cobra"

	"socialrouter/caddymodule/admin"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// backupCommands are `caddy sdr backup` (online, through the admin
// endpoint) and `caddy sdr restore` (offline, into a new badger store).
func backupCommands() []*cobra.Command {
	backup := &cobra.Command{
		Use:   "backup --output <file> [--since <version>]",
		Short: "Streams a consistent backup of the running gateway's badger store",
		Long: `Streams, through the admin endpoint, badger's backup of the running
gateway's store as of one instant, into --output. With --since, only what
was written since that version (printed by the previous backup) is
streamed: an incremental backup, restored after the full one. The file is
complete only when the command succeeds; it is written beside the output
and renamed into place. A PostgreSQL store is backed up with pg_dump.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			out, _ := c.Flags().GetString("output")
			since, _ := c.Flags().GetUint64("since")
			if out == "" {
				return errors.New("give --output <file>")
			}
			addr, err := adminAddress(c)
			if err != nil {
				return err
			}
			next, n, err := backupTo(addr, out, since)
			if err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "backup: %d bytes in %s; next incremental: --since %d\n", n, out, next)
			return nil
		},
	}
	backup.Flags().String("output", "", "File to write the backup to")
	backup.Flags().Uint64("since", 0, "Back up only what was written since this version (printed by the previous backup)")

	restore := &cobra.Command{
		Use:   "restore --dir <dir> --input <file> [--input <incremental>…]",
		Short: "Loads backups into a new badger store, offline",
		Long: `Loads a full backup, then the incremental ones taken after it in order,
into a new badger store in --dir, which must be missing or empty: a restore
never merges into or overwrites a store. No gateway may run on --dir.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			dir, _ := c.Flags().GetString("dir")
			inputs, _ := c.Flags().GetStringArray("input")
			if dir == "" || len(inputs) == 0 {
				return errors.New("give --dir <new store directory> and --input <backup file>")
			}
			var readers []io.Reader
			for _, in := range inputs {
				f, err := os.Open(in)
				if err != nil {
					return fmt.Errorf("opening backup: %v", err)
				}
				defer f.Close()
				readers = append(readers, f)
			}
			if err := badgerstore.Restore(dir, readers...); err != nil {
				return err
			}
			fmt.Fprintf(c.OutOrStdout(), "restored %d backup(s) into %s\n", len(inputs), dir)
			return nil
		},
	}
	restore.Flags().String("dir", "", "Directory of the new badger store")
	restore.Flags().StringArray("input", nil, "Backup file; repeat for incremental backups, in order")
	return []*cobra.Command{backup, restore}
}

// backupTo streams the admin endpoint's backup into out (through a
// temporary file renamed at the end, so a failed backup never leaves a
// file that looks complete) and returns the next --since and the bytes.
func backupTo(addr, out string, since uint64) (next uint64, n int64, err error) {
	resp, err := caddycmd.AdminAPIRequest(addr, http.MethodGet, "/sdr/backup?since="+strconv.FormatUint(since, 10), nil, nil)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".partial-*")
	if err != nil {
		return 0, 0, fmt.Errorf("creating the backup file: %v", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, a no-op
	n, err = io.Copy(tmp, resp.Body)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, n, fmt.Errorf("writing the backup: %v", err)
	}
	v := resp.Trailer.Get(admin.BackupVersionTrailer)
	next, perr := strconv.ParseUint(v, 10, 64)
	if v == "" || perr != nil {
		return 0, n, errors.New("the backup stream ended before it was complete (no version trailer); see the gateway's log")
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return 0, n, fmt.Errorf("writing the backup: %v", err)
	}
	return next, n, nil
}
