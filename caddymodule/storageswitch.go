package caddymodule

import (
	"fmt"
	"strings"
	"sync/atomic"

	"socialrouter/caddymodule/store/backend"
)

// runningStore is the storage key of the config generation that is
// running (set in Start, cleared in Stop by the generation that set it).
var runningStore atomic.Pointer[string]

// refuseStorageSwitch refuses a reload that would move a running gateway
// to another store. It is never what the operator means at a reload: most
// often the reload ran from a shell without the environment the gateway
// started with (SDR_DATA_DIR unset, so the default ./data), and the
// gateway would silently serve from an empty store, every key then
// answering invalid_api_key. Changing the store is a restart.
func (a *App) refuseStorageSwitch(key string) error {
	cur := runningStore.Load()
	if cur == nil || *cur == key {
		return nil
	}
	return fmt.Errorf("storage: this reload would switch the running gateway from %s to %s: "+
		"refused, the running config keeps serving (run the reload with the environment the gateway started with, "+
		"e.g. SDR_DATA_DIR; to change the store, stop and start the gateway)", describeStore(*cur), describeStore(key))
}

// describeStore names a storage key for a message without the secrets a
// PostgreSQL URL may carry.
func describeStore(key string) string {
	typ, where, _ := strings.Cut(key, ":")
	if typ == backend.Postgres {
		return "another PostgreSQL database"
	}
	return typ + " " + where
}

// markRunningStore records this generation's store as the running one.
func (a *App) markRunningStore() {
	key := a.storeKey
	a.storeMark = &key
	runningStore.Store(a.storeMark)
}

// unmarkRunningStore clears the running store if this generation set it
// and no newer one has replaced it (a reload starts the new generation
// before it stops the old one).
func (a *App) unmarkRunningStore() {
	if a.storeMark != nil {
		runningStore.CompareAndSwap(a.storeMark, nil)
	}
}
