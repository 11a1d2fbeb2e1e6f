package storetest

import (
	"errors"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// oauthSuites are the cases of store.OAuth and of grants as keys.
var oauthSuites = []suite{
	{"oauth_records", testOAuthRecords},
	{"oauth_use_once", testOAuthUseOnce},
	{"oauth_use_concurrent", testOAuthUseConcurrent},
	{"oauth_extend", testOAuthExtend},
	{"oauth_grant_key", testOAuthGrantKey},
}

func oauthRecord(name, kind string, exp time.Time) store.OAuthRecord {
	return store.OAuthRecord{Hash: hashOf("oauth " + name), Kind: kind, GrantID: "key_g1",
		Data: []byte(`{"client_id":"c1"}`), CreatedAt: base, ExpiresAt: exp}
}

func testOAuthRecords(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	rec := oauthRecord("a", "access", base.Add(time.Hour))
	if err := s.PutOAuth(ctx(t), rec); err != nil {
		t.Fatalf("PutOAuth: %v", err)
	}
	if err := s.PutOAuth(ctx(t), rec); !errors.Is(err, store.ErrExists) {
		t.Errorf("second PutOAuth of one hash: %v, want ErrExists", err)
	}
	got, err := s.GetOAuth(ctx(t), rec.Hash, base.Add(time.Minute))
	if err != nil {
		t.Fatalf("GetOAuth: %v", err)
	}
	if got.Kind != "access" || got.GrantID != "key_g1" || string(got.Data) != `{"client_id":"c1"}` || got.Used || got.Hash != rec.Hash {
		t.Errorf("GetOAuth = %+v", got)
	}
	checkTime(t, "created_at", got.CreatedAt, base)
	checkTime(t, "expires_at", got.ExpiresAt, base.Add(time.Hour))
	for _, tc := range []struct {
		what string
		hash [32]byte
		at   time.Time
	}{
		{"unknown hash", hashOf("oauth none"), base},
		{"at its expiry", rec.Hash, base.Add(time.Hour)},
		{"after its expiry", rec.Hash, base.Add(2 * time.Hour)},
	} {
		if _, err := s.GetOAuth(ctx(t), tc.hash, tc.at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetOAuth %s: %v, want ErrNotFound", tc.what, err)
		}
		if _, err := s.UseOAuth(ctx(t), tc.hash, tc.at); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("UseOAuth %s: %v, want ErrNotFound", tc.what, err)
		}
	}
}

func testOAuthUseOnce(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	rec := oauthRecord("code", "code", base.Add(time.Minute))
	if err := s.PutOAuth(ctx(t), rec); err != nil {
		t.Fatalf("PutOAuth: %v", err)
	}
	first, err := s.UseOAuth(ctx(t), rec.Hash, base)
	if err != nil || first.Used || first.Kind != "code" || first.GrantID != "key_g1" {
		t.Fatalf("first UseOAuth = %+v, %v; want the record, unused", first, err)
	}
	second, err := s.UseOAuth(ctx(t), rec.Hash, base)
	if err != nil || !second.Used {
		t.Errorf("second UseOAuth = %+v, %v; want the record, used", second, err)
	}
	if got, err := s.GetOAuth(ctx(t), rec.Hash, base); err != nil || !got.Used {
		t.Errorf("GetOAuth after use = %+v, %v; want used", got, err)
	}
}

func testOAuthUseConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	rec := oauthRecord("refresh", "refresh", base.Add(24*time.Hour))
	if err := s.PutOAuth(ctx(t), rec); err != nil {
		t.Fatalf("PutOAuth: %v", err)
	}
	const n = 8
	var wg sync.WaitGroup
	fresh := make(chan bool, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := s.UseOAuth(ctx(t), rec.Hash, base)
			if err != nil {
				t.Errorf("UseOAuth: %v", err)
				return
			}
			fresh <- !r.Used
		}()
	}
	wg.Wait()
	close(fresh)
	count := 0
	for f := range fresh {
		if f {
			count++
		}
	}
	if count != 1 {
		t.Errorf("%d of %d concurrent UseOAuth saw the record unused, want exactly 1", count, n)
	}
}

func testOAuthGrantKey(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	g := store.Key{ID: "key_g1", AccountID: "acme", Name: "Claude", Kind: store.KindOAuth, Hash: hashOf("grant"),
		Display: "client c1", CreatedAt: base, CreditLimit: &store.CreditLimit{Period: store.PeriodDay, Credits: cr(2)}}
	if err := s.CreateKey(ctx(t), g); err != nil {
		t.Fatalf("CreateKey(grant): %v", err)
	}
	k := mustKey(t, s, "key_k1", "acme")
	keys, err := s.ListKeys(ctx(t), "acme")
	if err != nil || len(keys) != 2 {
		t.Fatalf("ListKeys = %+v, %v", keys, err)
	}
	if keys[0].Kind != store.KindOAuth || keys[0].ID != "key_g1" || keys[1].Kind != "" || keys[1].ID != k.ID {
		t.Errorf("kinds = (%s %q, %s %q), want the grant's oauth and the key's empty", keys[0].ID, keys[0].Kind, keys[1].ID, keys[1].Kind)
	}
	for _, get := range []func() (store.Key, error){
		func() (store.Key, error) { return s.GetKey(ctx(t), "key_g1") },
		func() (store.Key, error) { return s.KeyByHash(ctx(t), hashOf("grant")) },
		func() (store.Key, error) { return s.RevokeKey(ctx(t), "key_g1", base) },
	} {
		if got, err := get(); err != nil || got.Kind != store.KindOAuth {
			t.Errorf("grant read back = %+v, %v; want kind oauth", got, err)
		}
	}
}

func testOAuthExtend(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	rec := oauthRecord("client", "client", base.Add(time.Hour))
	if err := s.PutOAuth(ctx(t), rec); err != nil {
		t.Fatalf("PutOAuth: %v", err)
	}
	if err := s.ExtendOAuth(ctx(t), rec.Hash, base, base.Add(48*time.Hour)); err != nil {
		t.Fatalf("ExtendOAuth: %v", err)
	}
	// Never shortened.
	if err := s.ExtendOAuth(ctx(t), rec.Hash, base, base.Add(2*time.Hour)); err != nil {
		t.Fatalf("ExtendOAuth earlier: %v", err)
	}
	got, err := s.GetOAuth(ctx(t), rec.Hash, base.Add(47*time.Hour))
	if err != nil {
		t.Fatalf("GetOAuth past the first expiry: %v", err)
	}
	checkTime(t, "expires_at", got.ExpiresAt, base.Add(48*time.Hour))
	if got.Kind != "client" || string(got.Data) != `{"client_id":"c1"}` || got.Used {
		t.Errorf("extended record = %+v", got)
	}
	for _, tc := range []struct {
		what string
		hash [32]byte
		at   time.Time
	}{
		{"unknown hash", hashOf("oauth none"), base},
		{"expired", rec.Hash, base.Add(48 * time.Hour)},
	} {
		if err := s.ExtendOAuth(ctx(t), tc.hash, tc.at, tc.at.Add(time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("ExtendOAuth %s: %v, want ErrNotFound", tc.what, err)
		}
	}
}
