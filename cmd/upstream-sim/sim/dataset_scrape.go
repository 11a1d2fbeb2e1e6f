package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
)

// MaxScrapeInputs is the most inputs one scrape request may carry, as on
// the real upstream; more is answered 400, which catches clients that do
// not batch.
const MaxScrapeInputs = 20

// MaxScrapeWait is how long /scrape holds its connection before it answers
// 202 with the snapshot id while the collection goes on (upstream time,
// scaled).
const MaxScrapeWait = time.Minute

// DefaultPolls is how many polls an async snapshot needs when the fault
// sets async without polls.
const DefaultPolls = 2

// DefaultDiscoverItems is how many records a discovery collects per input
// when nothing caps it (limit_per_input, limit_multiple_results, a
// fault's items): discovery has no natural end.
const DefaultDiscoverItems = 25

// newSnapshot decides a /scrape or /trigger request: an error answer, or
// a started snapshot.
func (s *Sim) newSnapshot(r *http.Request, target string, body []byte, sync bool) (*job, Fault, answer) {
	if !s.authorized(r) {
		return nil, Fault{}, errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token"))
	}
	if target == "" {
		return nil, Fault{}, validationErrors("dataset_id is required")
	}
	path, ok := s.routes[target]
	if !ok {
		return nil, Fault{}, errAnswer(http.StatusNotFound, scrapeError("dataset_not_found", "dataset does not exist: "+target))
	}
	if !gjson.ValidBytes(body) {
		return nil, Fault{}, validationErrors("body is not valid JSON")
	}
	root := gjson.ParseBytes(body)
	in := root
	if root.IsObject() {
		in = root.Get("input")
	}
	if !in.IsArray() {
		return nil, Fault{}, validationErrors(`body needs an "input" array`)
	}
	q := r.URL.Query()
	discover := q.Get("type") == "discover_new"
	inputs := in.Array()
	switch {
	case len(inputs) == 0:
		return nil, Fault{}, validationErrors("input is empty")
	case sync && discover:
		return nil, Fault{}, validationErrors("discovery (type=discover_new) is not supported by /scrape; use /trigger")
	case sync && len(inputs) > MaxScrapeInputs:
		return nil, Fault{}, validationErrors(fmt.Sprintf("at most %d inputs per scrape request, got %d; use /trigger", MaxScrapeInputs, len(inputs)))
	}
	fx, err := s.fixture(path)
	if err != nil {
		return nil, Fault{}, errAnswer(http.StatusInternalServerError, scrapeError("internal_error", err.Error()))
	}
	f := s.takeFault(target, body)
	if len(f.ValidationErrors) > 0 {
		return nil, f, validationErrors(f.ValidationErrors...)
	}
	if f.Status != 0 {
		sleep(r.Context(), s.scaled(time.Duration(f.LatencyMS)*time.Millisecond))
		return nil, f, s.faultAnswer(f, ProtocolDatasetScrape)
	}
	rows, errs := s.scrapeRows(fx, f, inputs, discover, q)
	j := &job{id: newID("s_"), kind: KindSnapshot, target: target, items: rows, errItems: errs, params: queryMap(r),
		notReady: f.NotReady, buildingDownloads: f.BuildingDownloads}
	if f.SnapshotFailed {
		j.failAt = stateFailed
	}
	if f.Async {
		j.needPolls = f.Polls
		if j.needPolls == 0 {
			j.needPolls = DefaultPolls
		}
	}
	if f.Malformed {
		j.items = [][]byte{[]byte(`{"truncated":`)}
	}
	if !sync {
		s.attachCallback(j, r, f, nil) // notify is a /trigger parameter
	}
	return s.startJob(j, s.jobDuration(f), 0), f, answer{}
}

