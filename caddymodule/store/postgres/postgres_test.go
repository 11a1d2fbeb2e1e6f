package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"socialrouter/internal/testenv"
	"time"

	"github.com/jackc/pgx/v5"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/postgres"
	"socialrouter/caddymodule/store/storetest"
)

// testURL returns SDR_TEST_POSTGRES_URL or skips the test.
func testURL(t testing.TB) string {
	t.Helper()
	return testenv.PostgresURL(t, "the PostgreSQL store tests")
}

// testSchema creates a fresh schema sdr_test_<random> and drops it when the
// test ends, so tests never see each other's rows.
func testSchema(t testing.TB, url string) string {
	t.Helper()
	b := make([]byte, 8)
	rand.Read(b)
	name := "sdr_test_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("connecting to postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("creating schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("connecting to drop schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	return name
}

func TestConformance(t *testing.T) {
	url := testURL(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)))
		if err != nil {
			t.Fatalf("opening store: %v", err)
		}
		return s
	})
}

// TestOpenConcurrently starts several nodes on one fresh schema at once:
// the advisory lock lets exactly one of them migrate.
func TestOpenConcurrently(t *testing.T) {
	url := testURL(t)
	schema := testSchema(t, url)
	const nodes = 8
	stores := make([]*postgres.Store, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stores[i], errs[i] = postgres.Open(t.Context(), url, postgres.WithSchema(schema))
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: opening store: %v", i, err)
		}
		defer stores[i].Close()
	}
	conn, err := pgx.Connect(t.Context(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var versions, applied int
	err = conn.QueryRow(t.Context(), fmt.Sprintf("SELECT count(*), count(DISTINCT version) FROM %s.schema_migrations",
		pgx.Identifier{schema}.Sanitize())).Scan(&applied, &versions)
	if err != nil {
		t.Fatal(err)
	}
	if applied != versions || versions == 0 {
		t.Errorf("schema_migrations holds %d rows for %d versions", applied, versions)
	}
	// Run documents arrive compressed (migration 6): the server must not
	// compress them again.
	var storage string
	err = conn.QueryRow(t.Context(), `SELECT attstorage::text FROM pg_attribute
WHERE attrelid = $1::regclass AND attname = 'doc'`, pgx.Identifier{schema, "runs"}.Sanitize()).Scan(&storage)
	if err != nil || storage != "e" {
		t.Errorf("runs.doc storage = %q, %v; want external (e)", storage, err)
	}
	// Every node works on the shared schema.
	if _, err := stores[0].CreateAccount(t.Context(), "acme", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := stores[nodes-1].GetAccount(t.Context(), "acme"); err != nil {
		t.Errorf("another node cannot see the account: %v", err)
	}
}

// TestSearchPathInURL checks the schema can also come from the URL.
func TestSearchPathInURL(t *testing.T) {
	url := testURL(t)
	schema := testSchema(t, url)
	sep := "?"
	if strings.Contains(url, "?") {
		sep = "&"
	}
	s, err := postgres.Open(t.Context(), url+sep+"search_path="+schema)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateAccount(t.Context(), "acme", 1, time.Now()); err != nil {
		t.Fatal(err)
	}
	other, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.GetAccount(t.Context(), "acme"); err != nil {
		t.Errorf("account written through the URL's search_path not found in schema %s: %v", schema, err)
	}
}

// TestTwoNodesNeverOverdraw settles concurrently through two stores (two
// pools, as two gateway nodes) on one account that pays for only some of
// the runs.
func TestTwoNodesNeverOverdraw(t *testing.T) {
	url := testURL(t)
	schema := testSchema(t, url)
	var nodes [2]*postgres.Store
	for i := range nodes {
		s, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		nodes[i] = s
	}
	const price = credits.Micros(1725)
	start := 50*price + 1
	now := time.Date(2025, 3, 12, 10, 0, 0, 0, time.UTC)
	if _, err := nodes[0].CreateAccount(t.Context(), "acme", start, now); err != nil {
		t.Fatal(err)
	}
	const settles = 64
	results := make([]store.SettleResult, settles)
	errs := make([]error, settles)
	var wg sync.WaitGroup
	for i := range settles {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := &runs.Run{ID: fmt.Sprintf("ext_%d", i), Status: "completed", AccountID: "acme",
				Data: []json.RawMessage{[]byte(`{"a":1}`), []byte(`{"a":2}`), []byte(`{"a":3}`)}}
			results[i], errs[i] = nodes[i%2].Settle(t.Context(), store.Settlement{Run: run, Price: price, Offer: "o", Platform: "p", Now: now})
		}()
	}
	wg.Wait()
	var charged, stored credits.Micros
	for i := range settles {
		if errs[i] != nil {
			t.Fatalf("settle %d: %v", i, errs[i])
		}
		charged += results[i].Charged
		r, err := nodes[(i+1)%2].GetRun(t.Context(), "acme", fmt.Sprintf("ext_%d", i))
		if err != nil {
			t.Fatal(err)
		}
		stored += r.CreditsUsed
	}
	a, err := nodes[1].GetAccount(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if a.Balance != 1 || charged != 50*price || stored != charged {
		t.Errorf("balance %s after charging %s (runs say %s); want 0.000001 left after 50 records", a.Balance, charged, stored)
	}
}

// hotAndCold opens a store in a fresh schema with account hot, whose
// balance pays for 15 records at price, and cold, which pays for 100.
func hotAndCold(t *testing.T, price credits.Micros) *postgres.Store {
	t.Helper()
	url := testURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for id, bal := range map[string]credits.Micros{"hot": 15 * price, "cold": 100 * price} {
		if _, err := s.CreateAccount(t.Context(), id, bal, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestSettleGroups settles 48 runs at once, half on an account whose
// balance pays for 15 records and half on one that pays for all: settles
// ride in shared transactions (the point of grouping), yet the outcome is
// what one-by-one settles give: 15 + 24 records charged, the hot account
// at zero and never below, each settle's reported balance distinct, the
// usage rows counting every request.
func TestSettleGroups(t *testing.T) {
	price := credits.Micros(1725)
	s := hotAndCold(t, price)
	ctx := t.Context()
	now := time.Now().UTC()
	var wg sync.WaitGroup
	results := make([]store.SettleResult, 48)
	errs := make([]error, 48)
	account := func(i int) string { return []string{"hot", "cold"}[i%2] }
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := &runs.Run{ID: fmt.Sprintf("ext_group_%02d", i), Status: "completed", AccountID: account(i),
				CreatedAt: now, CompletedAt: now, Data: []json.RawMessage{json.RawMessage(`{"i":1}`)}}
			results[i], errs[i] = s.Settle(ctx, store.Settlement{Run: run, Price: price, Offer: "o", Platform: "p", Now: now})
		}()
	}
	wg.Wait()
	records := map[string]int{}
	seen := map[string]map[credits.Micros]bool{"hot": {}, "cold": {}}
	for i := range 48 {
		if errs[i] != nil {
			t.Fatalf("settle %d: %v", i, errs[i])
		}
		records[account(i)] += results[i].Records
		if results[i].Records == 1 {
			if seen[account(i)][results[i].Balance] {
				t.Errorf("two settles of %s report balance %s", account(i), results[i].Balance)
			}
			seen[account(i)][results[i].Balance] = true
		}
	}
	for id, want := range map[string]struct {
		records int
		balance credits.Micros
	}{"hot": {15, 0}, "cold": {24, 76 * price}} {
		acct, err := s.GetAccount(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if records[id] != want.records || acct.Balance != want.balance {
			t.Errorf("%s: %d records charged, balance %s; want %d and %s", id, records[id], acct.Balance, want.records, want.balance)
		}
		rows, err := s.Usage(ctx, id, store.PeriodStart(store.PeriodDay, now))
		if err != nil || len(rows) != 1 || rows[0].Requests != 24 || rows[0].Records != int64(want.records) || rows[0].Credits != credits.Micros(want.records)*price {
			t.Errorf("%s usage = %+v, %v; want 24 requests, %d records", id, rows, err, want.records)
		}
	}
	if s.GroupedSettles() == 0 {
		t.Error("48 concurrent settles never shared a transaction")
	}
	t.Logf("%d of 48 settles committed in shared transactions", s.GroupedSettles())
}

// TestReserveGroups reserves one record for 48 calls at once, a third on
// an account whose balance pays for 15, a third on one that pays for all
// and a third on no account: reserves ride in shared transactions, yet
// each gets what one-by-one reserves give: 15 held on the first (each
// seeing the holds before it), 16 on the second, ErrNotFound alone for
// the unknown account.
func TestReserveGroups(t *testing.T) {
	const price = credits.Micros(1725)
	s := hotAndCold(t, price)
	ctx := t.Context()
	accounts := []string{"hot", "cold", "ghost"}
	results := make([]store.HoldResult, 48)
	errs := make([]error, 48)
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 48 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			results[i], errs[i] = s.Reserve(ctx, store.Hold{ID: fmt.Sprintf("ext_hold_%02d", i), AccountID: accounts[i%3], Price: price, Records: 1})
		}()
	}
	close(begin)
	wg.Wait()
	held := map[string]int{}
	for i := range 48 {
		acct := accounts[i%3]
		if acct == "ghost" {
			if !errors.Is(errs[i], store.ErrNotFound) {
				t.Errorf("reserve %d on an unknown account: %v, want ErrNotFound", i, errs[i])
			}
			continue
		}
		if errs[i] != nil {
			t.Fatalf("reserve %d: %v", i, errs[i])
		}
		held[acct] += results[i].Records
	}
	if held["hot"] != 15 || held["cold"] != 16 {
		t.Errorf("held %d records on hot, %d on cold; want 15 and 16", held["hot"], held["cold"])
	}
	if s.GroupedReserves() == 0 {
		t.Error("48 concurrent reserves never shared a transaction")
	}
	t.Logf("%d of 48 reserves committed in shared transactions", s.GroupedReserves())
}

// TestBatchTxOneTransaction: the statements of one batchTx commit
// together or not at all. A statement the server refuses undoes the ones
// before it (no BEGIN, no ROLLBACK: the implicit transaction of the
// batch), and is not ambiguous; a batch that committed but whose answer
// was lost is.
func TestBatchTxOneTransaction(t *testing.T) {
	s := hotAndCold(t, 1)
	ctx := t.Context()
	debit := func(b *pgx.Batch) { b.Queue(`UPDATE accounts SET balance = balance - 1 WHERE id = 'hot'`) }
	ambiguous, err := postgres.BatchTx(s, ctx, func(b *pgx.Batch) {
		debit(b)
		b.Queue(`SELECT 1 / 0`)
	})
	if err == nil || ambiguous {
		t.Fatalf("a batch with a failing statement: ambiguous %v, %v; want a plain error", ambiguous, err)
	}
	balance := func() credits.Micros {
		a, err := s.GetAccount(ctx, "hot")
		if err != nil {
			t.Fatal(err)
		}
		return a.Balance
	}
	if got := balance(); got != 15 {
		t.Fatalf("balance %s after a refused batch; want 15: the debit before the error was committed", got)
	}
	postgres.SetCommitFault(s, func() error { return fmt.Errorf("read tcp: connection reset by peer") })
	if ambiguous, err := postgres.BatchTx(s, ctx, debit); err == nil || !ambiguous {
		t.Fatalf("a batch whose answer was lost: ambiguous %v, %v; want ambiguous", ambiguous, err)
	}
	if got := balance(); got != 14 {
		t.Errorf("balance %s after the ambiguous batch; want 14 (it committed)", got)
	}
}

// TestReserveGroupAmbiguousCommit: a grouped reserve whose commit went
// through but whose answer was lost fails each of its calls; once the
// failed calls release (as billing does), the account holds exactly what
// the calls that succeeded were told, so no money is held twice or lost.
func TestReserveGroupAmbiguousCommit(t *testing.T) {
	const price = credits.Micros(1725)
	s := hotAndCold(t, price) // hot pays for 15 records
	postgres.SetCommitFault(s, func() error { return fmt.Errorf("read tcp: connection reset by peer") })
	ctx := t.Context()
	const calls = 32
	results := make([]store.HoldResult, calls)
	errs := make([]error, calls)
	begin := make(chan struct{})
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-begin
			results[i], errs[i] = s.Reserve(ctx, store.Hold{ID: fmt.Sprintf("ext_amb_%02d", i), AccountID: "hot", Price: price, Records: 1})
		}()
	}
	close(begin)
	wg.Wait()
	held, failed := 0, 0
	for i := range calls {
		if errs[i] != nil {
			failed++
			if err := s.Release(ctx, fmt.Sprintf("ext_amb_%02d", i)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		held += results[i].Records
	}
	if failed == 0 {
		t.Fatal("32 concurrent reserves never shared a transaction (no ambiguous group)")
	}
	if held > 15 {
		t.Fatalf("%d records held on an account that pays for 15", held)
	}
	rest, err := s.Reserve(ctx, store.Hold{ID: "ext_amb_rest", AccountID: "hot", Price: price, Records: 100})
	if err != nil {
		t.Fatal(err)
	}
	if held+rest.Records != 15 {
		t.Errorf("%d records told held, %d left to reserve; want 15 in all", held, rest.Records)
	}
	t.Logf("%d of %d reserves failed in ambiguous groups, %d records held", failed, calls, held)
}

// TestReserveGroupIsOneByOne: a group reserved in one transaction (one
// round trip) gives each hold exactly what consecutive lone reserves
// give, on two stores set up alike: a key's limit with spend already in
// its window, a key without a limit, no key, holds re-sized (a previous
// hold counts until its turn; one to nothing; one made earlier in the
// group), two prices, an unknown account, a window past the key's, and
// the balance and the limit each running out.
func TestReserveGroupIsOneByOne(t *testing.T) {
	const price = credits.Micros(1725)
	now := time.Now().UTC()
	day := store.PeriodStart(store.PeriodDay, now)
	setup := func() *postgres.Store {
		url := testURL(t)
		s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		ctx := t.Context()
		for id, bal := range map[string]credits.Micros{"acme": 40 * price, "tiny": 3 * price} {
			if _, err := s.CreateAccount(ctx, id, bal, now); err != nil {
				t.Fatal(err)
			}
		}
		for i, id := range []string{"key_lim", "key_free"} {
			k := store.Key{ID: id, AccountID: "acme", Name: id, Hash: [32]byte{byte(i + 1)}, Display: id, CreatedAt: now}
			if err := s.CreateKey(ctx, k); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.SetKeyLimit(ctx, "key_lim", &store.CreditLimit{Period: store.PeriodDay, Credits: 12*price + 7}); err != nil {
			t.Fatal(err)
		}
		run := &runs.Run{ID: "ext_spent", Status: "completed", AccountID: "acme", KeyID: "key_lim", CreatedAt: now,
			Data: []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)}}
		if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: price, Offer: "o", Platform: "p", Now: now}); err != nil {
			t.Fatal(err)
		}
		// A hold the group re-sizes, and one it leaves alone.
		for _, h := range []store.Hold{
			{ID: "ext_resized", AccountID: "acme", KeyID: "key_lim", Price: price, Records: 4, Now: now},
			{ID: "ext_other", AccountID: "acme", KeyID: "key_lim", Price: price, Records: 2, Now: now},
		} {
			if _, err := s.Reserve(ctx, h); err != nil {
				t.Fatal(err)
			}
		}
		return s
	}
	hold := func(id, acct, key string, p credits.Micros, n int) store.Hold {
		return store.Hold{ID: id, AccountID: acct, KeyID: key, Price: p, Records: n, Now: now}
	}
	// A hold in the key's next window, while the limit has room, between
	// holds of this window: its spend is the next window's (none).
	next := hold("ext_next_day", "acme", "key_lim", price, 3)
	next.Now = day.AddDate(0, 0, 1)
	holds := []store.Hold{hold("ext_lim_0", "acme", "key_lim", price, 2), next}
	for i := 1; i < 3; i++ {
		holds = append(holds, hold(fmt.Sprintf("ext_lim_%d", i), "acme", "key_lim", price, 2))
	}
	holds = append(holds,
		hold("ext_resized", "acme", "key_lim", price, 1),
		hold("ext_other", "acme", "key_lim", price, 0), // re-sized to nothing: deleted
		hold("ext_lim_0", "acme", "key_lim", price, 1), // a hold of this group, re-sized in it
		hold("ext_free", "acme", "key_free", 2*price, 9),
		hold("ext_ghost", "ghost", "", price, 1),
		hold("ext_lim_3", "acme", "key_lim", price, 3),
		hold("ext_tiny_0", "tiny", "", price, 2),
		hold("ext_tiny_1", "tiny", "", price, 2),
		hold("ext_nokey", "acme", "", price, 30),
		hold("ext_lim_4", "acme", "key_lim", price, 5),
	)
	ctx := t.Context()
	oneByOne, grouped := setup(), setup()
	want, wantErrs, _ := postgres.ReserveInOrder(oneByOne, ctx, holds, false)
	got, gotErrs, together := postgres.ReserveInOrder(grouped, ctx, holds, true)
	if !together {
		t.Fatal("the group was reserved one by one: its statement failed")
	}
	for i, h := range holds {
		if (gotErrs[i] == nil) != (wantErrs[i] == nil) || got[i] != want[i] {
			t.Errorf("%s: grouped %+v, %v; one by one %+v, %v", h.ID, got[i], gotErrs[i], want[i], wantErrs[i])
		}
	}
	if i := slices.IndexFunc(holds, func(h store.Hold) bool { return h.ID == "ext_ghost" }); !errors.Is(gotErrs[i], store.ErrNotFound) {
		t.Errorf("grouped reserve on an unknown account: %v, want ErrNotFound", gotErrs[i])
	}
	capped := map[string]bool{}
	for _, r := range want {
		capped[r.CappedBy] = true
	}
	// What the group left held is what the lone reserves left: a later
	// reserve of each key and of the account alone finds the same room
	// (once the account has money again: the group spent it all).
	for _, st := range []*postgres.Store{oneByOne, grouped} {
		if _, err := st.AddCredits(ctx, "acme", 100*price); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"key_lim", "key_free", ""} {
		probe := []store.Hold{hold("ext_probe_"+key, "acme", key, 1, 1<<30)}
		w, _, _ := postgres.ReserveInOrder(oneByOne, ctx, probe, false)
		g, _, _ := postgres.ReserveInOrder(grouped, ctx, probe, false)
		if g[0] != w[0] {
			t.Errorf("after the group, a reserve on key %q holds %+v; after the lone reserves %+v", key, g[0], w[0])
		}
	}
	if nd := want[1]; nd.Records != 3 {
		t.Errorf("the hold in the next window got %d records, want 3: the case no longer tells the windows apart", nd.Records)
	}
	if !capped[store.CappedCreditLimit] || !capped[store.CappedBalance] {
		t.Errorf("the case no longer runs out of both the limit and the balance: %+v", want)
	}
}

