package router

import (
	"context"
	"strings"
	"testing"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/sources"
)

// TestDeclaredGoneRowsAreAnAnswer: an actor's "not found" rows (no
// error_code) that the offer's error_rows declares gone give the same
// answer as dead_page rows: the attempt completes, no record, nothing to
// charge, its message counting the inputs (not the rows); undeclared, or
// declared rate_limited, the same rows are error rows and the call fails
// over.
func TestDeclaredGoneRowsAreAnAnswer(t *testing.T) {
	rows := func(context.Context, sources.Call) (*sources.Result, error) {
		item := rawf(`{"error": "Profile not found", "errorDescription": "The profile %s does not exist."}`, in1)
		return &sources.Result{Status: 200, ErrorItems: 3, Items: []jsonRaw{item, item, item}}, nil
	}
	for _, tc := range []struct {
		name, declare string
		gone          bool
	}{
		{"declared gone", `{when: "(.error | strings | test(\"not found\"; \"i\"))", means: "gone"}`, true},
		{"declared private", `{when: ".errorDescription != null", means: "private"}`, true},
		{"declared rate-limited", `{when: ".error != null", means: "rate_limited"}`, false},
		{"a predicate that matches other rows", `{when: ".error == \"Private account\"", means: "private"}`, false},
		{"undeclared", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := testCUE
			if tc.declare != "" {
				src = strings.Replace(testCUE, "implements: [\"deep\"]\n", "implements: [\"deep\"]\n\t\terror_rows: ["+tc.declare+"]\n", 1)
			}
			reg, err := registry.LoadFiles(map[string][]byte{"services/x.cue": []byte(src)})
			if err != nil {
				t.Fatal(err)
			}
			svc := service(t, reg, "pro_net/profile.info")
			r := setup(t, Config{}, &fake{do: rows}, &fake{})
			res, err := r.Run(context.Background(), Request{Service: svc, Inputs: []string{in1}})
			if err != nil {
				t.Fatal(err)
			}
			first := res.Attempts[0]
			if !tc.gone {
				if first.Outcome != OutcomeErrorRecords || res.Offer.ID == headID {
					t.Fatalf("attempts %+v: want error_records and a failover", res.Attempts)
				}
				return
			}
			if res.Offer.ID != headID || len(res.Records) != 0 || first.Outcome != OutcomeOK || len(res.Attempts) != 1 {
				t.Fatalf("served by %s with %d records, attempts %+v; want the head offer, no record", res.Offer.ID, len(res.Records), res.Attempts)
			}
			if first.Message != "1 input names a page that is gone" {
				t.Errorf("message %q", first.Message)
			}
		})
	}
}
