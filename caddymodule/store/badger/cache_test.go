package badger

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	bdb "github.com/dgraph-io/badger/v4"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/storetest"
)

// TestConformanceCacheSizes runs the shared suite without caches and with
// caches of one entry, where every fill evicts.
func TestConformanceCacheSizes(t *testing.T) {
	for _, size := range []int{-1, 1} {
		t.Run(fmt.Sprintf("size_%d", size), func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				s, err := Open(t.TempDir(), Options{KeyCacheSize: size, AccountCacheSize: size})
				if err != nil {
					t.Fatalf("opening store: %v", err)
				}
				return s
			})
		})
	}
}

func openCached(t *testing.T, size int) *Store {
	t.Helper()
	s, err := Open(t.TempDir(), Options{KeyCacheSize: size, AccountCacheSize: size})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

var t0 = time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)

// TestKeyCacheWrites checks that a cached key reflects each write as soon
// as the write returns, by digest and by id.
func TestKeyCacheWrites(t *testing.T) {
	s := openCached(t, 16)
	ctx := t.Context()
	if _, err := s.CreateAccount(ctx, "acme", 1, t0); err != nil {
		t.Fatal(err)
	}
	h := [32]byte{1}
	if err := s.CreateKey(ctx, store.Key{ID: "key_1", AccountID: "acme", Hash: h, Display: "d", CreatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T) []store.Key {
		t.Helper()
		a, err := s.KeyByHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.GetKey(ctx, "key_1")
		if err != nil {
			t.Fatal(err)
		}
		return []store.Key{a, b}
	}
	read(t) // cached from here on
	if _, ok := s.keys.byDigest(h); !ok {
		t.Fatal("key not cached after a read")
	}
	steps := []struct {
		name  string
		write func() error
		check func(k store.Key) error
	}{
		{"limit set", func() error {
			_, err := s.SetKeyLimit(ctx, "key_1", &store.CreditLimit{Period: store.PeriodDay, Credits: 5})
			return err
		}, func(k store.Key) error {
			if k.CreditLimit == nil || k.CreditLimit.Credits != 5 {
				return fmt.Errorf("limit %+v", k.CreditLimit)
			}
			return nil
		}},
		{"limit cleared", func() error {
			_, err := s.SetKeyLimit(ctx, "key_1", nil)
			return err
		}, func(k store.Key) error {
			if k.CreditLimit != nil {
				return fmt.Errorf("limit %+v", k.CreditLimit)
			}
			return nil
		}},
		{"revoked", func() error {
			_, err := s.RevokeKey(ctx, "key_1", t0)
			return err
		}, func(k store.Key) error {
			if k.RevokedAt == nil || !k.RevokedAt.Equal(t0) {
				return fmt.Errorf("revoked_at %v", k.RevokedAt)
			}
			return nil
		}},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if err := st.write(); err != nil {
				t.Fatal(err)
			}
			for i, k := range read(t) {
				if err := st.check(k); err != nil {
					t.Errorf("read %d after the write: %v", i, err)
				}
			}
			read(t) // and again, now from the cache
			for i, k := range read(t) {
				if err := st.check(k); err != nil {
					t.Errorf("cached read %d: %v", i, err)
				}
			}
		})
	}

	t.Run("callers do not share the cached key", func(t *testing.T) {
		k, err := s.KeyByHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		*k.RevokedAt = time.Time{}
		k.Name = "changed"
		again, err := s.KeyByHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		if !again.RevokedAt.Equal(t0) || again.Name != "" {
			t.Errorf("cached key changed through a returned copy: %+v", again)
		}
	})
}

