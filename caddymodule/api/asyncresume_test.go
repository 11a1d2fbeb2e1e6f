package api

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
	"socialrouter/cmd/upstream-sim/sim"
)

const postsActor = "trudax~reddit-scraper-lite" // source_a/actor_6

// TestAsyncRunnerResumesByHandle: a run whose worker stopped while its
// upstream job ran (the job left running, its handle recorded) is taken
// over by another worker that waits for that same job: the upstream
// ledger shows one job, and the run completes charged as usual; or it is
// cancelled meanwhile, and the cancel aborts the job by its handle.
func TestAsyncRunnerResumesByHandle(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cancel bool
		event  string
		status string // of the upstream job at the end
	}{
		{name: "taken over and completed", event: "acme run.completed", status: "succeeded"},
		{name: "cancelled with no worker", cancel: true, event: "acme run.cancelled", status: "aborted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := &notes{events: map[string]string{}, docs: map[string][]byte{}}
			a := newTestAPI(t, 10*credits.PerCredit)
			up := sim.New(sim.Options{TimeScale: 0.01})
			if err := up.SetFault(sim.Fault{Target: postsActor, DurationS: 150}); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(up)
			t.Cleanup(srv.Close)
			rtr := router.New(router.Config{AttemptTimeout: time.Minute, SoftTimeout: time.Minute}, a.simClients(t, srv.URL), router.NewBreakers(), zap.NewNop())
			a.Router, a.AsyncRouter = rtr, rtr
			worker := func(owner string) *async.Worker {
				w := async.New(async.Config{Store: a.store, Owner: owner, Lease: 300 * time.Millisecond, Poll: 20 * time.Millisecond})
				runner := a.AsyncRunner()
				w.SetRunner(runner, runner, n)
				a.Async = w
				w.Start()
				return w
			}

			w1 := worker("node1")
			id := a.submit(t, `{"url": "https://www.reddit.com/r/golang", "provider": "source_a/actor_6", "limit": 2}`)
			waitFor(t, "the upstream job recorded", func() bool {
				r, err := a.store.GetAsyncRun(t.Context(), "acme", id)
				from, ok := resumePoint(r)
				return err == nil && ok && from.Offer == "source_a/actor_6" && len(from.Started) == 1
			})
			w1.Stop() // the job is left running for the next worker
			if jobs := up.Ledger(); len(jobs) != 1 || !jobs[0].Running {
				t.Fatalf("ledger after the worker stopped: %+v, want its job still running", jobs)
			}
			w2 := worker("node2")
			t.Cleanup(w2.Stop)
			if tc.cancel {
				res, _ := a.do(t, "POST", "/v1/extractions/"+id+"/cancel", "", true)
				res.Body.Close()
			}
			if e := waitEvent(t, n, id); e != tc.event {
				t.Fatalf("event %q, want %q", e, tc.event)
			}
			jobs := up.Ledger()
			if len(jobs) != 1 || jobs[0].Status != tc.status {
				t.Errorf("ledger %+v, want one job, %s", jobs, tc.status)
			}
			run, _ := a.store.GetRun(t.Context(), "acme", id)
			acct, _ := a.store.GetAccount(t.Context(), "acme")
			var doc struct{ Attempts []struct{ Handles []string } }
			_ = json.Unmarshal(n.docs[id], &doc)
			if run.CreditsUsed != credits.Micros(len(run.Data))*2760 || acct.Balance != 10*credits.PerCredit-run.CreditsUsed {
				t.Errorf("run %s: %d records, %v charged, balance %v", run.Status, len(run.Data), run.CreditsUsed, acct.Balance)
			}
			if !tc.cancel && (len(run.Data) != 2 || len(doc.Attempts) != 1 || len(doc.Attempts[0].Handles) != 1) {
				t.Errorf("completed run %d records, attempts %+v; want 2 records and the one job's handle", len(run.Data), doc.Attempts)
			}
			waitFor(t, "the settled run deleted", func() bool {
				_, err := a.store.GetAsyncRun(t.Context(), "acme", id)
				return errors.Is(err, store.ErrNotFound)
			})
		})
	}
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestResumePointReadsStoredRecord: a resume record and running document
// as stored before issue 39's router layout (fixtures of that format)
// still give the attempt to resume, its work and the attempts before it,
// so runs left by an older gateway resume after an upgrade.
func TestResumePointReadsStoredRecord(t *testing.T) {
	const (
		resume = `{"offer":"source_a/actor_6","records":2,"started":[{"offer":"source_a/actor_6","batch":0,"inputs":["https://www.reddit.com/r/golang"],"limit":2,"handle":"run:r1/dataset:d1"}]}`
		doc    = `{"id":"ext_1","status":"running","url":"","credits_used":0,"data":[],"pagination":{},"attempts":[` +
			`{"offer":"source_b/forum","outcome":"failed_over","duration_ms":0},` +
			`{"offer":"source_a/actor_6","outcome":"running","duration_ms":0,"handles":["run:r1/dataset:d1"]}]}`
	)
	tests := []struct {
		name   string
		resume string
		ok     bool
		want   router.Resumed
	}{
		{"work recorded", resume, true, router.Resumed{Offer: "source_a/actor_6", Records: 2,
			Before: []runs.Attempt{{Offer: "source_b/forum", Outcome: outcomeFailedOver}},
			Started: []router.Started{{Offer: "source_a/actor_6", Batch: 0, Inputs: []string{"https://www.reddit.com/r/golang"},
				Limit: 2, Handle: "run:r1/dataset:d1"}}}},
		{"no work started yet", `{"offer":"source_a/actor_6","records":2}`, false, router.Resumed{}},
		{"no record", ``, false, router.Resumed{}},
	}
	for _, tt := range tests {
		got, ok := resumePoint(store.AsyncRun{Resume: []byte(tt.resume), Doc: []byte(doc)})
		if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: resumePoint = %+v, %v; want %+v, %v", tt.name, got, ok, tt.want, tt.ok)
		}
	}
}
