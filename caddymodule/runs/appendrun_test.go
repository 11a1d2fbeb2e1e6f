package runs

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"socialrouter/caddymodule/credits"
)

// scopedRun mirrors the stores' form of a run (settle.storedRun).
type scopedRun struct {
	Run
	AccountID string `json:"account_id"`
	KeyID     string `json:"key_id,omitempty"`
}

// reference is what AppendJSON (encoding/json) writes for run.
func reference(t testing.TB, run *Run, records []json.RawMessage, scoped bool, account, key string) []byte {
	head := *run
	head.Data = nil
	var v any = &head
	if scoped {
		v = scopedRun{Run: head, AccountID: account, KeyID: key}
	}
	b, err := AppendJSON(nil, v, records)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestAppendRunMatchesEncodingJSON: AppendRun writes exactly the bytes of
// AppendJSON, for every member set or empty, strings that need escaping
// (quotes, control bytes, HTML, invalid UTF-8, U+2028) and the scoped form;
// and leaves to encoding/json what it does not handle.
func TestAppendRunMatchesEncodingJSON(t *testing.T) {
	now := time.Date(2026, 11, 22, 1, 2, 3, 4000, time.UTC)
	east := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 5*3600+1800))
	odd := "a\"b\\c\b\f\n\r\t\x00\x1f\x7f<>&\u2028\u2029é\xff\xc3x😀"
	recs := []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"s":"<&>"}`)}
	tests := []struct {
		name    string
		run     Run
		records []json.RawMessage
		scoped  bool
		account string
		key     string
	}{
		{name: "empty run", run: Run{}},
		{name: "completed extraction", run: Run{ID: "ext_1", Status: StatusCompleted, Platform: "pro_net", Service: "profile.info",
			URL: "https://e.com/?a=<b>&c", ServedBy: "source_b/pro_net", CreditsUsed: credits.Micros(1725), CreatedAt: now, CompletedAt: now,
			Pagination: Pagination{Total: 10, Returned: 2},
			Attempts:   []Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Status: 200, DurationMS: 22, Records: 10}}}, records: recs},
		{name: "failed with error and attempts", run: Run{ID: "ext_2", Status: StatusFailed, URL: odd, CreatedAt: east, CompletedAt: east,
			Error:    &RunError{Code: odd, Type: "t", Message: `,"data":null,`},
			Attempts: []Attempt{{}, {Offer: odd, Outcome: "timeout", Handles: []string{"h1", odd}, Message: odd, DurationMS: -3}},
			CappedBy: "balance"}},
		{name: "search run with queries", run: Run{ID: "s_1", Kind: KindSearch, Status: StatusCompleted, Source: "src", Type: "people",
			Queries: []string{"q1", odd}, Provider: "p", CreditsUsed: credits.Micros(-5)}, records: recs[:1]},
		{name: "empty queries and handles are omitted", run: Run{ID: "x", Queries: []string{}, Attempts: []Attempt{{Handles: []string{}}}}},
		{name: "scoped with key", run: Run{ID: "ext_3", Status: StatusCompleted, CreatedAt: now}, records: recs, scoped: true, account: "acme", key: "key_1"},
		{name: "expired records", run: Run{ID: "ext_6", Status: StatusCompleted, CreditsUsed: 3450, CreatedAt: now,
			Pagination: Pagination{Total: 2, Returned: 2}, RecordsExpired: true, ExpiredAt: &east}, scoped: true, account: "acme"},
		{name: "scoped without key", run: Run{ID: "ext_4"}, scoped: true, account: odd},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			want := reference(t, &tc.run, tc.records, tc.scoped, tc.account, tc.key)
			got, ok := AppendRun([]byte("prefix:"), &tc.run, tc.records, tc.scoped, tc.account, tc.key)
			if !ok {
				t.Fatal("not handled")
			}
			if string(got[:7]) != "prefix:" || string(got[7:]) != string(want) {
				t.Errorf("got  %s\nwant %s", got[7:], want)
			}
		})
	}

	left := []Run{
		{ID: "s_2", Pagination: Pagination{NextCursor: json.RawMessage(`"c1"`)}},
		{ID: "ext_5", CreatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, run := range left {
		if got, ok := AppendRun([]byte("p"), &run, nil, false, "", ""); ok || string(got) != "p" {
			t.Errorf("%s: handled (%s), want it left to encoding/json", run.ID, got)
		}
	}
}

// TestAppendRunStrings: random strings of bytes JSON escapes or not come
// out as encoding/json writes them.
func TestAppendRunStrings(t *testing.T) {
	alphabet := []string{"a", "\"", "\\", "\x00", "\x1f", "\n", "<", "&", "é", "\xff", "\xe2\x80", "\u2028", "\u2029", "😀", "\x7f", " "}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		s := ""
		for range rng.IntN(12) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		run := Run{ID: s, URL: s, Error: &RunError{Message: s}}
		want := reference(t, &run, nil, true, s, s)
		got, _ := AppendRun(nil, &run, nil, true, s, s)
		if string(got) != string(want) {
			t.Fatalf("%q:\ngot  %s\nwant %s", s, got, want)
		}
	}
}

func BenchmarkAppendRun(b *testing.B) {
	now := time.Now()
	rec := json.RawMessage(`{"name":"Richard Branson","profile_url":"https://www.linkedin.com/in/rbranson"}`)
	run := Run{ID: "ext_01m85j268bmm1bd45zwrcyk7g4", Status: StatusCompleted, Platform: "pro_net", Service: "profile.info",
		URL: "https://www.linkedin.com/in/rbranson", ServedBy: "source_b/pro_net", CreditsUsed: 1725, CreatedAt: now, CompletedAt: now,
		Pagination: Pagination{Total: 1, Returned: 1}, Attempts: []Attempt{{Offer: "source_b/pro_net", Outcome: "ok", Status: 200, DurationMS: 22, Records: 1}}}
	records := []json.RawMessage{rec}
	buf := make([]byte, 0, 4096)
	b.Run("AppendRun", func(b *testing.B) {
		for b.Loop() {
			buf, _ = AppendRun(buf[:0], &run, records, true, "acct", "key_1")
		}
	})
	b.Run("AppendJSON", func(b *testing.B) {
		for b.Loop() {
			head := run
			head.Data = nil
			buf, _ = AppendJSON(buf[:0], scopedRun{Run: head, AccountID: "acct", KeyID: "key_1"}, records)
		}
	})
}

// TestAppendRunCoversEveryField: each member of Run set on its own to a
// value that encoding/json writes comes out as encoding/json writes it. A
// member added to Run (a boolean livemode, a count, …) and not to
// AppendRun fails here by name, whatever its tag.
func TestAppendRunCoversEveryField(t *testing.T) {
	at := time.Date(2026, 11, 22, 1, 2, 3, 0, time.UTC)
	sample := func(f reflect.StructField) (reflect.Value, bool) {
		switch f.Type {
		case reflect.TypeFor[time.Time]():
			return reflect.ValueOf(at), true
		case reflect.TypeFor[*time.Time]():
			return reflect.ValueOf(&at), true
		case reflect.TypeFor[Pagination]():
			return reflect.ValueOf(Pagination{Total: 3, Returned: 2}), true
		case reflect.TypeFor[*RunError]():
			return reflect.ValueOf(&RunError{Code: "c", Type: "t", Message: "m"}), true
		case reflect.TypeFor[[]Attempt]():
			return reflect.ValueOf([]Attempt{{Offer: "o", Outcome: "ok", Status: 200, DurationMS: 1, Handles: []string{"h"}, Message: "m", Records: 1}}), true
		case reflect.TypeFor[[]json.RawMessage](): // Data: the records, passed apart
			return reflect.Value{}, false
		}
		v := reflect.New(f.Type).Elem()
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("v")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int, reflect.Int32, reflect.Int64:
			v.SetInt(7)
		case reflect.Slice:
			if f.Type.Elem().Kind() != reflect.String {
				t.Fatalf("Run.%s: no sample of %s: add one to this test", f.Name, f.Type)
			}
			v.Set(reflect.ValueOf([]string{"v"}))
		default:
			t.Fatalf("Run.%s: no sample of %s: add one to this test", f.Name, f.Type)
		}
		return v, true
	}
	rt := reflect.TypeFor[Run]()
	for i := range rt.NumField() {
		f := rt.Field(i)
		if f.Tag.Get("json") == "-" {
			continue
		}
		v, ok := sample(f)
		if !ok {
			continue
		}
		var run Run
		reflect.ValueOf(&run).Elem().Field(i).Set(v)
		for _, scoped := range []bool{false, true} {
			want := reference(t, &run, nil, scoped, "acct", "key")
			got, handled := AppendRun(nil, &run, nil, scoped, "acct", "key")
			if !handled || string(got) != string(want) {
				t.Errorf("Run.%s set (scoped %v): AppendRun wrote\n  %s\nencoding/json\n  %s", f.Name, scoped, got, want)
			}
		}
	}
}
