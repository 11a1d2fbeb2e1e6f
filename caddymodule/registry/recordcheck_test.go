package registry

import (
	"context"
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
)

// TestCheckRecord holds records to pro_net/company.info's declared shape,
// one way to break it per case, and checks the compiled check agrees with
// the CUE definition on each.
func TestCheckRecord(t *testing.T) {
	reg := declared(t)
	s, ok := reg.Service("pro_net", "company.info")
	if !ok {
		t.Fatal("pro_net/company.info is not declared")
	}
	cases := []struct {
		name, rec, field, reason string // reason "" means valid
	}{
		{"empty record", `{}`, "", ""},
		{"common and own fields", `{"name":"Acme","source":"pro_net","extracted_at":"2026-01-02T03:04:05.000Z","follower_count":12,"locations":["a","b"]}`, "", ""},
		{"nested objects and nullable", `{"funding":{"rounds":2,"last_round_raised":null,"last_round_date":"2024-01-02T00:00:00+02:00"},"employees":[{"name":"x","title":null}]}`, "", ""},
		{"escaped strings and spacing", "{ \"name\" : \"A\\\"cme\\u00e9\" , \"about\":\"line\\nbreak\" }", "", ""},
		{"open array of anything", `{"investors":[1,"two",{"three":3},[null]]}`, "", ""},
		{"undeclared field", `{"name":"Acme","followers":12}`, "followers", "undeclared field"},
		{"count as a string", `{"follower_count":"12"}`, "follower_count", "want integer, got a string"},
		{"integer written as 12.0", `{"follower_count":12.0}`, "follower_count", "want integer, got the number 12.0"},
		{"count as a fraction", `{"follower_count":1.5}`, "follower_count", "want integer, got the number 1.5"},
		{"date not ISO 8601", `{"extracted_at":"02/01/2026"}`, "extracted_at", "does not match"},
		{"platform not one of the eleven", `{"source":"myspace"}`, "source", "is not one of the declared values"},
		{"null where not nullable", `{"name":null}`, "name", "want string, got null"},
		{"nested undeclared field", `{"funding":{"rounds":1,"valuation":"1B"}}`, "funding.valuation", "undeclared field"},
		{"array item off its shape", `{"employees":[{"name":"a"},{"name":"b","age":3}]}`, "employees[1].age", "undeclared field"},
		{"array of strings holding a number", `{"locations":["a",2]}`, "locations[1]", "want string, got the number 2"},
		{"nullable field with a number", `{"employees":[{"title":3}]}`, "employees[0].title", "want string"},
		{"record not an object", `["a"]`, "", "want object, got an array"},
		{"malformed bytes", `{"name":"Acme"`, "", "malformed JSON"},
		{"trailing bytes", `{} {}`, "", "trailing bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := s.CheckRecord([]byte(tc.rec))
			if tc.reason == "" {
				if v != nil {
					t.Fatalf("valid record refused: %v", v)
				}
			} else {
				if v == nil {
					t.Fatalf("record accepted, want %s: %s", tc.reason, tc.field)
				}
				if v.Field != tc.field || !strings.Contains(v.Reason, tc.reason) {
					t.Fatalf("violation %q: %q, want %q: %q", v.Field, v.Reason, tc.field, tc.reason)
				}
			}
			if tc.reason == "malformed JSON" || tc.reason == "trailing bytes" {
				return
			}
			if cueErr := reg.ValidateRecord(s, []byte(tc.rec)); (cueErr == nil) != (v == nil) {
				t.Fatalf("CUE says %v, CheckRecord says %v", cueErr, v)
			}
		})
	}
}

// TestEveryServiceHasACheck: every declared service gets a compiled check
// at load, so the router never serves an unchecked record.
func TestEveryServiceHasACheck(t *testing.T) {
	for _, s := range declared(t).Services {
		if s.check == nil {
			t.Errorf("%s: no compiled record check", s.Key)
		}
		if v := s.CheckRecord([]byte(`{"undeclared_field_x":1}`)); v == nil || v.Field != "undeclared_field_x" {
			t.Errorf("%s: an undeclared field passes the check: %v", s.Key, v)
		}
	}
}

