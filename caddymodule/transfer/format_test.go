package transfer

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"socialrouter/caddymodule/admin"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// exportFixture is what seedExportStore put in a store: the secrets, which
// no store holds, to prove the keys still authenticate after a move.
type exportFixture struct {
	secrets map[string]string // key id → secret
	revoked string            // id of the revoked key
	limited string            // id of the key with a credit limit
}

var exportBase = time.Date(2025, time.March, 12, 10, 30, 15, 123456789, time.UTC)

// seedExportStore fills s with three accounts (one moved by a settle, one
// at zero) and keys made by the gateway's own generator: one plain, one
// with a credit limit, one revoked.
func seedExportStore(t *testing.T, s store.Store) exportFixture {
	t.Helper()
	ctx := t.Context()
	f := exportFixture{secrets: map[string]string{}}
	for _, a := range []struct {
		id      string
		balance credits.Micros
	}{{"acme", 12_500_001}, {"beta", 3 * credits.PerCredit}, {"zero", 0}} {
		if _, err := s.CreateAccount(ctx, a.id, a.balance, exportBase); err != nil {
			t.Fatal(err)
		}
	}
	limit := &store.CreditLimit{Period: store.PeriodDay, Credits: 2_500_000}
	keys := []struct {
		account, name string
		limit         *store.CreditLimit
	}{{"acme", "backend", nil}, {"acme", "ci", limit}, {"beta", "old", nil}, {"acme", "", nil}}
	for i, k := range keys {
		secret, key, err := admin.NewKey("sdr", k.account, k.name, k.limit, exportBase.Add(time.Duration(i)*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.CreateKey(ctx, key); err != nil {
			t.Fatal(err)
		}
		f.secrets[key.ID] = secret
		switch i {
		case 1:
			f.limited = key.ID
		case 2:
			f.revoked = key.ID
			if _, err := s.RevokeKey(ctx, key.ID, exportBase.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := &runs.Run{ID: "ext_1", Status: "completed", AccountID: "acme", KeyID: f.limited,
		Data: []json.RawMessage{[]byte(`{"a":1}`), []byte(`{"a":2}`)}}
	if _, err := s.Settle(ctx, store.Settlement{Run: run, Price: 1725, Offer: "o", Platform: "p", Now: exportBase}); err != nil {
		t.Fatal(err)
	}
	return f
}

func openBadger(t *testing.T, dir string) *badgerstore.Store {
	t.Helper()
	s, err := badgerstore.Open(dir, badgerstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// sameStores checks that dst holds exactly src's accounts and keys, in the
// same order, and that every seeded secret finds its key in dst by hash.
func sameStores(t *testing.T, src, dst store.Store, f exportFixture) {
	t.Helper()
	ctx := t.Context()
	want, err := src.(store.Exporter).ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got, err := dst.(store.Exporter).ListAccounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("accounts after import: %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Balance != want[i].Balance || !got[i].CreatedAt.Equal(want[i].CreatedAt) {
			t.Errorf("account %d = %+v, want %+v", i, got[i], want[i])
		}
		wk, err := src.ListKeys(ctx, want[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		gk, err := dst.ListKeys(ctx, want[i].ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(gk) != len(wk) {
			t.Fatalf("keys of %s after import: %d, want %d", want[i].ID, len(gk), len(wk))
		}
		for j := range wk {
			if d := keyDiff(gk[j], wk[j]); len(d) > 0 || gk[j].ID != wk[j].ID {
				t.Errorf("key %d of %s = %+v, want %+v (differs in %v)", j, want[i].ID, gk[j], wk[j], d)
			}
		}
	}
	for id, secret := range f.secrets {
		k, err := dst.KeyByHash(ctx, sha256.Sum256([]byte(secret)))
		if err != nil || k.ID != id {
			t.Errorf("the secret of %s does not find it after import: %+v, %v", id, k, err)
		}
	}
}

func TestExportImportBadger(t *testing.T) {
	ctx := t.Context()
	src := openBadger(t, t.TempDir())
	defer src.Close()
	f := seedExportStore(t, src)

	var out bytes.Buffer
	st, err := exportStore(ctx, src, &out)
	if err != nil {
		t.Fatal(err)
	}
	if st.accounts != 3 || st.keys != 4 {
		t.Errorf("exported %+v, want 3 accounts and 4 keys", st)
	}

	t.Run("format", func(t *testing.T) {
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != 7 {
			t.Fatalf("%d lines, want 7:\n%s", len(lines), out.String())
		}
		for i, l := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("line %d is not a JSON object: %v", i+1, err)
			}
			wantKind, fields := kindAccount, []string{"kind", "id", "balance", "created_at"}
			if i >= 3 {
				wantKind = kindKey
				fields = []string{"kind", "id", "account", "name", "sha256", "display", "created_at", "revoked_at", "credit_limit"}
			}
			if m["kind"] != wantKind || len(m) != len(fields) {
				t.Errorf("line %d: %s; want kind %s with exactly %v", i+1, l, wantKind, fields)
			}
			for _, k := range fields {
				if _, ok := m[k]; !ok {
					t.Errorf("line %d lacks %q: %s", i+1, k, l)
				}
			}
		}
		if !strings.Contains(lines[0], `"id":"acme","balance":12.496551,`) {
			t.Errorf("first line %s: want acme's exact balance after the settle (12.500001 - 2 × 0.001725)", lines[0])
		}
		for id, secret := range f.secrets {
			if strings.Contains(out.String(), secret) || strings.Contains(out.String(), secret[len("sdr_live_"):]) {
				t.Errorf("the export contains the secret of %s", id)
			}
			sum := sha256.Sum256([]byte(secret))
			if !strings.Contains(out.String(), `"id":"`+id+`","account":`) || !strings.Contains(out.String(), `"sha256":"`+hex.EncodeToString(sum[:])+`"`) {
				t.Errorf("key %s or its digest is missing:\n%s", id, out.String())
			}
		}
	})

	dst := openBadger(t, t.TempDir())
	defer dst.Close()
	var report bytes.Buffer
	st2, err := importStore(ctx, dst, bytes.NewReader(out.Bytes()), &report)
	if err != nil || st2.problems() != 0 || st2.accounts != 3 || st2.keys != 4 {
		t.Fatalf("import: %s, %v\n%s", st2, err, report.String())
	}
	sameStores(t, src, dst, f)

	t.Run("again is a no-op", func(t *testing.T) {
		var report bytes.Buffer
		st, err := importStore(ctx, dst, bytes.NewReader(out.Bytes()), &report)
		if err != nil || st != (importStats{sameAccounts: 3, sameKeys: 4}) || report.Len() != 0 {
			t.Fatalf("second import: %s, %v\n%s", st, err, report.String())
		}
		sameStores(t, src, dst, f)
	})

	t.Run("conflicts and bad lines are reported, the rest imported", func(t *testing.T) {
		if _, err := dst.AddCredits(ctx, "beta", 1); err != nil {
			t.Fatal(err)
		}
		if _, err := dst.SetKeyLimit(ctx, f.limited, nil); err != nil {
			t.Fatal(err)
		}
		other := openBadger(t, t.TempDir())
		defer other.Close()
		if _, err := other.CreateAccount(ctx, "acme", 0, exportBase); err != nil {
			t.Fatal(err)
		}
		// A key with another id but the digest of an existing one.
		stolen := keyToLine(store.Key{ID: "key_other", AccountID: "acme", Display: "d", CreatedAt: exportBase,
			Hash: sha256.Sum256([]byte(f.secrets[f.revoked]))})
		b, _ := json.Marshal(stolen)
		in := out.String() + strings.Join([]string{
			string(b),
			`{"kind":"account","id":"new","balance":1,"created_at":"2025-03-12T10:30:15Z"}`,
			`{"kind":"acount","id":"x"}`,
			`{"kind":"account","id":"y","balance":1,"created_at":"2025-03-12T10:30:15Z","extra":1}`,
			`{"kind":"key","id":"key_bad","account":"acme","name":"","sha256":"abcd","display":"d","created_at":"2025-03-12T10:30:15Z","revoked_at":null,"credit_limit":null}`,
			`{"kind":"key","id":"key_orphan","account":"nobody","name":"","sha256":"` + strings.Repeat("ab", 32) + `","display":"d","created_at":"2025-03-12T10:30:15Z","revoked_at":null,"credit_limit":null}`,
			`{"kind":"key","id":"key_zero","account":"acme","name":"","sha256":"` + strings.Repeat("cd", 32) + `","display":"d","created_at":"2025-03-12T10:30:15Z","revoked_at":null,"credit_limit":{"period":"day","credits":0}}`,
			`not json`,
			``,
		}, "\n")
		var report bytes.Buffer
		st, err := importStore(ctx, dst, strings.NewReader(in), &report)
		if err != nil {
			t.Fatal(err)
		}
		want := importStats{accounts: 1, sameAccounts: 2, sameKeys: 3, conflicts: 3, invalid: 5, failures: 1}
		if st != want {
			t.Errorf("stats %s, want %s", st, want)
		}
		for _, s := range []string{
			"line 2: account beta: conflict: present with balance 3.000001",
			"key " + f.limited + ": conflict: present with a different credit_limit",
			"line 8: key key_other: conflict: its digest already belongs to key " + f.revoked,
			`line 10: unknown kind "acount"`,
			`line 11: account: json: unknown field "extra"`,
			`line 12: key "key_bad": sha256 "abcd" is not a hex SHA-256 digest`,
			"line 13: key key_orphan: account nobody is not in the store",
			`line 14: key "key_zero": credit_limit.credits must be above 0`,
			"line 15: not a JSON object",
		} {
			if !strings.Contains(report.String(), s) {
				t.Errorf("report lacks %q:\n%s", s, report.String())
			}
		}
		if a, err := dst.GetAccount(ctx, "beta"); err != nil || a.Balance != 3*credits.PerCredit+1 {
			t.Errorf("a conflicting account was overwritten: %+v, %v", a, err)
		}
		if _, err := dst.GetAccount(ctx, "new"); err != nil {
			t.Errorf("the account after the conflicts was not imported: %v", err)
		}
	})
}