// TestRevokeUnderReads revokes a key while readers authenticate with it
// non-stop: every read that starts after RevokeKey returned sees the
// revocation.
func TestRevokeUnderReads(t *testing.T) {
	for round := range 20 {
		s := openCached(t, 4)
		ctx := t.Context()
		if _, err := s.CreateAccount(ctx, "acme", 1, t0); err != nil {
			t.Fatal(err)
		}
		h := [32]byte{byte(round)}
		if err := s.CreateKey(ctx, store.Key{ID: "key_1", AccountID: "acme", Hash: h, Display: "d", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
		var revoked atomic.Bool
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					after := revoked.Load()
					k, err := s.KeyByHash(ctx, h)
					if err != nil {
						errs <- err
						return
					}
					if after && k.RevokedAt == nil {
						errs <- fmt.Errorf("round %d: a read started after RevokeKey returned sees the key live", round)
						return
					}
				}
			}()
		}
		if _, err := s.RevokeKey(ctx, "key_1", t0); err != nil {
			t.Fatal(err)
		}
		revoked.Store(true)
		k, err := s.KeyByHash(ctx, h)
		if err != nil || k.RevokedAt == nil {
			t.Errorf("round %d: KeyByHash right after RevokeKey = %+v, %v", round, k, err)
		}
		for range 200 {
			if k, err := s.KeyByHash(ctx, h); err != nil || k.RevokedAt == nil {
				t.Fatalf("round %d: KeyByHash after RevokeKey = %+v, %v", round, k, err)
			}
		}
		close(stop)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// TestBalanceNeverStale settles (debits only) on a few accounts while
// readers poll their balances through a cache smaller than the number of
// accounts, so entries are evicted and filled again all along. Since the
// committed balance only falls, a read that starts after a Settle returned
// must not show more than the balance that Settle left: more would be a
// state older than a committed write. At the end every read returns the
// committed balance.
func TestBalanceNeverStale(t *testing.T) {
	s := openCached(t, 2)
	ctx := t.Context()
	const accounts = 5
	const price = credits.Micros(10)
	var floor [accounts]atomic.Int64 // lowest balance a returned Settle left
	for a := range accounts {
		if _, err := s.CreateAccount(ctx, fmt.Sprint("acct_", a), 1_000_000, t0); err != nil {
			t.Fatal(err)
		}
		floor[a].Store(1_000_000)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	errs := make(chan error, 16)
	for r := range 4 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				n := (r + i) % accounts
				f := floor[n].Load()
				a, err := s.GetAccount(ctx, fmt.Sprint("acct_", n))
				if err != nil {
					errs <- err
					return
				}
				if int64(a.Balance) > f {
					errs <- fmt.Errorf("acct_%d: read %s after a Settle returned with %s", n, a.Balance, credits.Micros(f))
					return
				}
			}
		}()
	}
	var settlers sync.WaitGroup
	var seq atomic.Int64
	for c := range 8 {
		settlers.Add(1)
		go func() {
			defer settlers.Done()
			for range 40 {
				i := seq.Add(1)
				n := (c + int(i)) % accounts
				run := &runs.Run{ID: fmt.Sprint("ext_", i), Status: "completed", AccountID: fmt.Sprint("acct_", n),
					Data: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`)}}
				res, err := s.Settle(ctx, store.Settlement{Run: run, Price: price, Offer: "o", Platform: "p", Now: t0})
				if err != nil {
					errs <- err
					return
				}
				for {
					f := floor[n].Load()
					if int64(res.Balance) >= f || floor[n].CompareAndSwap(f, int64(res.Balance)) {
						break
					}
				}
			}
		}()
	}
	settlers.Wait()
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var total credits.Micros
	for a := range accounts {
		id := fmt.Sprint("acct_", a)
		for range 3 { // from badger, then from the cache
			got, err := s.GetAccount(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var committed store.Account
			err = s.db.View(func(txn *bdb.Txn) (err error) {
				committed, err = readAccount(txn, id)
				return err
			})
			if err != nil || got != committed {
				t.Errorf("%s: GetAccount %+v, committed %+v (%v)", id, got, committed, err)
			}
		}
		a, _ := s.GetAccount(ctx, id)
		total += 1_000_000 - a.Balance
	}
	if want := credits.Micros(8*40*2) * price; total != want {
		t.Errorf("charged %s in all, want %s", total, want)
	}
}

// TestBalanceCacheWrites checks that a cached balance follows each account
// write as soon as it returns, including refused ones.
func TestBalanceCacheWrites(t *testing.T) {
	s := openCached(t, 16)
	ctx := t.Context()
	if _, err := s.CreateAccount(ctx, "acme", 100, t0); err != nil {
		t.Fatal(err)
	}
	want := credits.Micros(100)
	check := func(t *testing.T, what string) {
		t.Helper()
		for range 2 {
			a, err := s.GetAccount(ctx, "acme")
			if err != nil || a.Balance != want || !a.CreatedAt.Equal(t0) {
				t.Errorf("after %s: GetAccount = %+v, %v; want balance %s", what, a, err, want)
			}
		}
		if _, ok := s.accounts.get("acme"); !ok {
			t.Errorf("after %s: account not cached", what)
		}
	}
	check(t, "CreateAccount")
	if _, err := s.CreateAccount(ctx, "acme", 5, t0); err == nil {
		t.Fatal("second CreateAccount succeeded")
	}
	check(t, "a refused CreateAccount")
	if _, err := s.AddCredits(ctx, "acme", 50); err != nil {
		t.Fatal(err)
	}
	want += 50
	check(t, "AddCredits")
	if _, err := s.AddCredits(ctx, "acme", -1000); err == nil {
		t.Fatal("overdrawing AddCredits succeeded")
	}
	check(t, "a refused AddCredits")
	run := &runs.Run{ID: "ext_1", Status: "completed", AccountID: "acme", Data: []json.RawMessage{json.RawMessage(`{}`)}}
	if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: 30, Offer: "o", Platform: "p", Now: t0}); err != nil {
		t.Fatal(err)
	}
	want -= 30
	check(t, "Settle")
	if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: 30, Offer: "o", Platform: "p", Now: t0}); err == nil {
		t.Fatal("settling a run id twice succeeded")
	}
	check(t, "a refused Settle")
	if _, err := s.GetAccount(ctx, "nobody"); err == nil {
		t.Error("GetAccount of an unknown account succeeded")
	}
	if _, ok := s.accounts.get("nobody"); ok {
		t.Error("an unknown account is cached")
	}
}

// TestCacheBounds reads more keys and accounts than the caches hold.
func TestCacheBounds(t *testing.T) {
	const size = 8
	s := openCached(t, size)
	ctx := t.Context()
	for i := range 40 {
		id := fmt.Sprint("acct_", i)
		if _, err := s.CreateAccount(ctx, id, 1, t0); err != nil {
			t.Fatal(err)
		}
		if err := s.CreateKey(ctx, store.Key{ID: "key_" + id, AccountID: id, Hash: [32]byte{byte(i), 1}, Display: "d", CreatedAt: t0}); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 2 {
		for i := range 40 {
			k, err := s.KeyByHash(ctx, [32]byte{byte(i), 1})
			if err != nil || k.ID != fmt.Sprint("key_acct_", i) {
				t.Fatalf("round %d: KeyByHash %d = %+v, %v", round, i, k, err)
			}
			if k, err := s.GetKey(ctx, k.ID); err != nil || k.Hash != [32]byte{byte(i), 1} {
				t.Fatalf("round %d: GetKey %d = %+v, %v", round, i, k, err)
			}
			if a, err := s.GetAccount(ctx, k.AccountID); err != nil || a.ID != k.AccountID {
				t.Fatalf("round %d: GetAccount %d = %+v, %v", round, i, a, err)
			}
		}
	}
	s.keys.mu.Lock()
	keys, ids := s.keys.byHash.len(), len(s.keys.byID)
	s.keys.mu.Unlock()
	s.accounts.mu.Lock()
	accounts := s.accounts.items.len()
	s.accounts.mu.Unlock()
	if keys > size || ids != keys || accounts > size {
		t.Errorf("cached %d keys (%d ids), %d accounts; want at most %d each, ids matching keys", keys, ids, accounts, size)
	}
}

// TestLRU checks the eviction order and the eviction callback.
func TestLRU(t *testing.T) {
	var evicted []int
	l := newLRU(3, func(k int, _ string) { evicted = append(evicted, k) })
	for i := range 3 {
		l.put(i, fmt.Sprint(i))
	}
	l.get(0)        // order now 0, 2, 1
	l.put(3, "3")   // evicts 1
	l.put(2, "two") // refresh 2: order 2, 3, 0
	l.put(4, "4")   // evicts 0
	if v, ok := l.remove(3); !ok || v != "3" {
		t.Errorf("remove(3) = %q, %v", v, ok)
	}
	l.put(5, "5") // room again: evicts nothing
	if fmt.Sprint(evicted) != "[1 0]" || l.len() != 3 {
		t.Errorf("evicted %v, len %d; want [1 0], 3", evicted, l.len())
	}
	for k, want := range map[int]string{2: "two", 4: "4", 5: "5"} {
		if v, ok := l.get(k); !ok || v != want {
			t.Errorf("get(%d) = %q, %v; want %q", k, v, ok, want)
		}
	}
	for _, k := range []int{0, 1, 3} {
		if _, ok := l.get(k); ok {
			t.Errorf("get(%d) found an evicted or removed entry", k)
		}
	}
}
