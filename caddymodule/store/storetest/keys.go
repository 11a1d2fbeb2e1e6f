package storetest

import (
	"errors"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

const time1h = time.Hour

// sameKey compares every field of two keys, times at store precision.
func sameKey(t *testing.T, got, want store.Key) {
	t.Helper()
	if got.ID != want.ID || got.AccountID != want.AccountID || got.Name != want.Name ||
		got.Hash != want.Hash || got.Display != want.Display {
		t.Errorf("key = %+v, want %+v", got, want)
	}
	checkTime(t, "key "+want.ID+" CreatedAt", got.CreatedAt, want.CreatedAt)
	switch {
	case (got.RevokedAt == nil) != (want.RevokedAt == nil):
		t.Errorf("key %s RevokedAt = %v, want %v", want.ID, got.RevokedAt, want.RevokedAt)
	case got.RevokedAt != nil:
		checkTime(t, "key "+want.ID+" RevokedAt", *got.RevokedAt, *want.RevokedAt)
	}
	switch {
	case (got.CreditLimit == nil) != (want.CreditLimit == nil):
		t.Errorf("key %s CreditLimit = %v, want %v", want.ID, got.CreditLimit, want.CreditLimit)
	case got.CreditLimit != nil && *got.CreditLimit != *want.CreditLimit:
		t.Errorf("key %s CreditLimit = %+v, want %+v", want.ID, *got.CreditLimit, *want.CreditLimit)
	}
}

func testKeys(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	mustAccount(t, s, "other", cr(1))

	// Ids sort opposite to creation order, and two keys share a creation
	// time: ListKeys must follow insertion, not ids or clocks.
	limit := &store.CreditLimit{Period: store.PeriodDay, Credits: cr(2) + 500_000}
	keys := []store.Key{
		{ID: "key_c", AccountID: "acme", Name: "backend", Hash: hashOf("c"), Display: "sdr_live_…aaaa", CreatedAt: base, CreditLimit: limit},
		{ID: "key_b", AccountID: "acme", Hash: hashOf("b"), Display: "sdr_live_…bbbb", CreatedAt: base},
		{ID: "key_o", AccountID: "other", Name: "theirs", Hash: hashOf("o"), Display: "sdr_live_…oooo", CreatedAt: base},
		{ID: "key_a", AccountID: "acme", Name: "ci", Hash: hashOf("a"), Display: "sdr_live_…cccc", CreatedAt: base.Add(time.Minute)},
	}
	for _, k := range keys {
		if err := s.CreateKey(ctx(t), k); err != nil {
			t.Fatalf("CreateKey(%s): %v", k.ID, err)
		}
	}

	t.Run("create errors", func(t *testing.T) {
		cases := []struct {
			name    string
			key     store.Key
			wantErr error
		}{
			{"unknown account", store.Key{ID: "key_x", AccountID: "nobody", Hash: hashOf("x"), Display: "d", CreatedAt: base}, store.ErrNotFound},
			{"duplicate id", store.Key{ID: "key_b", AccountID: "acme", Hash: hashOf("new"), Display: "d", CreatedAt: base}, store.ErrExists},
			{"duplicate hash", store.Key{ID: "key_new", AccountID: "acme", Hash: hashOf("c"), Display: "d", CreatedAt: base}, store.ErrExists},
			{"duplicate hash other account", store.Key{ID: "key_new2", AccountID: "other", Hash: hashOf("a"), Display: "d", CreatedAt: base}, store.ErrExists},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				if err := s.CreateKey(ctx(t), tc.key); !errors.Is(err, tc.wantErr) {
					t.Fatalf("CreateKey err = %v, want %v", err, tc.wantErr)
				}
				if _, err := s.GetKey(ctx(t), tc.key.ID); tc.key.ID != "key_b" && !errors.Is(err, store.ErrNotFound) {
					t.Errorf("refused key %s is readable (err %v)", tc.key.ID, err)
				}
			})
		}
		if k, err := s.KeyByHash(ctx(t), hashOf("c")); err != nil || k.ID != "key_c" {
			t.Errorf("KeyByHash after a refused duplicate = %v, %v; want key_c", k.ID, err)
		}
		if _, err := s.KeyByHash(ctx(t), hashOf("new")); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("KeyByHash of a refused key's hash: err = %v, want ErrNotFound", err)
		}
	})

	for _, k := range keys {
		t.Run("find "+k.ID, func(t *testing.T) {
			got, err := s.GetKey(ctx(t), k.ID)
			if err != nil {
				t.Fatalf("GetKey: %v", err)
			}
			sameKey(t, got, k)
			got, err = s.KeyByHash(ctx(t), k.Hash)
			if err != nil {
				t.Fatalf("KeyByHash: %v", err)
			}
			sameKey(t, got, k)
		})
	}

	lists := []struct {
		account string
		want    []store.Key
	}{
		{"acme", []store.Key{keys[0], keys[1], keys[3]}},
		{"other", []store.Key{keys[2]}},
		{"nobody", nil},
	}
	for _, l := range lists {
		t.Run("list "+l.account, func(t *testing.T) {
			got, err := s.ListKeys(ctx(t), l.account)
			if err != nil {
				t.Fatalf("ListKeys: %v", err)
			}
			if len(got) != len(l.want) {
				t.Fatalf("ListKeys = %d keys, want %d", len(got), len(l.want))
			}
			for i := range got {
				sameKey(t, got[i], l.want[i])
			}
		})
	}
}

