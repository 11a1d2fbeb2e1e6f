package sources

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"
)

// Handle names paid upstream work: an actor run (its id and default
// dataset) or a snapshot. Its String form is what a run's attempts
// record, and ParseHandle reads it back, so a restarted gateway can
// resume or abort the work (Resumer).
type Handle struct {
	// Protocol is ProtocolActorRun or ProtocolDatasetScrape.
	Protocol string
	// RunID and DatasetID are an actor run's.
	RunID, DatasetID string
	// SnapshotID is a collection's.
	SnapshotID string
}

// String is "run:<id>/dataset:<id>" or "snapshot:<id>".
func (h Handle) String() string {
	if h.Protocol == ProtocolDatasetScrape {
		return "snapshot:" + h.SnapshotID
	}
	return "run:" + h.RunID + "/dataset:" + h.DatasetID
}

// ParseHandle reads a Handle's String form.
func ParseHandle(s string) (Handle, error) {
	if id, ok := strings.CutPrefix(s, "snapshot:"); ok && id != "" {
		return Handle{Protocol: ProtocolDatasetScrape, SnapshotID: id}, nil
	}
	if rest, ok := strings.CutPrefix(s, "run:"); ok {
		run, ds, ok := strings.Cut(rest, "/dataset:")
		if ok && run != "" && ds != "" {
			return Handle{Protocol: ProtocolActorRun, RunID: run, DatasetID: ds}, nil
		}
	}
	return Handle{}, fmt.Errorf("upstream handle %q is neither run:<id>/dataset:<id> nor snapshot:<id>", s)
}

// ErrLeftRunning, as the cause (context.Cause) that ends a call's
// context, stops the wait without aborting the upstream work: the caller
// recorded its handle and hands it to another waiter (an async run whose
// worker stops or lost its lease to another node), who resumes it.
var ErrLeftRunning = errors.New("the upstream work is left running for another waiter")

// AbortDetached stops upstream work h that nobody waits for any more (its
// call gave up waiting, or the router abandons it): from a context
// detached from ctx (which has usually ended), bounded by AbortTimeout. A
// failed abort is logged; the work then ends by its own timeout upstream.
// Work whose wait ended with ErrLeftRunning is left for the waiter it was
// handed to. It is the one way work is stopped, by the clients and the
// router alike.
func AbortDetached(ctx context.Context, h Handle, abort func(context.Context, Handle) error, log *zap.Logger) {
	if errors.Is(context.Cause(ctx), ErrLeftRunning) {
		log.Debug("upstream work left running for another waiter", zap.String("handle", h.String()))
		return
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), AbortTimeout)
	defer cancel()
	if err := abort(actx, h); err != nil {
		log.Warn("could not stop upstream work; it runs until its own timeout",
			zap.String("handle", h.String()), zap.Error(err))
		return
	}
	log.Debug("stopped upstream work", zap.String("handle", h.String()))
}
