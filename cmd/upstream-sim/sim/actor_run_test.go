package sim

import (
	"net/http"
	"testing"
	"time"

	"github.com/tidwall/gjson"
)

func TestActorRunItems(t *testing.T) {
	tests := []struct {
		name     string
		global   int
		fault    *Fault
		maxItems string
		want     int
	}{
		{name: "fixture as is", want: 2},
		{name: "maxItems caps", maxItems: "1", want: 1},
		{name: "global items repeat", global: 5, want: 5},
		{name: "fault items win", global: 5, fault: &Fault{Target: postsTarget, Items: 7}, want: 7},
		{name: "maxItems caps repeats", global: 50, maxItems: "10", want: 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, srv := start(t, Options{Items: tc.global})
			if tc.fault != nil {
				_ = s.SetFault(*tc.fault)
			}
			url := srv.URL + "/v2/acts/" + postsTarget + "/run-sync-get-dataset-items?timeout=10"
			if tc.maxItems != "" {
				url += "&maxItems=" + tc.maxItems
			}
			status, body := post(t, url, `{"username":"x"}`)
			if status != http.StatusCreated {
				t.Fatalf("status %d: %s", status, body)
			}
			items := gjson.Parse(body).Array()
			if len(items) != tc.want {
				t.Fatalf("%d items, want %d", len(items), tc.want)
			}
			// Repeats cycle through the fixture in order.
			for i, it := range items {
				if it.Get("urn").String() != items[i%2].Get("urn").String() {
					t.Errorf("item %d is not fixture item %d", i, i%2)
				}
			}
		})
	}
}

func TestLatencyAndActorTimeout(t *testing.T) {
	s, srv := start(t, Options{Latency: 20 * time.Millisecond})
	url := srv.URL + "/v2/acts/" + actorTarget + "/run-sync-get-dataset-items"
	t0 := time.Now()
	if st, _ := post(t, url+"?timeout=5", `{}`); st != 201 {
		t.Fatalf("status %d", st)
	}
	if d := time.Since(t0); d < 20*time.Millisecond {
		t.Errorf("answered in %v, want the 20ms latency", d)
	}
	_ = s.SetFault(Fault{Target: actorTarget, LatencyMS: 1500})
	t0 = time.Now()
	st, body := post(t, url+"?timeout=1", `{}`)
	if st != http.StatusRequestTimeout || gjson.Get(body, "error.type").String() != "run-timeout-exceeded" {
		t.Fatalf("got %d %s, want 408 run-timeout-exceeded", st, body)
	}
	if d := time.Since(t0); d < time.Second || d > 1400*time.Millisecond {
		t.Errorf("408 after %v, want after the 1s timeout", d)
	}
}
