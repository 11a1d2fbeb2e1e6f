package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"socialrouter/internal/upstreamitem"
)

// MaxSyncRunWait is how long the actor platform's synchronous endpoint
// holds its (silent) connection before it answers 408 while the run goes
// on; MaxWaitForFinish caps the waitForFinish of a run poll. Both are
// upstream time, scaled by Options.TimeScale.
const (
	MaxSyncRunWait   = 300 * time.Second
	MaxWaitForFinish = 60 * time.Second
)

// runStatus is an actor run's status in the platform's words.
var runStatus = map[string]string{
	stateRunning:   "RUNNING",
	stateSucceeded: "SUCCEEDED",
	stateFailed:    "FAILED",
	stateAborted:   "ABORTED",
	stateTimedOut:  "TIMED-OUT",
}

// startRun decides a run start (async or sync): an error answer, or a
// started job.
func (s *Sim) startRun(r *http.Request, target string, body []byte) (*job, Fault, answer) {
	if !s.authorized(r) {
		return nil, Fault{}, errAnswer(http.StatusUnauthorized, apiError("user-or-token-not-found", "User was not found or authentication token is not valid"))
	}
	path, ok := s.routes[target]
	if !ok {
		return nil, Fault{}, errAnswer(http.StatusNotFound, apiError("record-not-found", "Actor was not found"))
	}
	if !json.Valid(body) {
		return nil, Fault{}, errAnswer(http.StatusBadRequest, apiError("invalid-input", "Input is not valid JSON"))
	}
	fx, err := s.fixture(path)
	if err != nil {
		return nil, Fault{}, errAnswer(http.StatusInternalServerError, apiError("internal-server-error", err.Error()))
	}
	f := s.takeFault(target, body)
	if f.Status != 0 {
		sleep(r.Context(), s.scaled(time.Duration(f.LatencyMS)*time.Millisecond))
		return nil, f, s.faultAnswer(f, ProtocolActorRun)
	}
	q := r.URL.Query()
	maxItems, _ := strconv.Atoi(q.Get("maxItems"))
	// The run's timeout is taken in real seconds, unscaled: a caller sets
	// it from its own (real) deadline, and a scaled one would time the run
	// out long before the caller gives up.
	timeout := 0 * time.Second
	if secs, err := strconv.ParseFloat(q.Get("timeout"), 64); err == nil && secs > 0 {
		timeout = time.Duration(secs * float64(time.Second))
	}
	defs, err := parseWebhooks(q.Get("webhooks"))
	if err != nil {
		return nil, f, errAnswer(http.StatusBadRequest, apiError("invalid-input", "webhooks must be a base64-encoded JSON array of webhook definitions: "+err.Error()))
	}
	items, errs := s.actorItems(fx, f, body, maxItems)
	j := &job{id: newID(""), kind: KindActorRun, target: target, datasetID: newID(""), items: items, errItems: errs,
		chargeCap: maxItems, params: queryMap(r), failAt: runFailure(f), malformed: f.Malformed}
	j.id, j.datasetID = "run_"+j.id, "ds_"+j.datasetID
	s.attachCallback(j, r, f, defs)
	return s.startJob(j, s.jobDuration(f), timeout), f, answer{}
}

func runFailure(f Fault) string {
	if f.RunStatus == "FAILED" {
		return stateFailed
	}
	return ""
}

// jobDuration is how long a job of fault f takes, in real time: the
// latencies and the fault's duration_s, scaled; never for keep_running.
func (s *Sim) jobDuration(f Fault) time.Duration {
	if f.KeepRunning {
		return -1
	}
	d := s.opts.Latency + time.Duration(f.LatencyMS)*time.Millisecond + time.Duration(f.DurationS*float64(time.Second))
	return s.scaled(d)
}

