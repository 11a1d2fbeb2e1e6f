package sim

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Job kinds as they appear in the ledger.
const (
	KindActorRun = "actor_run"
	KindSnapshot = "snapshot"
)

// Job states. An actor run reports them as the upstream does (RUNNING,
// SUCCEEDED, ...); a snapshot in the datasets API's words (running, ready,
// failed, cancelled).
const (
	stateRunning   = "running"
	stateSucceeded = "succeeded"
	stateFailed    = "failed"
	stateAborted   = "aborted"
	stateTimedOut  = "timed_out"
)

// job is one piece of paid upstream work: an actor run or a snapshot. It
// runs in simulated time: it finishes dur after it started (never, when
// dur < 0: a run that keeps running until aborted or timed out), and
// accrues cost (runtime) while it runs.
type job struct {
	id, kind, target string
	datasetID        string
	started          time.Time
	// items are the result rows, ready when the job succeeds; errItems
	// counts the per-input error rows among them (never charged).
	items    [][]byte
	errItems int
	// chargeCap is the most items the upstream may charge for (maxItems of
	// an actor run); 0 = no cap.
	chargeCap int
	params    map[string]string

	// snapshot download behaviour (from the fault at start)
	notReady          string
	buildingDownloads int
	needPolls, polls  int
	failAt            string // final state when the job ends on its own: "" (succeeded) or stateFailed
	malformed         bool   // item pages are cut in half (fault malformed)

	mu       sync.Mutex
	state    string
	ended    time.Time
	timer    *time.Timer
	done     chan struct{}
	fetched  int // rows handed out (dataset item pages, snapshot downloads)
	canceled bool

	// onEnd, if set, is called (without j.mu) once the job has ended: its
	// callbacks (callbacks.go). statusPolls and lastPoll count the polls
	// of its status, callbacks its callback deliveries.
	onEnd       func(state string)
	statusPolls int
	lastPoll    time.Time
	callbacks   []CallbackLog
}

// LedgerEntry is one job of the upstream cost ledger (GET /_sim/ledger):
// what an operator of the real upstream would be billed for.
type LedgerEntry struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"`
	Target string `json:"target"`
	// DatasetID is an actor run's default dataset.
	DatasetID string `json:"dataset_id,omitempty"`
	// Status is the job's state: running, succeeded, failed, aborted,
	// timed_out.
	Status  string `json:"status"`
	Running bool   `json:"running"`
	Aborted bool   `json:"aborted"`
	// Items are the data rows the job collected (error rows excluded);
	// Charged is what the upstream bills of them (at most the run's
	// maxItems); Delivered counts rows handed out by downloads and pages.
	Items     int `json:"items"`
	Charged   int `json:"charged"`
	Delivered int `json:"delivered"`
	ErrorRows int `json:"error_rows"`
	// RuntimeS is the job's runtime in upstream (unscaled) seconds, so
	// far for a running job: the cost it accrues.
	RuntimeS  float64           `json:"runtime_s"`
	StartedAt time.Time         `json:"started_at"`
	EndedAt   *time.Time        `json:"ended_at,omitempty"`
	Params    map[string]string `json:"params,omitempty"`
	// Polls counts the polls of the job's status after its start (run
	// GETs, progress, not-ready downloads); LastPollAt is the latest.
	Polls      int        `json:"polls"`
	LastPollAt *time.Time `json:"last_poll_at,omitempty"`
	// Callbacks are the job's callback deliveries (callbacks.go).
	Callbacks []CallbackLog `json:"callbacks,omitempty"`
}

// newID is a random upstream id with a prefix ("s_" for snapshots, as the
// datasets API writes them).
func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// startJob registers a job that ends on its own after dur of real time
// (already scaled; dur < 0: never) or at timeout (> 0: the run's own
// timeout, real time), and returns it.
func (s *Sim) startJob(j *job, dur, timeout time.Duration) *job {
	j.started = time.Now()
	j.state = stateRunning
	j.done = make(chan struct{})
	end, final := dur, j.failAt
	if final == "" {
		final = stateSucceeded
	}
	if timeout > 0 && (dur < 0 || timeout < dur) {
		end, final = timeout, stateTimedOut
	}
	if end >= 0 {
		// Under j.mu: a short job's timer may fire (finish reads j.timer)
		// before the assignment is done.
		j.mu.Lock()
		j.timer = time.AfterFunc(end, func() { j.finish(final) })
		j.mu.Unlock()
	}
	s.mu.Lock()
	s.jobs[j.id] = j
	if j.datasetID != "" {
		s.datasets[j.datasetID] = j
	}
	s.order = append(s.order, j.id)
	s.mu.Unlock()
	return j
}

