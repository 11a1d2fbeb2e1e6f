package postgres_test

import (
	"crypto/sha256"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// TestOAuthTwoNodes: a refresh token stored by one node is rotated exactly
// once when both nodes present it at the same time, so a replay is
// detected across a cluster.
func TestOAuthTwoNodes(t *testing.T) {
	nodes := twoNodes(t)
	now := time.Now().UTC()
	for round := range 5 {
		h := sha256.Sum256([]byte{byte(round)})
		if err := nodes[0].PutOAuth(t.Context(), store.OAuthRecord{Hash: h, Kind: "refresh", GrantID: "key_g", Data: []byte("{}"),
			CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		var fresh atomic.Int32
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := nodes[i%2].UseOAuth(t.Context(), h, now)
				if err != nil {
					t.Errorf("UseOAuth: %v", err)
					return
				}
				if !r.Used {
					fresh.Add(1)
				}
			}()
		}
		wg.Wait()
		if fresh.Load() != 1 {
			t.Errorf("round %d: %d of 8 uses on two nodes saw the token unused, want 1", round, fresh.Load())
		}
	}
}
