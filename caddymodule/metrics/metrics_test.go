package metrics

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
)

// registry returns a pedantic registry (as Caddy hands a config) with the
// package's collectors registered.
func registry(t *testing.T) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := Register(reg); err != nil {
		t.Fatal(err)
	}
	return reg
}

// value returns the value of the series name{labels} (a counter, gauge, or
// a histogram's sample count), and whether it exists.
func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metric
				}
			}
			return sample(m), true
		}
	}
	return 0, false
}

func sample(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestRegisterTwice: a second Register on the same registry (two modules
// of one config) and a Register on a new registry (a reload) both work.
func TestRegisterTwice(t *testing.T) {
	reg := registry(t)
	if err := Register(reg); err != nil {
		t.Errorf("second registration: %v", err)
	}
	if err := Register(prometheus.NewPedanticRegistry()); err != nil {
		t.Errorf("registration on a new registry: %v", err)
	}
	if err := Register(nil); err != nil {
		t.Errorf("nil registry: %v", err)
	}
}

func TestAttemptEnded(t *testing.T) {
	reg := registry(t)
	labels := map[string]string{"offer": "t_obs/a", "source": "t_src", "outcome": "upstream_5xx"}
	var r Router
	r.AttemptEnded("t_obs/a", "t_src", "upstream_5xx", 20*time.Millisecond, false)
	r.AttemptEnded("t_obs/a", "t_src", "upstream_5xx", 30*time.Millisecond, false)
	r.AttemptEnded("t_obs/a", "t_src", "ok", time.Second, false)
	r.AttemptEnded("t_obs/a", "t_src", "circuit_open", 0, true)
	tests := []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"sdr_offer_attempts_total", labels, 2},
		{"sdr_offer_attempts_total", map[string]string{"offer": "t_obs/a", "outcome": "circuit_open"}, 1},
		{"sdr_offer_attempt_duration_seconds", map[string]string{"offer": "t_obs/a", "result": "error"}, 2},
		{"sdr_offer_attempt_duration_seconds", map[string]string{"offer": "t_obs/a", "result": "ok"}, 1},
	}
	for _, tt := range tests {
		if got, _ := value(t, reg, tt.name, tt.labels); got != tt.want {
			t.Errorf("%s%v = %v, want %v", tt.name, tt.labels, got, tt.want)
		}
	}
}

func TestCallsAndRefusals(t *testing.T) {
	reg := registry(t)
	Offers(map[string]string{"t_calls/a": "t_calls_src"})
	for _, name := range []string{"sdr_offer_records_refused_total", "sdr_offer_records_served_total", "sdr_offer_credits_charged_total"} {
		if v, ok := value(t, reg, name, map[string]string{"offer": "t_calls/a"}); !ok || v != 0 {
			t.Errorf("%s of a declared offer: %v (exists %v), want a zero series", name, v, ok)
		}
	}
	RecordsRefused("t_calls/a", 3)
	RecordsRefused("t_calls/a", 0)
	if v, _ := value(t, reg, "sdr_offer_records_refused_total", map[string]string{"offer": "t_calls/a"}); v != 3 {
		t.Errorf("refused %v, want 3", v)
	}
	Call("t/svc", "live", 200, "")
	Call("t/svc", "live", 402, "insufficient_credits")
	Call("t/svc", "live", 402, "insufficient_credits")
	Call("t/svc", "test", 502, "provider_error")
	for _, c := range []struct {
		mode, status, code string
		want               float64
	}{
		{"live", "200", "none", 1},
		{"live", "402", "insufficient_credits", 2},
		{"test", "502", "provider_error", 1},
		{"live", "502", "provider_error", 0}, // a test failure is no live one
	} {
		l := map[string]string{"service": "t/svc", "mode": c.mode, "status": c.status, "code": c.code}
		if v, _ := value(t, reg, "sdr_service_calls_total", l); v != c.want {
			t.Errorf("calls %v: %v, want %v", l, v, c.want)
		}
	}
	RegistryLoaded(time.Second, nil)
	RegistryLoaded(time.Second, errors.New("bad cue"))
	if v, _ := value(t, reg, "sdr_registry_loads_total", map[string]string{"result": "error"}); v < 1 {
		t.Errorf("failed loads %v, want at least 1", v)
	}
}