// finish ends a running job in state st; a job already ended stays as it is.
func (j *job) finish(st string) bool {
	j.mu.Lock()
	if j.state != stateRunning {
		j.mu.Unlock()
		return false
	}
	j.state = st
	j.ended = time.Now()
	if j.timer != nil {
		j.timer.Stop()
	}
	close(j.done)
	onEnd := j.onEnd
	j.mu.Unlock()
	if onEnd != nil {
		onEnd(st)
	}
	return true
}

// status returns the job's state.
func (j *job) status() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.state
}

// wait blocks until the job ends or d passes or the request ends; it
// reports whether the job has ended.
func (j *job) wait(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return j.status() != stateRunning
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-j.done:
		return true
	case <-t.C:
	case <-r.Context().Done():
	}
	return j.status() != stateRunning
}

// rows returns the items a finished job delivers (none unless it
// succeeded, or timed out as an actor run with what it had) and counts
// them as delivered.
func (j *job) deliver(offset, limit int) [][]byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.state != stateSucceeded {
		return nil
	}
	if offset > len(j.items) {
		offset = len(j.items)
	}
	out := j.items[offset:]
	if limit > 0 && limit < len(out) {
		out = out[:limit]
	}
	j.fetched += len(out)
	return out
}

func (j *job) entry(scale float64) LedgerEntry {
	j.mu.Lock()
	defer j.mu.Unlock()
	e := LedgerEntry{ID: j.id, Kind: j.kind, Target: j.target, DatasetID: j.datasetID, Status: j.state,
		Running: j.state == stateRunning, Aborted: j.state == stateAborted, StartedAt: j.started.UTC(),
		ErrorRows: j.errItems, Delivered: j.fetched, Params: j.params, Polls: j.statusPolls,
		Callbacks: append([]CallbackLog(nil), j.callbacks...)}
	if !j.lastPoll.IsZero() {
		t := j.lastPoll.UTC()
		e.LastPollAt = &t
	}
	if j.state == stateSucceeded {
		e.Items = len(j.items) - j.errItems
		e.Charged = e.Items
		if j.chargeCap > 0 && e.Charged > j.chargeCap {
			e.Charged = j.chargeCap
		}
	}
	end := time.Now()
	if !j.ended.IsZero() {
		end = j.ended
		t := j.ended.UTC()
		e.EndedAt = &t
	}
	e.RuntimeS = end.Sub(j.started).Seconds() / scale
	return e
}

// Ledger lists every job started so far, oldest first.
func (s *Sim) Ledger() []LedgerEntry {
	s.mu.Lock()
	jobs := make([]*job, 0, len(s.order))
	for _, id := range s.order {
		jobs = append(jobs, s.jobs[id])
	}
	s.mu.Unlock()
	out := make([]LedgerEntry, 0, len(jobs))
	for _, j := range jobs {
		out = append(out, j.entry(s.scale))
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].StartedAt.Before(out[b].StartedAt) })
	return out
}

// ClearLedger aborts every running job and forgets them all.
func (s *Sim) ClearLedger() {
	s.mu.Lock()
	jobs := s.jobs
	s.jobs, s.datasets, s.order = map[string]*job{}, map[string]*job{}, nil
	s.mu.Unlock()
	for _, j := range jobs {
		j.finish(stateAborted)
	}
}

// job returns the job with id, or nil.
func (s *Sim) job(id string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id]
}

// dataset returns the job whose default dataset is id, or nil.
func (s *Sim) dataset(id string) *job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.datasets[id]
}

// scaled turns a duration of upstream time into real time.
func (s *Sim) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.scale)
}
