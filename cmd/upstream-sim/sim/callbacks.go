package sim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Callbacks, as the upstreams document them (testdata/contract keeps the
// documented shapes):
//
//   - actor_run: a run start's ad-hoc webhooks (?webhooks=, a base64
//     encoded JSON array of {eventTypes, requestUrl, payloadTemplate?,
//     headersTemplate?}) are POSTed when the run ends in one of their
//     event types (ACTOR.RUN.SUCCEEDED, FAILED, ABORTED, TIMED_OUT), with
//     the default payload {userId, createdAt, eventType, eventData{actorId,
//     actorRunId}, resource: the run} unless a payload template says
//     otherwise, and the headers template's headers; a non-2xx answer is
//     delivered again with the documented back-off (1, 2, 4 … minutes,
//     scaled), at most callbackRetries times.
//   - dataset_scrape: a trigger's ?notify= URL is POSTed {snapshot_id,
//     status} when the collection ends (ready or failed), with ?auth_header=
//     as its Authorization header.
//
// A fault's drop_callbacks makes the target's jobs end without calling
// back (a lost callback), so a waiter must poll. The ledger counts each
// job's status polls and its callback deliveries.

// callbackRetries is how many times a refused webhook is delivered again
// (the platform documents 11 over 32 hours; the simulator stops sooner).
const callbackRetries = 3

// callbackTimeout is the documented timeout of a webhook request.
const callbackTimeout = 30 * time.Second

// callbackEvent is what an ended actor run's webhook reports.
var callbackEvent = map[string]string{
	stateSucceeded: "ACTOR.RUN.SUCCEEDED",
	stateFailed:    "ACTOR.RUN.FAILED",
	stateAborted:   "ACTOR.RUN.ABORTED",
	stateTimedOut:  "ACTOR.RUN.TIMED_OUT",
}

// simUserID is the user id of the simulated platform account.
const simUserID = "simUser0000000001"

// webhookDef is one ad-hoc webhook of a run start.
type webhookDef struct {
	EventTypes      []string `json:"eventTypes"`
	RequestURL      string   `json:"requestUrl"`
	PayloadTemplate string   `json:"payloadTemplate"`
	HeadersTemplate string   `json:"headersTemplate"`
}

// callback is where and how a job calls back when it ends.
type callback struct {
	webhooks   []webhookDef // actor_run
	notify     string       // dataset_scrape
	authHeader string
	drop       bool
}

// CallbackLog is one callback delivery, as the ledger shows it.
type CallbackLog struct {
	URL string `json:"url"`
	// Event is the actor run's event type, or the snapshot's status.
	Event string `json:"event"`
	// Dropped says the delivery was not sent (fault drop_callbacks).
	Dropped bool `json:"dropped,omitempty"`
	// Status is the receiver's answer to the last attempt (0: none).
	Status   int       `json:"status,omitempty"`
	Error    string    `json:"error,omitempty"`
	Attempts int       `json:"attempts"`
	At       time.Time `json:"at"`
}

// parseWebhooks reads a run start's webhooks parameter; "" yields none.
func parseWebhooks(param string) ([]webhookDef, error) {
	if param == "" {
		return nil, nil
	}
	raw, err := base64.StdEncoding.DecodeString(param)
	if err != nil {
		return nil, err
	}
	var defs []webhookDef
	if err := json.Unmarshal(raw, &defs); err != nil {
		return nil, err
	}
	return defs, nil
}

// attachCallback sets job j's callback from its start request (before the
// job starts: a short job may end at once) and its fault f.
func (s *Sim) attachCallback(j *job, r *http.Request, f Fault, defs []webhookDef) {
	q := r.URL.Query()
	cb := &callback{webhooks: defs, notify: q.Get("notify"), authHeader: q.Get("auth_header"), drop: f.DropCallbacks}
	if len(cb.webhooks) == 0 && cb.notify == "" {
		return
	}
	j.onEnd = func(st string) { go s.callBack(j, cb, st) }
}

// callBack delivers the callbacks of job j, which ended in state st.
func (s *Sim) callBack(j *job, cb *callback, st string) {
	if j.kind == KindSnapshot {
		status := map[string]string{stateSucceeded: "ready", stateFailed: "failed"}[st]
		if cb.notify == "" || status == "" {
			return // a cancel (ours) is not a collection's end
		}
		if st == stateSucceeded {
			j.mu.Lock()
			j.polls = max(j.polls, j.needPolls) // notified ready: downloadable
			j.mu.Unlock()
		}
		body, _ := json.Marshal(map[string]string{"snapshot_id": j.id, "status": status})
		hdr := http.Header{}
		if cb.authHeader != "" {
			hdr.Set("Authorization", cb.authHeader)
		}
		s.deliver(j, cb, cb.notify, status, body, hdr, 0)
		return
	}
	event := callbackEvent[st]
	for _, d := range cb.webhooks {
		if !slices.Contains(d.EventTypes, event) {
			continue
		}
		vars := s.webhookVars(j, event)
		body := []byte(`{"userId":` + vars["userId"] + `,"createdAt":` + vars["createdAt"] + `,"eventType":` + vars["eventType"] +
			`,"eventData":` + vars["eventData"] + `,"resource":` + vars["resource"] + `}`)
		if d.PayloadTemplate != "" {
			body = fillTemplate(d.PayloadTemplate, vars)
		}
		hdr := http.Header{}
		if d.HeadersTemplate != "" {
			var hs map[string]string
			if json.Unmarshal(fillTemplate(d.HeadersTemplate, vars), &hs) == nil {
				for k, v := range hs {
					hdr.Set(k, v)
				}
			}
		}
		s.deliver(j, cb, d.RequestURL, event, body, hdr, callbackRetries)
	}
}

// webhookVars are the documented payload template variables of run j's
// webhook for event, as JSON.
func (s *Sim) webhookVars(j *job, event string) map[string]string {
	str := func(v string) string { b, _ := json.Marshal(v); return string(b) }
	data, _ := json.Marshal(map[string]string{"actorId": j.target, "actorRunId": j.id})
	return map[string]string{
		"userId": str(simUserID), "createdAt": str(time.Now().UTC().Format(time.RFC3339Nano)),
		"eventType": str(event), "eventData": string(data),
		"resource": gjson.GetBytes(s.runObject(j), "data").Raw,
	}
}

var templateVar = regexp.MustCompile(`\{\{\s*([A-Za-z]+)\s*\}\}`)

// fillTemplate replaces a template's {{variable}}s by their JSON.
func fillTemplate(t string, vars map[string]string) []byte {
	return []byte(templateVar.ReplaceAllStringFunc(t, func(m string) string {
		if v, ok := vars[templateVar.FindStringSubmatch(m)[1]]; ok {
			return v
		}
		return "null"
	}))
}

// deliver POSTs one callback (unless dropped), delivering it again on a
// refusal up to retries times, and logs it on the job.
func (s *Sim) deliver(j *job, cb *callback, url, event string, body []byte, hdr http.Header, retries int) {
	l := CallbackLog{URL: url, Event: event, Dropped: cb.drop, At: time.Now().UTC()}
	idx := j.logCallback(l)
	if cb.drop {
		return
	}
	client := &http.Client{Timeout: callbackTimeout}
	for try := 0; ; try++ {
		l.Attempts, l.Status, l.Error = try+1, 0, ""
		ctx, cancel := context.WithTimeout(context.Background(), callbackTimeout)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err == nil {
			req.Header = hdr.Clone()
			req.Header.Set("Content-Type", "application/json")
			var resp *http.Response
			if resp, err = client.Do(req); err == nil {
				resp.Body.Close()
				l.Status = resp.StatusCode
			}
		}
		cancel()
		if err != nil {
			l.Error = err.Error()
		}
		j.updateCallback(idx, l)
		if (l.Status >= 200 && l.Status < 300) || try >= retries || strings.HasPrefix(l.Error, "unsupported protocol") {
			return
		}
		time.Sleep(s.scaled(time.Minute << try))
	}
}

func (j *job) logCallback(l CallbackLog) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.callbacks = append(j.callbacks, l)
	return len(j.callbacks) - 1
}

func (j *job) updateCallback(i int, l CallbackLog) {
	j.mu.Lock()
	j.callbacks[i] = l
	j.mu.Unlock()
}

// polled counts a status poll of the job (a run GET, a progress, a
// not-ready download).
func (j *job) polled() {
	j.mu.Lock()
	j.statusPolls++
	j.lastPoll = time.Now()
	j.mu.Unlock()
}
