package sources

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

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
	return a.checkStatus(ctx, a.baseURL+"/v2/actor-runs/"+url.PathEscape(h.RunID), "run "+h.RunID,
		[]string{"READY", "RUNNING", "ABORTING", "TIMING-OUT"}, "data", "status")
}

// Check reads snapshot h's progress once (GET /datasets/v3/progress/{id}).
func (d *DatasetScrape) Check(ctx context.Context, h Handle) (bool, error) {
	return d.checkStatus(ctx, d.baseURL+"/datasets/v3/progress/"+url.PathEscape(h.SnapshotID), "snapshot "+h.SnapshotID,
		[]string{"starting", "running", "building", "collecting", "digesting"}, "status")
}

// checkStatus reads one status answer at u: the work ended unless the
// status at path is one of running; a 404 (work the upstream no longer
// knows) is ended too.
func (b *base) checkStatus(ctx context.Context, u, what string, running []string, path ...string) (bool, error) {
	ans, err := b.exchange(ctx, http.MethodGet, u, nil, nil)
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
	st := jsonscan.Field(ans.body, path...)
	if st == "" {
		return false, malformed(ans, fmt.Errorf("status of %s: answer without %s", what, strings.Join(path, ".")))
	}
	return !slices.Contains(running, st), nil
}