func testKeyLimits(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	k := mustKey(t, s, "key_1", "acme")
	// Steps run in order on one key; each checks the answer and a re-read.
	steps := []struct {
		name    string
		limit   *store.CreditLimit
		want    *store.CreditLimit
		wantErr bool
	}{
		{"set day", &store.CreditLimit{Period: store.PeriodDay, Credits: cr(2)}, &store.CreditLimit{Period: store.PeriodDay, Credits: cr(2)}, false},
		{"replace with month", &store.CreditLimit{Period: store.PeriodMonth, Credits: 1_500_000}, &store.CreditLimit{Period: store.PeriodMonth, Credits: 1_500_000}, false},
		{"invalid period", &store.CreditLimit{Period: "fortnight", Credits: cr(1)}, &store.CreditLimit{Period: store.PeriodMonth, Credits: 1_500_000}, true},
		{"negative credits", &store.CreditLimit{Period: store.PeriodHour, Credits: -1}, &store.CreditLimit{Period: store.PeriodMonth, Credits: 1_500_000}, true},
		{"zero credits", &store.CreditLimit{Period: store.PeriodHour, Credits: 0}, &store.CreditLimit{Period: store.PeriodMonth, Credits: 1_500_000}, true},
		{"clear", nil, nil, false},
		{"set hour", &store.CreditLimit{Period: store.PeriodHour, Credits: 1}, &store.CreditLimit{Period: store.PeriodHour, Credits: 1}, false},
		{"set week", &store.CreditLimit{Period: store.PeriodWeek, Credits: cr(7)}, &store.CreditLimit{Period: store.PeriodWeek, Credits: cr(7)}, false},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := s.SetKeyLimit(ctx(t), k.ID, st.limit)
			if st.wantErr {
				if err == nil {
					t.Fatalf("SetKeyLimit(%+v) succeeded, want an error", *st.limit)
				}
			} else {
				if err != nil {
					t.Fatalf("SetKeyLimit: %v", err)
				}
				want := k
				want.CreditLimit = st.want
				sameKey(t, got, want)
			}
			again, err := s.GetKey(ctx(t), k.ID)
			if err != nil {
				t.Fatalf("GetKey: %v", err)
			}
			want := k
			want.CreditLimit = st.want
			sameKey(t, again, want)
		})
	}
}

func testKeyRevoke(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	k := mustKey(t, s, "key_1", "acme")
	other := mustKey(t, s, "key_2", "acme")
	first := base.Add(2*time.Hour + 999) // nanoseconds a store must drop
	steps := []struct {
		name string
		at   time.Time
		want time.Time
	}{
		{"revoke", first, first},
		{"revoke again keeps the first time", base.Add(5 * time.Hour), first},
		{"revoke earlier keeps the first time", base.Add(time.Hour), first},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got, err := s.RevokeKey(ctx(t), k.ID, st.at)
			if err != nil {
				t.Fatalf("RevokeKey: %v", err)
			}
			want := k
			w := wantTime(st.want)
			want.RevokedAt = &w
			sameKey(t, got, want)
			// A revoked key is still found by its hash: the gateway must
			// tell "revoked" from "invalid".
			byHash, err := s.KeyByHash(ctx(t), k.Hash)
			if err != nil {
				t.Fatalf("KeyByHash of a revoked key: %v", err)
			}
			sameKey(t, byHash, want)
		})
	}
	t.Run("other key untouched", func(t *testing.T) {
		got, err := s.GetKey(ctx(t), other.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameKey(t, got, other)
	})
	t.Run("revoke in another zone is stored in UTC", func(t *testing.T) {
		at := time.Date(2025, 3, 12, 18, 0, 0, 0, time.FixedZone("X", 5*3600))
		got, err := s.RevokeKey(ctx(t), other.ID, at)
		if err != nil {
			t.Fatal(err)
		}
		checkTime(t, "RevokedAt", *got.RevokedAt, at)
	})
}

func testKeyUnknown(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(1))
	mustKey(t, s, "key_1", "acme")
	cases := []struct {
		name string
		do   func() error
	}{
		{"GetKey", func() error { _, err := s.GetKey(ctx(t), "key_nope"); return err }},
		{"KeyByHash", func() error { _, err := s.KeyByHash(ctx(t), hashOf("nope")); return err }},
		{"SetKeyLimit", func() error {
			_, err := s.SetKeyLimit(ctx(t), "key_nope", &store.CreditLimit{Period: store.PeriodDay, Credits: 1})
			return err
		}},
		{"SetKeyLimit clear", func() error { _, err := s.SetKeyLimit(ctx(t), "key_nope", nil); return err }},
		{"RevokeKey", func() error { _, err := s.RevokeKey(ctx(t), "key_nope", base); return err }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); !errors.Is(err, store.ErrNotFound) {
				t.Errorf("err = %v, want ErrNotFound", err)
			}
		})
	}
	t.Run("KeySpend of a key with no spend", func(t *testing.T) {
		for _, p := range store.Periods {
			got, err := s.KeySpend(ctx(t), "key_1", p, base)
			if err != nil || got != 0 {
				t.Errorf("KeySpend(%s) = %s, %v; want 0", p, got, err)
			}
		}
	})
	t.Run("KeySpend invalid period", func(t *testing.T) {
		if _, err := s.KeySpend(ctx(t), "key_1", "fortnight", base); err == nil {
			t.Error("KeySpend with an invalid period succeeded")
		}
	})
}
