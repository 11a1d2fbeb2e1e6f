package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"socialrouter/caddymodule/store"
)

// run_retention's progress, fed by the store decorator's Expirer methods
// (every batch and every reclaim pass through them) and by the runner at
// the end of each pass.
var (
	retentionRuns = counterVec("retention", "runs_expired_total",
		"Runs whose records run_retention deleted (their billing facts stay), by store type.",
		"store")
	retentionBytes = counterVec("retention", "bytes_deleted_total",
		"Bytes of stored run documents run_retention removed, by store type.",
		"store")
	retentionReclaimed = counterVec("retention", "bytes_reclaimed_total",
		"Bytes the store's files shrank by when retention reclaimed space (badger value-log GC), by store type.",
		"store")
	retentionErrors = counterVec("retention", "errors_total",
		"Retention batches or reclaims that failed (retried at the next pass), by store type.",
		"store")
	retentionLastPass = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "retention", Name: "last_pass_timestamp_seconds",
		Help: "Unix time the last complete retention pass ended, by store type.",
	}, []string{"store"})
	storedBytes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Subsystem: "store", Name: "stored_bytes",
		Help: "Disk space of the store's files (badger: its directory; postgres: the runs table), measured at each retention pass, by store type.",
	}, []string{"store"})
)

func init() {
	collectors = append(collectors, retentionRuns, retentionBytes, retentionReclaimed, retentionErrors,
		retentionLastPass, storedBytes)
}

// startRetentionSeries starts the retention series of a store type at
// zero, so that alerts see them before the first pass (and a gateway
// without run_retention shows that nothing expires).
func startRetentionSeries(kind string) {
	retentionRuns.WithLabelValues(kind)
	retentionBytes.WithLabelValues(kind)
	retentionReclaimed.WithLabelValues(kind)
	retentionErrors.WithLabelValues(kind)
	retentionLastPass.WithLabelValues(kind)
	storedBytes.WithLabelValues(kind)
}

// ExpireRuns expires a batch and counts it.
func (s *Store) ExpireRuns(ctx context.Context, cutoff, now time.Time, limit int) (store.ExpireResult, error) {
	res, err := s.Store.ExpireRuns(ctx, cutoff, now, limit)
	if err != nil {
		retentionErrors.WithLabelValues(s.kind).Inc()
		return res, err
	}
	retentionRuns.WithLabelValues(s.kind).Add(float64(res.Runs))
	retentionBytes.WithLabelValues(s.kind).Add(float64(res.Bytes))
	return res, nil
}

// Reclaim gives space back, counts it and measures the store again.
func (s *Store) Reclaim(ctx context.Context) (int64, error) {
	n, err := s.Store.Reclaim(ctx)
	if err != nil {
		retentionErrors.WithLabelValues(s.kind).Inc()
		return n, err
	}
	retentionReclaimed.WithLabelValues(s.kind).Add(float64(n))
	if _, err := s.StoredBytes(ctx); err != nil {
		return n, err
	}
	return n, nil
}

// StoredBytes measures the store and sets the gauge.
func (s *Store) StoredBytes(ctx context.Context) (int64, error) {
	n, err := s.Store.StoredBytes(ctx)
	if err == nil {
		storedBytes.WithLabelValues(s.kind).Set(float64(n))
	}
	return n, err
}

// RetentionPassEnded records the end of a complete retention pass.
func (s *Store) RetentionPassEnded(at time.Time) {
	retentionLastPass.WithLabelValues(s.kind).Set(float64(at.UnixNano()) / 1e9)
}

// Interface guards
var _ store.Expirer = (*Store)(nil)
