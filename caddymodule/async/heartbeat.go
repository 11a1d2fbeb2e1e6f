package async

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// One heartbeat per node: every Lease/3 the worker tells the store it
// lives for another Lease (store.HeartbeatNode, which also keeps the
// holds of its runs alive where holds expire). That one write holds all
// the node's parked runs, however many; another node takes them over
// once it lapses, or at once where the store knows the node died
// (PostgreSQL: the session holding its advisory lock ended, a beat
// checks it and locks again). The runs that run in goroutines here (a few: a run
// parks as soon as its upstream work is recorded) keep a lease each,
// renewed in the same tick by one store call, which also tells of a
// cancel made on another node or a run taken over.

// heartbeatLoop beats and renews every Lease/3.
func (w *Worker) heartbeatLoop() {
	defer w.loops.Done()
	t := time.NewTicker(w.cfg.Lease / 3)
	defer t.Stop()
	for {
		select {
		case <-w.base.Done():
			return
		case <-t.C:
		}
		w.beat()
		w.renew()
	}
}

// beat records that this node lives for another Lease.
func (w *Worker) beat() {
	now := time.Now()
	if err := w.cfg.Store.HeartbeatNode(w.base, w.cfg.Owner, now, now.Add(w.cfg.Lease)); err != nil && w.base.Err() == nil {
		w.cfg.Logger.Error("async node heartbeat", zap.Error(err))
	}
}

// endHeartbeat marks the node dead at once, as it stops: its parked runs
// go to the next claim without waiting for the lease to lapse.
func (w *Worker) endHeartbeat() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	now := time.Now()
	if err := w.cfg.Store.HeartbeatNode(ctx, w.cfg.Owner, now, now); err != nil {
		w.cfg.Logger.Warn("ending the async node heartbeat; its runs wait for the lease to lapse", zap.Error(err))
	}
}
