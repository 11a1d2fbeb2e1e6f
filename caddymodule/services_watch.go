package caddymodule

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"
)

// defaultWatchDebounce is how long the services directory must stay
// unchanged before the watcher compiles it: long enough for an editor's
// save or a deploy's copy of several files to finish, short enough that an
// operator sees the swap at once.
const defaultWatchDebounce = time.Second

// startWatch polls the services directory (the file names, sizes and
// modification times under it: a stat per file, no read) and swaps the
// registry once a change has stayed still for the debounce. Polling, not
// inotify: it works the same on every OS and on network and container
// mounts, where events are lost, and a few stats a quarter second cost
// nothing. A change that does not compile is logged once and waits for
// the next change.
func (a *App) startWatch() {
	if !a.WatchServices || a.swap == nil {
		return
	}
	debounce := time.Duration(a.WatchDebounce)
	if debounce <= 0 {
		debounce = defaultWatchDebounce
	}
	tick := min(debounce/4, 250*time.Millisecond)
	if tick < 10*time.Millisecond {
		tick = 10 * time.Millisecond
	}
	stop, done := make(chan struct{}), make(chan struct{})
	a.swap.stop = func() { close(stop); <-done }
	logger := a.logger.Named("watch")
	logger.Info("watching the services directory", zap.String("dir", a.Services), zap.Duration("debounce", debounce))
	seen := dirSignature(a.Services) // before Start returns: a change right after it counts
	go func() {
		defer close(done)
		t := time.NewTicker(tick)
		defer t.Stop()
		var changedAt time.Time // zero: nothing pending
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				sig := dirSignature(a.Services)
				if sig != seen {
					seen, changedAt = sig, now
					continue
				}
				if changedAt.IsZero() || now.Sub(changedAt) < debounce {
					continue
				}
				changedAt = time.Time{}
				if _, err := a.SwapServices(); err != nil {
					logger.Warn("the changed services do not compile; the running ones keep serving", zap.Error(err))
				}
			}
		}
	}()
}

// stopWatch ends the watcher, if one runs, and waits for it.
func (a *App) stopWatch() {
	if a.swap != nil && a.swap.stop != nil {
		a.swap.stop()
		a.swap.stop = nil
	}
}

// dirSignature is the name, size and modification time of every regular
// file under dir (the declarations and the example payloads), or the error
// reading it.
func dirSignature(dir string) string {
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		lines = append(lines, fmt.Sprintf("%s\x00%d\x00%d", p, info.Size(), info.ModTime().UnixNano()))
		return nil
	})
	if err != nil {
		return "error: " + err.Error()
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