// actorItems are the rows a run collects: the fixture's data items
// (repeated to the item count), capped at maxItems unless the fault makes
// the actor ignore it, then the fixture's own error rows (an actor's
// {"error", "errorDescription"} items: served as the example has them),
// plus a dead-page row per unknown input. Under all_errors or
// error_records the error rows are the fixture's (actorError without one).
func (s *Sim) actorItems(fx *fixture, f Fault, body []byte, maxItems int) ([][]byte, int) {
	inputs := arrayStrings(gjson.ParseBytes(body))
	var dead [][]byte
	alive := len(inputs) == 0
	for _, in := range inputs {
		if s.unknown(in, f) {
			raw, _ := json.Marshal(in)
			dead = append(dead, errorRecord(nil, raw))
		} else {
			alive = true
		}
	}
	n := len(fx.data)
	if f.Items > 0 {
		n = f.Items
	} else if s.opts.Items > 0 {
		n = s.opts.Items
	}
	if !alive || len(fx.data) == 0 {
		n = 0
	}
	errRow := func(i int) []byte {
		if len(fx.errs) > 0 {
			return fx.errs[i%len(fx.errs)]
		}
		return actorError
	}
	items := make([][]byte, 0, n+len(dead)+len(fx.errs)+1)
	for i := range n {
		if f.AllErrors {
			items = append(items, errRow(i))
		} else {
			items = append(items, fx.data[i%len(fx.data)])
		}
	}
	errs := 0
	if f.AllErrors {
		errs = len(items)
	}
	if f.ErrorRecords && !f.AllErrors {
		items = append(items, errRow(0))
		errs++
	}
	if maxItems > 0 && maxItems < len(items) && !f.IgnoreMaxItems {
		items = items[:maxItems]
		errs = min(errs, maxItems)
	}
	if alive && !f.AllErrors {
		items = append(items, fx.errs...)
		errs += len(fx.errs)
	}
	items = append(items, dead...)
	return items, errs + len(dead)
}

// actorError is an actor's own error row, for a fault on an actor whose
// example has none: no error_code, as actors send.
var actorError = []byte(`{"error":"` + actorErrorText + `","errorDescription":"simulated fault"}`)

const actorErrorText = "simulated: the actor could not collect this page"

// arrayStrings returns the string values inside arrays of an actor input
// (profileUrls, startUrls[].url, usernames…): the inputs the run is about.
var arrayStrings = upstreamitem.ArrayStrings

// runSync is the synchronous endpoint: it starts a run and holds the
// connection, silent, until the run ends or MaxSyncRunWait passes; then
// it answers 408 while the run goes on (it cannot be aborted through this
// connection: the caller never learns the run id before the end).
func (s *Sim) runSync(r *http.Request, target string, body []byte) answer {
	j, f, a := s.startRun(r, target, body)
	if j == nil {
		return a
	}
	if !j.wait(r, s.scaled(MaxSyncRunWait)) || j.status() == stateTimedOut {
		return errAnswer(http.StatusRequestTimeout, apiError("run-timeout-exceeded", "Actor run did not finish in the given timeout; it keeps running"))
	}
	if j.status() != stateSucceeded {
		return errAnswer(http.StatusBadRequest, apiError("run-failed", "Actor run "+j.id+" finished with status "+runStatus[j.status()]))
	}
	a = s.dataAnswer(http.StatusCreated, joinArray(j.deliver(0, 0)), f)
	a.header["X-Apify-Run-Id"] = j.id
	return a
}

// runStart is POST /v2/acts/{actor}/runs: the run object at once.
func (s *Sim) runStart(r *http.Request, target string, body []byte) answer {
	j, f, a := s.startRun(r, target, body)
	if j == nil {
		return a
	}
	return s.decorate(answer{status: http.StatusCreated, body: s.runObject(j)}, Fault{StallMS: f.StallMS})
}