// scrapeRows are a snapshot's rows: per input, the example's rows that
// answer it (rowsFor; a set item count or a discovery repeats the data
// rows instead, capped by limit_per_input), an error row for every second
// input under error_records, a dead-page row for an unknown input; the
// data rows capped at limit_multiple_results.
func (s *Sim) scrapeRows(fx *fixture, f Fault, inputs []gjson.Result, discover bool, q map[string][]string) ([][]byte, int) {
	per := 0 // every row of the example that answers the input
	switch {
	case f.Items > 0:
		per = f.Items
	case s.opts.Items > 0:
		per = s.opts.Items
	case discover:
		per = DefaultDiscoverItems
	}
	lp, _ := strconv.Atoi(first(q["limit_per_input"]))
	if lp > 0 && per > 0 && lp < per {
		per = lp
	}
	total := -1
	if lm, err := strconv.Atoi(first(q["limit_multiple_results"])); err == nil && lm > 0 {
		total = lm
	}
	rows := make([][]byte, 0, len(inputs)*max(per, 1))
	errs := 0
	for i, input := range inputs {
		raw := []byte(input.Raw)
		switch {
		case s.unknown(inputText(input), f):
			rows = append(rows, errorRecord(nil, raw))
			errs++
			continue
		case f.AllErrors || (f.ErrorRecords && i%2 == 1):
			var tmpl []byte
			if len(fx.errs) > 0 {
				tmpl = fx.errs[(i/2)%len(fx.errs)]
			}
			rows = append(rows, errorRecord(tmpl, raw))
			errs++
			continue
		}
		var data [][]byte
		if per > 0 && len(fx.data) > 0 {
			for j := range per {
				data = append(data, fx.data[(i*per+j)%len(fx.data)])
			}
		} else {
			var errRows [][]byte
			data, errRows = fx.rowsFor(inputText(input), i)
			for _, e := range errRows {
				rows = append(rows, setInput(e, raw))
				errs++
			}
			if lp > 0 && lp < len(data) {
				data = data[:lp]
			}
		}
		for _, d := range data {
			if total == 0 {
				break
			}
			rows = append(rows, setInput(d, raw))
			total--
		}
	}
	return rows, errs
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// inputText is what an input names: its url (or any string field), or the
// input itself when it is a string.
func inputText(in gjson.Result) string {
	if in.Type == gjson.String {
		return in.Str
	}
	if u := in.Get("url"); u.Exists() {
		return u.String()
	}
	return in.Raw
}

// validationErrors is the datasets API's 400: {"validation_errors": […]}.
func validationErrors(msgs ...string) answer {
	b, _ := json.Marshal(map[string][]string{"validation_errors": msgs})
	return errAnswer(http.StatusBadRequest, b)
}

// scrapeAnswer is POST /datasets/v3/scrape: it holds the connection until
// the collection ends or a minute (scaled) passes, then answers the rows,
// or 202 with the snapshot id while the collection goes on.
func (s *Sim) scrapeAnswer(r *http.Request, target string, body []byte) answer {
	j, f, a := s.newSnapshot(r, target, body, true)
	if j == nil {
		return a
	}
	if !f.Async && j.wait(r, s.scaled(MaxScrapeWait)) && j.status() == stateSucceeded {
		return s.dataAnswer(http.StatusOK, joinArray(j.deliver(0, 0)), f)
	}
	b, _ := json.Marshal(map[string]string{"snapshot_id": j.id,
		"message": "Your request is still in progress and may take a few minutes. Use the snapshot id to monitor its progress."})
	a = s.decorate(answer{status: http.StatusAccepted, body: b}, Fault{StallMS: f.StallMS})
	a.header["Retry-After"] = "10"
	return a
}

// triggerAnswer is POST /datasets/v3/trigger: the snapshot id at once.
func (s *Sim) triggerAnswer(r *http.Request, target string, body []byte) answer {
	j, f, a := s.newSnapshot(r, target, body, false)
	if j == nil {
		return a
	}
	b, _ := json.Marshal(map[string]string{"snapshot_id": j.id})
	return s.decorate(answer{status: http.StatusOK, body: b}, Fault{StallMS: f.StallMS})
}

// snapshotState counts one poll of a snapshot and says where it stands in
// the progress API's words ("" when unknown).
func (s *Sim) snapshotState(id string) (*job, string) {
	j := s.job(id)
	if j == nil || j.kind != KindSnapshot {
		return nil, ""
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.polls++
	switch j.state {
	case stateFailed:
		return j, "failed"
	case stateAborted:
		return j, "cancelled"
	case stateSucceeded:
		if j.polls >= j.needPolls {
			return j, "ready"
		}
	}
	if j.polls == 1 {
		return j, "starting"
	}
	return j, "running"
}

// progress is GET /datasets/v3/progress/{id}.
func (s *Sim) progress(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	id := r.PathValue("id")
	j, st := s.snapshotState(id)
	if j == nil {
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
		return
	}
	j.polled()
	if f, ok := s.peekFault(j.target); ok && f.PollStatus != 0 {
		s.takeFault(j.target, nil)
		s.faultAnswer(Fault{Status: f.PollStatus, RetryAfter: f.RetryAfter}, ProtocolDatasetScrape).write(w, r)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"snapshot_id": id, "dataset_id": j.target, "status": st})
}

// snapshotDownload is GET /datasets/v3/snapshot/{id}: the rows once
// ready; before that a status body, as 202 or (fault not_ready "200") as
// 200, as the datasets API documents both.
func (s *Sim) snapshotDownload(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	j, st := s.snapshotState(r.PathValue("id"))
	if st == "ready" {
		j.mu.Lock()
		if j.buildingDownloads > 0 {
			j.buildingDownloads--
			st = "building"
		}
		j.mu.Unlock()
	}
	switch st {
	case "":
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
	case "failed", "cancelled":
		writeJSON(w, http.StatusBadRequest, scrapeError("snapshot_failed", "Snapshot "+st))
	case "ready":
		rows := j.deliver(0, 0)
		if len(rows) == 0 {
			writeJSON(w, http.StatusBadRequest, scrapeError("snapshot_empty", "Snapshot is empty"))
			return
		}
		writeJSON(w, http.StatusOK, joinArray(rows))
	default:
		j.polled()
		status, msg := http.StatusAccepted, "Snapshot is not ready yet, try again in 10s"
		if j.notReady == "200" {
			status, st, msg = http.StatusOK, "building", "Snapshot is building, try again in 10s"
		}
		writeJSON(w, status, map[string]string{"status": st, "message": msg})
	}
}

// snapshotCancel is POST /datasets/v3/snapshot/{id}/cancel: "OK" as text.
func (s *Sim) snapshotCancel(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	j := s.job(r.PathValue("id"))
	if j == nil || j.kind != KindSnapshot {
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
		return
	}
	j.finish(stateAborted)
	w.Header().Set("Content-Type", "text/plain")
	_, _ = w.Write([]byte("OK"))
}