// TestStore: the decorator counts what Settle charged, times it, and
// pings the store beneath.
func TestStore(t *testing.T) {
	reg := registry(t)
	bs, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := InstrumentStore(bs, "t_badger")
	ctx := t.Context()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if _, err := s.CreateAccount(ctx, "acme", 1_000_000, now); err != nil {
		t.Fatal(err)
	}
	run := &runs.Run{ID: "ext_1", Status: "completed", AccountID: "acme", KeyID: "k1", CreatedAt: now, CompletedAt: now,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`), json.RawMessage(`{"a":2}`), json.RawMessage(`{"a":3}`)}}
	res, err := s.Settle(ctx, store.Settlement{Run: run, Price: 400_000, Offer: "t_store/a", Platform: "p", Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 2 {
		t.Fatalf("settled %d records, want 2 (the balance pays for two)", res.Records)
	}
	off := map[string]string{"offer": "t_store/a"}
	if v, _ := value(t, reg, "sdr_offer_records_served_total", off); v != 2 {
		t.Errorf("records served %v, want 2", v)
	}
	if v, _ := value(t, reg, "sdr_offer_credits_charged_total", off); v != 0.8 {
		t.Errorf("credits charged %v, want 0.8", v)
	}
	// A test run settles against its test balance; no offer served it.
	if _, err := s.CreateAccount(ctx, "acme~test", 1_000_000, now); err != nil {
		t.Fatal(err)
	}
	trun := &runs.Run{ID: "ext_2", Status: "completed", AccountID: "acme~test", KeyID: "k2", CreatedAt: now, CompletedAt: now,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	if res, err := s.Settle(ctx, store.Settlement{Run: trun, Price: 400_000, Offer: "t_store/a", Platform: "p", Now: now}); err != nil || res.Records != 1 {
		t.Fatalf("test settle: %+v %v", res, err)
	}
	if v, _ := value(t, reg, "sdr_offer_records_served_total", off); v != 2 {
		t.Errorf("records served after a test run %v, want still 2", v)
	}
	if v, _ := value(t, reg, "sdr_offer_credits_charged_total", off); v != 0.8 {
		t.Errorf("credits charged after a test run %v, want still 0.8", v)
	}
	if v, _ := value(t, reg, "sdr_store_settle_duration_seconds", map[string]string{"store": "t_badger", "result": "ok"}); v != 2 {
		t.Errorf("settles timed %v, want 2", v)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("ping: %v", err)
	}
	if _, err := s.ListAccounts(ctx); err != nil {
		t.Errorf("list accounts through the decorator: %v", err)
	}
	// Two calls hold money, one re-sizes its hold (failover), one releases:
	// one hold stays open; settling its run closes it.
	for _, h := range []store.Hold{
		{ID: "ext_2", AccountID: "acme", Price: 100, Records: 2, Now: now},
		{ID: "ext_3", AccountID: "acme", Price: 100, Records: 1, Now: now},
		{ID: "ext_2", AccountID: "acme", Price: 200, Records: 1, Now: now},
	} {
		if _, err := s.Reserve(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Release(ctx, "ext_3"); err != nil {
		t.Fatal(err)
	}
	open := func(want float64) {
		t.Helper()
		if v, _ := value(t, reg, "sdr_store_open_reservations", map[string]string{"store": "t_badger"}); v != want {
			t.Errorf("open reservations %v, want %v", v, want)
		}
	}
	open(1)
	if v, _ := value(t, reg, "sdr_store_reserve_duration_seconds", map[string]string{"store": "t_badger", "result": "ok"}); v != 3 {
		t.Errorf("reservations timed %v, want 3", v)
	}
	run2 := &runs.Run{ID: "ext_2", Status: "completed", AccountID: "acme", KeyID: "k1", CreatedAt: now, CompletedAt: now,
		Data: []json.RawMessage{json.RawMessage(`{"a":1}`)}}
	if _, err := s.Settle(ctx, store.Settlement{Run: run2, Price: 200, Offer: "t_store/a", Platform: "p", Now: now}); err != nil {
		t.Fatal(err)
	}
	open(0)
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(ctx); err == nil {
		t.Error("ping of a closed store succeeded")
	}
}

// TestUpstreamClient: the bytes of upstream bodies are counted per source,
// and a source keeps one client.
func TestUpstreamClient(t *testing.T) {
	reg := registry(t)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 1000))
	}))
	defer srv.Close()
	c := UpstreamClient("t_up")
	if UpstreamClient("t_up") != c {
		t.Error("a second client for the same source")
	}
	for range 3 {
		resp, err := c.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	if v, _ := value(t, reg, "sdr_upstream_bytes_read_total", map[string]string{"source": "t_up"}); v != 3000 {
		t.Errorf("bytes read %v, want 3000", v)
	}
}

// fixedStates is a StatusSource of fixed states.
type fixedStates struct{ name string }

func (*fixedStates) OfferStates() []OfferState {
	return []OfferState{{Offer: "t_st/a", Source: "t_st", State: BreakerOpen}}
}

func (*fixedStates) SourceStatuses() []SourceState {
	return []SourceState{{Source: "t_st", Status: "down"}}
}

func TestStates(t *testing.T) {
	reg := registry(t)
	src := &fixedStates{name: "old"}
	PublishStatus(src)
	if v, _ := value(t, reg, "sdr_offer_breaker_state", map[string]string{"offer": "t_st/a"}); v != BreakerOpen {
		t.Errorf("breaker state %v, want %d", v, BreakerOpen)
	}
	for status, want := range map[string]float64{"down": 1, "active": 0, "degraded": 0, "coming_soon": 0} {
		if v, ok := value(t, reg, "sdr_source_status", map[string]string{"source": "t_st", "status": status}); !ok || v != want {
			t.Errorf("source status %s = %v (exists %v), want %v", status, v, ok, want)
		}
	}
	// A newer app is published before the old one stops: the old one's
	// withdrawal must not remove it.
	newer := &fixedStates{name: "new"}
	PublishStatus(newer)
	WithdrawStatus(src)
	if _, ok := value(t, reg, "sdr_offer_breaker_state", nil); !ok {
		t.Error("an old app's withdrawal removed the newer app")
	}
	WithdrawStatus(newer)
	if _, ok := value(t, reg, "sdr_offer_breaker_state", nil); ok {
		t.Error("states reported with no app published")
	}
}
