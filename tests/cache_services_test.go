package tests

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/registry"
)

// TestCacheEveryCacheableService holds every service the registry declares
// cacheable (read from services/, never listed here) to the cache's
// contract: a second account asking for the same input within its max-age
// is served without an upstream job, its cached_records saying so, with
// Age, billed at the offer's cached price to the micro-credit; and where
// every offer is attributable, a call of several inputs (of every accepted
// form) asks the upstream for the inputs not cached only.
func TestCacheEveryCacheableService(t *testing.T) {
	reg, err := registry.Load(filepath.Join(repoRoot, "services"))
	if err != nil {
		t.Fatal(err)
	}
	var svcs []*registry.Service
	for _, svc := range reg.Services {
		if svc.Cache != nil && svc.Callable() {
			svcs = append(svcs, svc)
		}
	}
	if len(svcs) == 0 {
		t.Fatal("services/ declares no cacheable service")
	}
	s := startSim(t)
	g := startGateway(t, defaultConfig(t, s))
	keyA, keyB := g.account("cache_every_a", 10), g.account("cache_every_b", 10)
	variants := 10 // the next variant's number

	for _, svc := range svcs {
		path := "/v1/extract/" + svc.Key
		t.Run(svc.Key+"/two accounts", func(t *testing.T) {
			body := map[string]any{svc.SingleInputField(): svc.Accepts[0].Example}
			s.clearLedger(t)
			first := extractCC(t, g, path, keyA, "max-age=600", body)
			if first.Status != 200 {
				t.Fatalf("first call: %d %s", first.Status, first.Body)
			}
			n := len(first.JSON["data"].([]any))
			o := servedOffer(t, svc, first)
			if n == 0 || len(jobsOf(t, s, o.Target)) != 1 || cachedRecords(first) != 0 {
				t.Fatalf("first call: %d records, %d jobs of %s, cached_records %d; want live work", n, len(jobsOf(t, s, o.Target)), o.Target, cachedRecords(first))
			}

			before := balanceMicros(t, g, keyB)
			second := extractCC(t, g, path, keyB, "max-age=600", body)
			mustOK(t, second, n)
			if jobs := len(jobsOf(t, s, o.Target)); jobs != 1 {
				t.Errorf("%d upstream jobs after the second account's call, want still 1", jobs)
			}
			want := credits.Micros(n) * o.CachedPrice
			if got := micros(t, second.Body, "credits_used"); got != want || cachedRecords(second) != n {
				t.Errorf("cached call: credits_used %s, cached_records %d; want %s, %d", got, cachedRecords(second), want, n)
			}
			if age, err := strconv.Atoi(second.Header.Get("Age")); err != nil || age < 0 || age > 60 {
				t.Errorf("Age %q, want the seconds since the first call", second.Header.Get("Age"))
			}
			if paid := before - balanceMicros(t, g, keyB); paid != want {
				t.Errorf("account b paid %s, want %s", paid, want)
			}
		})

		// Per input: unpinned when every offer is attributable, and pinned
		// to each attributable offer that takes several inputs a call.
		chains := []*registry.Offer{}
		if allAttributable(svc) {
			chains = append(chains, nil)
		}
		for _, o := range svc.LiveOffers() {
			if o.Attributable() && o.MaxInputs != 1 {
				chains = append(chains, o)
			}
		}
		for _, pin := range chains {
			name := "any offer"
			if pin != nil {
				name = "pinned to " + pin.ID
			}
			t.Run(svc.Key+"/missing inputs only/"+name, func(t *testing.T) {
				cacheMissingOnly(t, s, g, svc, pin, keyA, keyB, &variants)
			})
		}
	}
}

// cacheMissingOnly: of inputs of every accepted form, every other one
// cached by account a, a call of account b asks the upstream for the
// others only, and pays each record at its price.
func cacheMissingOnly(t *testing.T, s *sim, g *gateway, svc *registry.Service, pin *registry.Offer, keyA, keyB string, n *int) {
	var all, cached, missing []string
	for _, a := range svc.Accepts {
		for range 3 {
			in := variant(t, svc, a.Example, n)
			if all = append(all, in); len(all)%2 == 1 {
				cached = append(cached, in)
			} else {
				missing = append(missing, in)
			}
		}
	}
	path := "/v1/extract/" + svc.Key
	body := func(inputs []string) map[string]any {
		b := map[string]any{svc.InputField(): inputs}
		if pin != nil {
			b["provider"] = pin.ID
		}
		return b
	}
	mustOK(t, extractCC(t, g, path, keyA, "max-age=600", body(cached)), len(cached))
	s.reset(t)

	before := balanceMicros(t, g, keyB)
	r := extractCC(t, g, path, keyB, "max-age=600", body(all))
	mustOK(t, r, len(all))
	calls := s.calls(t)
	for _, in := range all {
		asked := slices.ContainsFunc(calls, func(c simCall) bool { return strings.Contains(string(c.Body), in) })
		if want := slices.Contains(missing, in); asked != want {
			t.Errorf("input %s: asked upstream %v, want %v", in, asked, want)
		}
	}
	o := servedOffer(t, svc, r)
	want := credits.Micros(len(cached))*o.CachedPrice + credits.Micros(len(missing))*o.Price
	if got := micros(t, r.Body, "credits_used"); got != want || cachedRecords(r) != len(cached) {
		t.Errorf("credits_used %s, cached_records %d; want %s, %d: %s", got, cachedRecords(r), want, len(cached), r.Body)
	}
	if paid := before - balanceMicros(t, g, keyB); paid != want {
		t.Errorf("account b paid %s, want %s", paid, want)
	}
}

// servedOffer is the offer a run names in served_by.
func servedOffer(t *testing.T, svc *registry.Service, r *response) *registry.Offer {
	t.Helper()
	id, _ := r.JSON["served_by"].(string)
	o, ok := svc.Offer(id)
	if !ok {
		t.Fatalf("served_by %q is no offer of %s: %s", id, svc.Key, r.Body)
	}
	return o
}

// allAttributable: every live offer's records name their input.
func allAttributable(svc *registry.Service) bool {
	for _, o := range svc.LiveOffers() {
		if !o.Attributable() {
			return false
		}
	}
	return true
}

// variant is example with the last two characters of its last
// alphanumeric run replaced by the next two-digit number *n: an input the
// service accepts, other than the example, that neither contains nor is
// contained in another variant.
func variant(t *testing.T, svc *registry.Service, example string, n *int) string {
	t.Helper()
	r := []rune(example)
	i := len(r) - 1
	for i >= 0 && !unicode.IsLetter(r[i]) && !unicode.IsDigit(r[i]) {
		i--
	}
	if i < 1 || !unicode.IsLetter(r[i-1]) && !unicode.IsDigit(r[i-1]) {
		t.Fatalf("%s: example %q ends in no run of two letters or digits", svc.Key, example)
	}
	for {
		*n++
		d := fmt.Sprintf("%02d", *n%100)
		r[i-1], r[i] = rune(d[0]), rune(d[1])
		if in := string(r); in != example {
			if m, ok := svc.MatchInput(in); !ok || m != in {
				t.Fatalf("%s: the variant %q of %q is not accepted as it is", svc.Key, in, example)
			}
			return in
		}
	}
}
