package storetest

import (
	"errors"
	"math"
	"testing"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/store"
)

func testAccounts(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	a, err := s.CreateAccount(ctx(t), "acme", cr(10), base)
	if err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	if a.ID != "acme" || a.Balance != cr(10) {
		t.Errorf("CreateAccount = %+v, want acme with 10 credits", a)
	}
	checkTime(t, "CreateAccount CreatedAt", a.CreatedAt, base)

	cases := []struct {
		name    string
		do      func() (store.Account, error)
		want    store.Account
		wantErr error
	}{
		{
			name: "get",
			do:   func() (store.Account, error) { return s.GetAccount(ctx(t), "acme") },
			want: store.Account{ID: "acme", Balance: cr(10), CreatedAt: wantTime(base)},
		},
		{
			name:    "duplicate",
			do:      func() (store.Account, error) { return s.CreateAccount(ctx(t), "acme", cr(99), base) },
			wantErr: store.ErrExists,
		},
		{
			name: "duplicate kept the first balance",
			do:   func() (store.Account, error) { return s.GetAccount(ctx(t), "acme") },
			want: store.Account{ID: "acme", Balance: cr(10), CreatedAt: wantTime(base)},
		},
		{
			name:    "unknown",
			do:      func() (store.Account, error) { return s.GetAccount(ctx(t), "nobody") },
			wantErr: store.ErrNotFound,
		},
		{
			name: "zero balance",
			do:   func() (store.Account, error) { return s.CreateAccount(ctx(t), "empty", 0, base.Add(-time1h)) },
			want: store.Account{ID: "empty", Balance: 0, CreatedAt: wantTime(base.Add(-time1h))},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.do()
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			if got.ID != tc.want.ID || got.Balance != tc.want.Balance {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			checkTime(t, "CreatedAt", got.CreatedAt, tc.want.CreatedAt)
		})
	}

	t.Run("negative opening balance", func(t *testing.T) {
		if _, err := s.CreateAccount(ctx(t), "neg", -1, base); err == nil {
			t.Fatal("CreateAccount with a negative balance succeeded")
		}
		if _, err := s.GetAccount(ctx(t), "neg"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("GetAccount after refused create: err = %v, want ErrNotFound", err)
		}
	})
}

func testAddCredits(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", cr(10))
	// Steps run in order against one account.
	steps := []struct {
		name    string
		account string
		amount  credits.Micros
		want    credits.Micros
		wantErr error
	}{
		{"add", "acme", cr(5), cr(15), nil},
		{"add micro-credits", "acme", 1, cr(15) + 1, nil},
		{"negative", "acme", -cr(3) - 1, cr(12), nil},
		{"negative beyond balance", "acme", -cr(12) - 1, cr(12), store.ErrInsufficient},
		{"zero", "acme", 0, cr(12), nil},
		{"down to exactly zero", "acme", -cr(12), 0, nil},
		{"negative from zero", "acme", -1, 0, store.ErrInsufficient},
		{"up to the largest balance", "acme", math.MaxInt64, math.MaxInt64, nil},
		{"past the largest balance", "acme", 1, math.MaxInt64, store.ErrOverflow},
		{"back down", "acme", -math.MaxInt64, 0, nil},
		{"unknown account", "nobody", cr(1), 0, store.ErrNotFound},
		{"unknown account negative", "nobody", -cr(1), 0, store.ErrNotFound},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			a, err := s.AddCredits(ctx(t), st.account, st.amount)
			if st.wantErr != nil {
				if !errors.Is(err, st.wantErr) {
					t.Fatalf("AddCredits(%s) err = %v, want %v", st.amount, err, st.wantErr)
				}
			} else {
				if err != nil {
					t.Fatalf("AddCredits(%s): %v", st.amount, err)
				}
				if a.ID != st.account || a.Balance != st.want {
					t.Errorf("AddCredits(%s) = %+v, want balance %s", st.amount, a, st.want)
				}
				checkTime(t, "CreatedAt", a.CreatedAt, base)
			}
			if st.account == "acme" {
				if got := balanceOf(t, s, "acme"); got != st.want {
					t.Errorf("balance after = %s, want %s", got, st.want)
				}
			}
		})
	}
}
