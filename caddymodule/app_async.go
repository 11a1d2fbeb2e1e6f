package caddymodule

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"go.uber.org/zap"

	"socialrouter/caddymodule/api"
	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/metrics"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/sources"
)

// Async is the configuration of asynchronous runs (Prefer: respond-async).
type Async struct {
	// AsyncDeadline ends an async run that has not finished; it is also
	// the attempt deadline of its offers. Default: 1h.
	AsyncDeadline caddy.Duration `json:"async_deadline,omitempty"`
	// AsyncLease is how long a node holds an async run without renewing
	// it: after it, another node (or this one restarted) takes the run
	// over. Default: 30s.
	AsyncLease caddy.Duration `json:"async_lease,omitempty"`
	// AsyncWorkers bounds the async runs this node runs at once; more
	// wait in the store for a claim. Default: 1000.
	AsyncWorkers int `json:"async_workers,omitempty"`
	// AsyncMaxPerAccount bounds an account's async runs in flight on all
	// nodes together: a submit past it is 429 too_many_async_runs, before
	// any hold. Default: 100.
	AsyncMaxPerAccount int `json:"async_max_per_account,omitempty"`
	// AsyncCheckMax is the longest wait between two status checks of a
	// parked run's upstream work (a quarter of the run's age, at least 2
	// s, at most this). Default: 5m.
	AsyncCheckMax caddy.Duration `json:"async_check_max,omitempty"`
	// AsyncCheckRate bounds the status checks of parked runs this node
	// makes per second, however many it holds. Default: 200.
	AsyncCheckRate int `json:"async_check_rate,omitempty"`
}

// asyncState is what a config generation uses of the async side: the
// node's worker (shared across reloads, per store); the router of async
// runs is compiled with the services (compiled.asyncRouter), so a
// registry swap replaces it too. started: this generation handed the
// worker its runner (a swap hands it the new one).
type asyncState struct {
	worker  *async.Worker
	key     string
	started bool
}

// workerHandle is the usage-pool entry of a store's worker: the last
// config using it stops it, leaving its runs in flight to the store.
type workerHandle struct{ w *async.Worker }

func (h workerHandle) Destruct() error {
	h.w.Stop()
	return nil
}

// unmarshalAsync reads async_deadline, async_lease, async_workers,
// async_max_per_account, async_check_max or async_check_rate.
func (a *App) unmarshalAsync(d *caddyfile.Dispenser) error {
	name := d.Val()
	var s string
	if !d.AllArgs(&s) {
		return d.ArgErr()
	}
	if name == "async_workers" || name == "async_max_per_account" || name == "async_check_rate" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return d.Errf("%s must be a positive integer, got %q", name, s)
		}
		switch name {
		case "async_workers":
			a.AsyncWorkers = n
		case "async_check_rate":
			a.AsyncCheckRate = n
		default:
			a.AsyncMaxPerAccount = n
		}
		return nil
	}
	dur, err := caddy.ParseDuration(s)
	if err != nil || dur <= 0 {
		return d.Errf("%s must be a positive duration, got %q", name, s)
	}
	switch name {
	case "async_deadline":
		a.AsyncDeadline = caddy.Duration(dur)
	case "async_check_max":
		a.AsyncCheckMax = caddy.Duration(dur)
	default:
		a.AsyncLease = caddy.Duration(dur)
	}
	return nil
}

func (a *App) validateAsync() error {
	if a.AsyncDeadline < 0 || a.AsyncLease < 0 || a.AsyncWorkers < 0 || a.AsyncMaxPerAccount < 0 || a.AsyncCheckMax < 0 || a.AsyncCheckRate < 0 {
		return fmt.Errorf("async_deadline, async_lease, async_workers, async_max_per_account, async_check_max and async_check_rate must not be negative")
	}
	return nil
}

// provisionAsync takes this store's worker.
func (a *App) provisionAsync() {
	if a.AsyncLease == 0 {
		a.AsyncLease = caddy.Duration(async.DefaultLease)
	}
	a.async.key = "social_router.async." + a.storeKey
	v, _, _ := stores.LoadOrNew(a.async.key, func() (caddy.Destructor, error) {
		return workerHandle{async.New(async.Config{
			Store:      a.store,
			Owner:      ownerName(),
			Lease:      time.Duration(a.AsyncLease),
			MaxRunning: a.AsyncWorkers,
			CheckMax:   time.Duration(a.AsyncCheckMax),
			CheckRate:  a.AsyncCheckRate,
			Logger:     a.logger.Named("async"),
		})}, nil
	})
	a.async.worker = v.(workerHandle).w
}

// startAsync hands the worker this generation's runner and starts it
// (once per process: it resumes at once what a previous process left).
func (a *App) startAsync() {
	a.setAsyncRunner(a.current())
	a.async.worker.Start()
	a.logger.Info("async runs", zap.String("worker", a.async.worker.Owner()),
		zap.Duration("deadline", time.Duration(a.AsyncDeadline)), zap.Duration("lease", time.Duration(a.AsyncLease)))
}

// setAsyncRunner hands the worker the runner over the services c, and the
// webhooks to tell when a run ends. Runs in flight keep theirs.
func (a *App) setAsyncRunner(c *compiled) {
	runner := a.apiFor(c, a.logger.Named("async")).AsyncRunner()
	a.async.worker.SetRunner(runner, runner, a.webhooks)
	a.async.started = true
}

// asyncRouter is the router of async runs over clients: the async
// deadline is its attempt deadline.
func (a *App) asyncRouter(clients map[string]sources.Client) *router.Router {
	deadline := cmp.Or(time.Duration(a.AsyncDeadline), api.DefaultAsyncDeadline)
	return router.New(router.Config{
		AttemptTimeout: deadline,
		SoftTimeout:    time.Duration(a.SoftTimeout),
		Observer:       metrics.Router{},
	}, clients, a.shared.breakers, a.logger.Named("router"))
}

func (a *App) cleanupAsync() {
	if a.async.key != "" {
		_, _ = stores.Delete(a.async.key)
	}
}

// ownerName names this process in the leases: host, pid and a random
// part (a pid is reused across restarts).
func ownerName() string {
	host, _ := os.Hostname()
	b := make([]byte, 4)
	rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}
