package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"socialrouter/caddymodule/credits"
)

// TestCreditCounterExact: the charged credits read as the exact sum of the
// charges (a float counter of the same adds drifts), a label touched with
// nothing reads 0, a negative add changes nothing, and a pedantic registry
// accepts the collector.
func TestCreditCounterExact(t *testing.T) {
	c := newCreditCounter("offer", "credits_charged_total", "Credits charged.", "offer")
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	// 0.1 + 0.2 credits: as float64 adds, as a Prometheus counter's, the
	// sum reads 0.30000000000000004.
	drift := 0.0
	for _, m := range []credits.Micros{100_000, 200_000} {
		c.add("source_a/actor_1", m)
		drift += m.Credits()
	}
	if drift == 0.3 {
		t.Fatal("the float sum did not drift: the test no longer tells the counters apart")
	}
	c.add("source_b/pro_net", 0)
	c.add("source_b/pro_net", -5)
	tests := []struct {
		offer string
		want  float64
	}{{"source_a/actor_1", 0.3}, {"source_b/pro_net", 0}}
	for _, tt := range tests {
		if got, ok := value(t, reg, "sdr_offer_credits_charged_total", map[string]string{"offer": tt.offer}); !ok || got != tt.want {
			t.Errorf("%s: %v (%v), want exactly %v", tt.offer, got, ok, tt.want)
		}
	}
	c.add("source_a/actor_1", 3*credits.PerCredit)
	if got, _ := value(t, reg, "sdr_offer_credits_charged_total", map[string]string{"offer": "source_a/actor_1"}); got != 3.3 {
		t.Errorf("after 3 more credits: %v, want 3.3", got)
	}
}
