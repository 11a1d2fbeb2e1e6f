package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"socialrouter/caddymodule/store"
	"socialrouter/caddymodule/store/badger"
	"socialrouter/caddymodule/webhooks"
)

// The webhooks phase: deliveries per second of the webhook worker to a
// local receiver, in process. A round queues webhookRoundDeliveries
// deliveries (unmeasured), starts the worker and times it until the
// receiver has answered every one and the store holds them all as
// succeeded: each delivery is a claim (shared by a batch), a signed POST
// and a recorded outcome, with badger's fsync on every commit (PostgreSQL
// when SDR_TEST_POSTGRES_URL is set). The reference, interleaved: the
// same number of POSTs of the same body to the same receiver by as many
// goroutines as the worker's concurrency, with no store and no signature:
// the ceiling the HTTP leg sets on this machine.
const webhookRoundDeliveries = 1000

// webhookPayload is the body of one delivery: a small run document.
var webhookPayload = []byte(`{"id":"ext_bench","status":"completed","platform":"pro_net","service":"profile.info","credits_used":0.001725,"pagination":{"total":1,"returned":1}}`)

type webhookFigures struct {
	store          string
	worker, direct []float64 // deliveries/s per round
	cpuUS          float64   // this process's CPU per delivery (worker + receiver), over the worker rounds
	cpuOK          bool
}

// benchWebhooks runs the rounds on one store.
func benchWebhooks(ctx context.Context, name string, s store.Store, rounds int) (webhookFigures, error) {
	f := webhookFigures{store: name}
	var received atomic.Int64
	rcv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received.Add(1)
		w.WriteHeader(http.StatusNoContent)
	}))
	defer rcv.Close()
	if _, err := s.CreateAccount(ctx, "bench_hooks", 0, time.Now()); err != nil {
		return f, err
	}
	svc := webhooks.New(webhooks.Config{Store: s, AllowPrivate: true, PollInterval: 5 * time.Millisecond})
	ep, err := svc.Create(ctx, "bench_hooks", rcv.URL+"/hooks", webhooks.Events)
	if err != nil {
		return f, err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: webhooks.DefaultConcurrency}}
	var cpu time.Duration
	var delivered int64
	f.cpuOK = true
	for round := range rounds {
		// The worker: queue (unmeasured), then deliver.
		received.Store(0)
		ds := make([]store.WebhookDelivery, webhookRoundDeliveries)
		now := time.Now().UTC()
		for i := range ds {
			ds[i] = store.WebhookDelivery{ID: fmt.Sprintf("msg_bench_%d_%d", round, i), EndpointID: ep.ID, AccountID: "bench_hooks",
				Event: webhooks.EventRunCompleted, Payload: webhookPayload, Status: store.DeliveryPending, NextAt: now, CreatedAt: now}
		}
		for i := 0; i < len(ds); i += 100 {
			if err := s.EnqueueDeliveries(ctx, ds[i:i+100]); err != nil {
				return f, err
			}
		}
		u0, s0, _, ok0 := selfUsage()
		start := time.Now()
		svc.Start()
		deadline := start.Add(60 * time.Second)
		for received.Load() < webhookRoundDeliveries && time.Now().Before(deadline) && ctx.Err() == nil {
			time.Sleep(time.Millisecond)
		}
		svc.Stop() // waits for the outcomes in flight to be recorded
		elapsed := time.Since(start)
		u1, s1, _, ok1 := selfUsage()
		if n := received.Load(); n < webhookRoundDeliveries {
			return f, fmt.Errorf("round %d: %d of %d deliveries in 60 s", round, n, webhookRoundDeliveries)
		}
		f.worker = append(f.worker, webhookRoundDeliveries/elapsed.Seconds())
		f.cpuOK = f.cpuOK && ok0 && ok1
		cpu += u1 - u0 + s1 - s0
		delivered += webhookRoundDeliveries
		if got, err := s.ListDeliveries(ctx, "bench_hooks", ep.ID, 1); err != nil || len(got) == 0 || got[0].Status != store.DeliverySucceeded {
			return f, fmt.Errorf("round %d: the newest delivery is not recorded as succeeded (%v)", round, err)
		}

		// The reference: plain POSTs, same concurrency.
		received.Store(0)
		var next atomic.Int64
		var wg sync.WaitGroup
		var failed atomic.Int64
		start = time.Now()
		for range webhooks.DefaultConcurrency {
			wg.Go(func() {
				for next.Add(1) <= webhookRoundDeliveries && ctx.Err() == nil {
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, rcv.URL+"/hooks", bytes.NewReader(webhookPayload))
					req.Header.Set("Content-Type", "application/json")
					resp, err := client.Do(req)
					if err != nil {
						failed.Add(1)
						continue
					}
					resp.Body.Close()
				}
			})
		}
		wg.Wait()
		if n := failed.Load(); n > 0 {
			return f, fmt.Errorf("reference round %d: %d POSTs failed", round, n)
		}
		f.direct = append(f.direct, webhookRoundDeliveries/time.Since(start).Seconds())
	}
	if delivered > 0 {
		f.cpuUS = float64(cpu.Microseconds()) / float64(delivered)
	}
	return f, nil
}