// runGet is GET /v2/actor-runs/{id}?waitForFinish=: the run object,
// after waiting up to waitForFinish (at most 60 s of upstream time) for
// the run to end.
func (s *Sim) runGet(w http.ResponseWriter, r *http.Request) {
	j := s.runOf(w, r)
	if j == nil {
		return
	}
	j.polled()
	if f, ok := s.peekFault(j.target); ok && f.PollStatus != 0 {
		s.takeFault(j.target, nil)
		s.faultAnswer(Fault{Status: f.PollStatus, RetryAfter: f.RetryAfter}, ProtocolActorRun).write(w, r)
		return
	}
	if secs, err := strconv.ParseFloat(r.URL.Query().Get("waitForFinish"), 64); err == nil && secs > 0 {
		j.wait(r, s.scaled(min(time.Duration(secs*float64(time.Second)), MaxWaitForFinish)))
	}
	writeJSON(w, http.StatusOK, s.runObject(j))
}

// runAbort is POST /v2/actor-runs/{id}/abort: a running run is aborted;
// an ended one is left as it is. Either way the run object answers.
func (s *Sim) runAbort(w http.ResponseWriter, r *http.Request) {
	j := s.runOf(w, r)
	if j == nil {
		return
	}
	j.finish(stateAborted)
	writeJSON(w, http.StatusOK, s.runObject(j))
}

// datasetItems is GET /v2/datasets/{id}/items?offset=&limit=&clean=:
// a page of the run's items, with the pagination headers.
func (s *Sim) datasetItems(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, apiError("user-or-token-not-found", "User was not found or authentication token is not valid"))
		return
	}
	j := s.dataset(r.PathValue("id"))
	if j == nil {
		writeJSON(w, http.StatusNotFound, apiError("record-not-found", "Dataset was not found"))
		return
	}
	q := r.URL.Query()
	offset, _ := strconv.Atoi(q.Get("offset"))
	limit, _ := strconv.Atoi(q.Get("limit"))
	j.mu.Lock()
	total := 0
	if j.state == stateSucceeded {
		total = len(j.items)
	}
	j.mu.Unlock()
	page := j.deliver(max(0, offset), max(0, limit))
	w.Header().Set("X-Apify-Pagination-Offset", strconv.Itoa(offset))
	w.Header().Set("X-Apify-Pagination-Limit", strconv.Itoa(limit))
	w.Header().Set("X-Apify-Pagination-Count", strconv.Itoa(len(page)))
	w.Header().Set("X-Apify-Pagination-Total", strconv.Itoa(total))
	body := joinArray(page)
	if j.malformed {
		body = body[:len(body)/2]
	}
	writeJSON(w, http.StatusOK, body)
}

// runOf is the run a run endpoint names, or nil once it has answered 401
// or 404.
func (s *Sim) runOf(w http.ResponseWriter, r *http.Request) *job {
	if !s.authorized(r) {
		writeJSON(w, http.StatusUnauthorized, apiError("user-or-token-not-found", "User was not found or authentication token is not valid"))
		return nil
	}
	j := s.job(r.PathValue("id"))
	if j == nil || j.kind != KindActorRun {
		writeJSON(w, http.StatusNotFound, apiError("record-not-found", "Actor run was not found"))
		return nil
	}
	return j
}

// runObject is the {"data": run} answer of the run endpoints.
func (s *Sim) runObject(j *job) []byte {
	e := j.entry(s.scale)
	run := map[string]any{
		"id": j.id, "actId": j.target, "status": runStatus[e.Status], "startedAt": e.StartedAt,
		"defaultDatasetId": j.datasetID,
		"stats":            map[string]any{"runTimeSecs": e.RuntimeS},
		"options":          map[string]any{"maxItems": j.chargeCap},
	}
	if e.EndedAt != nil {
		run["finishedAt"] = *e.EndedAt
	}
	b, _ := json.Marshal(map[string]any{"data": run})
	return b
}

func queryMap(r *http.Request) map[string]string {
	q := map[string]string{}
	for k, v := range r.URL.Query() {
		q[k] = v[0]
	}
	return q
}