// TestHoldsTwoNodes runs concurrent reserve/capture on two nodes sharing
// one schema: the balance is never overdrawn and the key never spends
// past its limit, to the micro-credit.
func TestHoldsTwoNodes(t *testing.T) {
	nodes := twoNodes(t)
	const price = 1725
	if served := storetest.ReserveCapture(t, nodes, credits.Micros(1000*price), 9*price+11, 64, 2); served != 9 {
		t.Errorf("two nodes served %d records under a 9-record key limit, want 9", served)
	}
}

// TestHoldExpires: a hold whose node died (never settled nor released)
// stops counting after the hold timeout, so the account's money comes
// back without the dead node.
func TestHoldExpires(t *testing.T) {
	url := testURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)), postgres.WithHoldTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.CreateAccount(t.Context(), "acme", 10, time.Now()); err != nil {
		t.Fatal(err)
	}
	h := store.Hold{ID: "run_dead", AccountID: "acme", Price: 1, Records: 10}
	if got, err := s.Reserve(t.Context(), h); err != nil || got.Records != 10 {
		t.Fatalf("Reserve = %+v, %v", got, err)
	}
	h.ID = "run_next"
	if got, err := s.Reserve(t.Context(), h); err != nil || got.Records != 0 {
		t.Fatalf("Reserve while the dead hold counts = %+v, %v; want 0 records", got, err)
	}
	time.Sleep(1200 * time.Millisecond)
	if got, err := s.Reserve(t.Context(), h); err != nil || got.Records != 10 {
		t.Errorf("Reserve after the dead hold expired = %+v, %v; want 10 records", got, err)
	}
}