// webhooksPhase measures badger, and PostgreSQL when it is set, and
// prints section 8.
func (rep *report) webhooks(ctx context.Context, tmp string, cfg *config) error {
	dir, err := os.MkdirTemp(tmp, "webhooks-badger-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bs, err := badger.Open(dir, badger.Options{})
	if err != nil {
		return err
	}
	logf("webhooks: badger")
	figs := []webhookFigures{}
	f, err := benchWebhooks(ctx, "badger", bs, cfg.rounds)
	bs.Close()
	if err != nil {
		return err
	}
	figs = append(figs, f)
	pgNote := "SDR_TEST_POSTGRES_URL is not set: PostgreSQL not measured"
	if url := os.Getenv("SDR_TEST_POSTGRES_URL"); url != "" {
		logf("webhooks: postgres")
		db, ps, err := openPGScratch(ctx, url, "webhooks")
		if err != nil {
			return err
		}
		defer db.close()
		f, err := benchWebhooks(ctx, "postgres", ps, cfg.rounds)
		ps.Close()
		if err != nil {
			return fmt.Errorf("postgres: %v", err)
		}
		figs = append(figs, f)
		pgNote = "PostgreSQL: SDR_TEST_POSTGRES_URL on this machine, fresh schema dropped afterwards" + db.vacuumNote()
	}
	w := rep.section("12")
	fmt.Fprintf(w, "8. Webhooks: deliveries/s of the worker (claim, HMAC signature, POST, recorded outcome; %d at once, fsync on every commit)\n", webhooks.DefaultConcurrency)
	fmt.Fprintf(w, "   to a receiver on 127.0.0.1 answering 204, %d deliveries a round, vs plain POSTs of the same body, same concurrency, no store\n", webhookRoundDeliveries)
	fmt.Fprintf(w, "    %-9s %12s  %12s  %9s   %s\n", "store", "worker/s", "plain POST/s", "ratio", "rounds worker, plain; CPU of this process per delivery (worker and receiver)")
	for _, f := range figs {
		wk, dr := median(f.worker), median(f.direct)
		cpu := "n/a"
		if f.cpuOK {
			cpu = fmt.Sprintf("%.0f µs", f.cpuUS)
		}
		fmt.Fprintf(w, "    %-9s %12.0f  %12.0f  %8.2f×   %s, %s; %s\n", f.store, wk, dr, wk/dr, fmtRounds(f.worker), fmtRounds(f.direct), cpu)
		rep.info(fmt.Sprintf("webhook deliveries %s", f.store), fmt.Sprintf("%.0f/s", wk), fmt.Sprintf("plain POSTs %.0f/s (%.2f ×)", dr, wk/dr))
	}
	fmt.Fprintf(w, "    %s\n\n", pgNote)
	return nil
}
