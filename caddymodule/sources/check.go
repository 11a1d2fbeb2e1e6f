package sources

import (
	"context"
	"fmt"
	"net/http"
	"net/url"

	"socialrouter/internal/jsonscan"
)

// Checker is a Resumer that can tell, with one status call that does not
// wait, whether work h has ended: a parked async run (no goroutine waits
// for its work) is swept by its node's poller, which resumes the run only
// once reading it will not wait. Both protocols implement it.
type Checker interface {
	Resumer
	// Check reports whether the work h ended upstream (succeeded, failed,
	// aborted, timed out: Resume then reads or fails it at once). An
	// error is a failed status call (the work's state is unknown); work
	// the upstream no longer knows is ended (Resume reports how).
	Check(ctx context.Context, h Handle) (ended bool, err error)
}

var (
	_ Checker = (*ActorRun)(nil)
	_ Checker = (*DatasetScrape)(nil)
)

// Check reads run h once (GET /v2/actor-runs/{id}, no waitForFinish).
func (a *ActorRun) Check(ctx context.Context, h Handle) (bool, error) {
	ans, err := a.exchange(ctx, http.MethodGet, a.baseURL+"/v2/actor-runs/"+url.PathEscape(h.RunID), nil, nil)
	if err != nil {
		return false, err
	}
	defer ans.release()
	if ans.status == http.StatusNotFound {
		return true, nil
	}
	if ans.status != http.StatusOK {
		return false, statusError(ans)
	}
	switch st := jsonscan.Field(ans.body, "data", "status"); st {
	case "READY", "RUNNING", "ABORTING", "TIMING-OUT":
		return false, nil
	case "":
		return false, malformed(ans, fmt.Errorf("run %s answer without data.status", h.RunID))
	}
	return true, nil
}

// Check reads snapshot h's progress once (GET /datasets/v3/progress/{id}).
func (d *DatasetScrape) Check(ctx context.Context, h Handle) (bool, error) {
	ans, err := d.exchange(ctx, http.MethodGet, d.baseURL+"/datasets/v3/progress/"+url.PathEscape(h.SnapshotID), nil, nil)
	if err != nil {
		return false, err
	}
	defer ans.release()
	if ans.status == http.StatusNotFound {
		return true, nil
	}
	if ans.status != http.StatusOK {
		return false, statusError(ans)
	}
	switch st := jsonscan.Field(ans.body, "status"); st {
	case "starting", "running", "building", "collecting", "digesting":
		return false, nil
	case "":
		return false, malformed(ans, fmt.Errorf("progress of snapshot %s without status", h.SnapshotID))
	}
	return true, nil
}