// TestSettleAmbiguousCommit: a settle whose COMMIT went through but whose
// client saw the connection break answers the run it committed, once, not
// an error; alone and in a group.
func TestSettleAmbiguousCommit(t *testing.T) {
	url := testURL(t)
	s, err := postgres.Open(t.Context(), url, postgres.WithSchema(testSchema(t, url)))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	postgres.SetCommitFault(s, func() error { return fmt.Errorf("read tcp: connection reset by peer") })
	const price = 1725
	start := credits.Micros(1000 * price)
	if _, err := s.CreateAccount(t.Context(), "acme", start, time.Now()); err != nil {
		t.Fatal(err)
	}
	settleN := func(i int) (store.SettleResult, error) {
		run := &runs.Run{ID: fmt.Sprintf("ext_amb_%d", i), Status: "completed", AccountID: "acme", CreatedAt: time.Now(),
			Data: []json.RawMessage{json.RawMessage(`{"n":1}`), json.RawMessage(`{"n":2}`)}}
		return s.Settle(t.Context(), store.Settlement{Run: run, Price: price, Offer: "source_b/pro_net", Platform: "pro_net"})
	}
	if res, err := settleN(0); err != nil || res.Records != 2 || res.Charged != 2*price {
		t.Fatalf("lone settle after an ambiguous commit = %+v, %v; want its 2 records", res, err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 32)
	var charged [32]credits.Micros
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := settleN(i + 1)
			errs[i], charged[i] = err, res.Charged
		}()
	}
	wg.Wait()
	total := credits.Micros(2 * price)
	for i, err := range errs {
		if err != nil {
			t.Errorf("settle %d: %v", i+1, err)
		}
		total += charged[i]
	}
	a, err := s.GetAccount(t.Context(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if a.Balance != start-total || total != 33*2*price {
		t.Errorf("balance %s, charged %s; want %s charged once each", a.Balance, total, credits.Micros(33*2*price))
	}
}

// twoNodes opens two stores on one fresh schema, as two gateway nodes.
func twoNodes(t *testing.T) []store.Store {
	t.Helper()
	var nodes []store.Store
	for _, s := range pgNodes(t, 2) {
		nodes = append(nodes, s)
	}
	return nodes
}

// pgNodes opens n stores on one fresh schema, as n gateway nodes, each
// closed when the test ends.
func pgNodes(t *testing.T, n int) []*postgres.Store {
	t.Helper()
	url := testURL(t)
	schema := testSchema(t, url)
	var nodes []*postgres.Store
	for range n {
		s, err := postgres.Open(t.Context(), url, postgres.WithSchema(schema))
		if err != nil {
			t.Fatalf("opening node: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		nodes = append(nodes, s)
	}
	return nodes
}
