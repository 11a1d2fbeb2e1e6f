package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"socialrouter/caddymodule/store"
)

// testAsyncCapGrouped: creates of several accounts at once, each id tried
// twice, then deletes racing new creates, then creates filling the room:
// every account has exactly its cap in flight when creates outnumber it
// and never more, an id is stored once (its other create ErrExists), and
// the count is the runs listed. A store that groups concurrent creates
// (PostgreSQL) admits each account's in one transaction: the cap must
// hold across the group and across groups, and a taken id in a group must
// not take a place another create of its account could have had.
func testAsyncCapGrouped(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	const limit, accounts, perAccount = 5, 3, 16
	account := func(a int) string { return fmt.Sprintf("acct_g%d", a) }
	type try struct{ id, account string }
	create := func(tries []try) []error {
		errs := make([]error, len(tries))
		var wg sync.WaitGroup
		for i, tr := range tries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = s.CreateAsyncRun(ctx(t), asyncRun(tr.id, tr.account, base), limit)
			}()
		}
		wg.Wait()
		return errs
	}
	// created counts, per account, the creates that succeeded; it fails
	// the test on an error other than the cap's or a taken id's.
	created := func(tries []try, errs []error) map[string]int {
		n := map[string]int{}
		for i, err := range errs {
			switch {
			case err == nil:
				n[tries[i].account]++
			case !errors.Is(err, store.ErrAsyncLimit) && !errors.Is(err, store.ErrExists):
				t.Errorf("create %s: %v, want nil, ErrAsyncLimit or ErrExists", tries[i].id, err)
			}
		}
		return n
	}
	inFlight := func(a string) int {
		t.Helper()
		n, err := s.CountAsyncRuns(ctx(t), a)
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.ListAsyncRuns(ctx(t), a, 0)
		if err != nil {
			t.Fatal(err)
		}
		if n != len(list) || n > limit {
			t.Fatalf("%s: CountAsyncRuns %d, %d runs listed, cap %d", a, n, len(list), limit)
		}
		return n
	}

	var first []try
	for a := range accounts {
		for i := range perAccount {
			first = append(first, try{fmt.Sprintf("ext_g%d_%02d", a, i/2), account(a)})
		}
	}
	errs := create(first)
	stored := map[string]int{}
	for i, err := range errs {
		if err == nil {
			stored[first[i].id]++
		}
	}
	for id, n := range stored {
		if n > 1 {
			t.Errorf("%s stored by %d creates", id, n)
		}
	}
	for i, err := range errs {
		if errors.Is(err, store.ErrExists) && stored[first[i].id] != 1 {
			t.Errorf("create %s: ErrExists, but no create of it succeeded", first[i].id)
		}
	}
	got := created(first, errs)
	for a := range accounts {
		if got[account(a)] != limit || inFlight(account(a)) != limit {
			t.Errorf("%s: %d of %d creates (%d distinct ids) stored, %d in flight; want the cap %d",
				account(a), got[account(a)], perAccount, perAccount/2, inFlight(account(a)), limit)
		}
	}

	// Two runs of each account settle while new creates race them.
	var wg sync.WaitGroup
	for a := range accounts {
		list, err := s.ListAsyncRuns(ctx(t), account(a), 2)
		if err != nil || len(list) != 2 {
			t.Fatalf("ListAsyncRuns(%s, 2) = %d, %v", account(a), len(list), err)
		}
		for _, r := range list {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := s.DeleteAsyncRun(ctx(t), r.ID); err != nil {
					t.Errorf("deleting %s: %v", r.ID, err)
				}
			}()
		}
	}
	var second []try
	for a := range accounts {
		for i := range perAccount {
			second = append(second, try{fmt.Sprintf("ext_h%d_%02d", a, i), account(a)})
		}
	}
	errs = create(second)
	wg.Wait()
	got = created(second, errs)
	for a := range accounts {
		if want := limit - 2 + got[account(a)]; inFlight(account(a)) != want {
			t.Errorf("%s: %d in flight after 2 deletes and %d creates, want %d", account(a), inFlight(account(a)), got[account(a)], want)
		}
	}

	// Creates fill what room is left, and no more.
	var third []try
	for a := range accounts {
		for i := range perAccount {
			third = append(third, try{fmt.Sprintf("ext_k%d_%02d", a, i), account(a)})
		}
	}
	before := map[string]int{}
	for a := range accounts {
		before[account(a)] = inFlight(account(a))
	}
	got = created(third, create(third))
	for a := range accounts {
		if got[account(a)] != limit-before[account(a)] || inFlight(account(a)) != limit {
			t.Errorf("%s: %d creates stored with %d in flight before, %d after; want %d and the cap %d",
				account(a), got[account(a)], before[account(a)], inFlight(account(a)), limit-before[account(a)], limit)
		}
	}
}