func BenchmarkCheckRecord(b *testing.B) {
	reg, err := LoadFS(svcFS)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("fixture", func(b *testing.B) { benchCheckFixture(b, reg, "pro_net", "profile.posts") })
	b.Run("company", func(b *testing.B) {
		s, _ := reg.Service("pro_net", "company.info")
		rec := []byte(`{"name":"Acme","profile_url":"https://example.com/company/acme","source":"pro_net","extracted_at":"2026-01-02T03:04:05.000Z","about":"We make things.","follower_count":1200,"employees_on_platform":55,"locations":["Paris","Berlin"],"funding":{"rounds":2,"last_round_raised":null},"employees":[{"name":"a","title":"CEO","profile_url":"https://x/a"},{"name":"b","title":null}]}`)
		b.SetBytes(int64(len(rec)))
		for b.Loop() {
			if v := s.CheckRecord(rec); v != nil {
				b.Fatal(v)
			}
		}
	})
}

// benchCheckFixture checks the records the service's first offer makes of
// its example upstream payload: real field lengths, as make bench's load.
func benchCheckFixture(b *testing.B, reg *Registry, platform, service string) {
	s, _ := reg.Service(platform, service)
	o := s.Offers[0]
	body, err := fs.ReadFile(svcFS, "examples/"+o.Source.ID+"/"+platform+"__"+service+".json")
	if err != nil {
		b.Fatal(err)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body, &items); err != nil {
		b.Fatal(err)
	}
	var recs [][]byte
	size := 0
	for _, item := range items {
		rec, ok, err := o.Normalize.NormalizeItem(context.Background(), item, firstInput(s), fixtureNow)
		if err != nil || !ok {
			continue
		}
		recs = append(recs, rec)
		size += len(rec)
	}
	if len(recs) == 0 {
		b.Fatal("no record")
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		for _, rec := range recs {
			if v := s.CheckRecord(rec); v != nil {
				b.Fatal(v)
			}
		}
	}
}

// TestScannerStr reads strings whose escapes and ends fall before, on and
// after the 16 bytes str reads one by one, against encoding/json.
func TestScannerStr(t *testing.T) {
	for _, body := range []string{``, `a`, `0123456789abcde`, `0123456789abcdef`, `0123456789abcdefg`,
		`\"`, `0123456789abcde\"`, `0123456789abcdef\"x`, `0123456789abcdef0123\\`, `long text without any escape at all, past sixteen`,
		`a\u00e9b` + strings.Repeat("x", 40), strings.Repeat("y", 40) + `\n`, `\\\\\"` + strings.Repeat("z", 20),
		// past the 16 bytes: escaped quotes before the end, an escaped
		// backslash just before it, escapes far apart
		`0123456789abcdef\"\"x\\`, `0123456789abcdef` + strings.Repeat(`a\nb\"c`, 20), strings.Repeat("q", 30) + `\\`} {
		in := `"` + body + `",1`
		var want string
		if err := json.Unmarshal([]byte(`"`+body+`"`), &want); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		sc := scanner{b: []byte(in)}
		raw, esc, ok := sc.str()
		if !ok || string(raw) != body || esc != strings.Contains(body, `\`) || sc.i != len(in)-2 {
			t.Errorf("str(%s) = %q esc=%v ok=%v end %d", in, raw, esc, ok, sc.i)
		}
		if got := text(raw, esc); got != want {
			t.Errorf("text(%s) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{`"abc`, `"0123456789abcdef0123`, `"0123456789abcdef\"`, `"0123456789abcdef\\\"`, `"0123456789abcdef\`} {
		sc := scanner{b: []byte(bad)}
		if _, _, ok := sc.str(); ok {
			t.Errorf("str(%s) ok on an unterminated string", bad)
		}
	}
}
