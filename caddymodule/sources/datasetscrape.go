package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"socialrouter/internal/jsonscan"
)

// ProtocolDatasetScrape is the name dataset_scrape sources declare.
const ProtocolDatasetScrape = "dataset_scrape"

// MaxScrapeInputs is the most inputs the upstream accepts in one
// synchronous /scrape; larger batches, and every discovery, go to /trigger.
const MaxScrapeInputs = 20

// MaxScrapeWait is how long /scrape holds its connection (silent) before
// it answers 202 with a snapshot id: a minute, as documented.
const MaxScrapeWait = time.Minute

// maxPollErrors is how many consecutive transient poll failures (network,
// 5xx, 429) are tolerated before waiting on paid work is given up: the
// collection is paid for, one blip should not throw it away.
const maxPollErrors = 3

// DefaultPollInterval is the first wait between progress polls when
// Config has none; MaxPollFactor times it is the longest (10 s by default,
// the wait the upstream's not-ready answers suggest).
const (
	DefaultPollInterval = 2 * time.Second
	MaxPollFactor       = 5
)

func init() {
	Register(ProtocolDatasetScrape, func(cfg Config) (Client, error) { return NewDatasetScrape(cfg) })
}

// DatasetScrape speaks the datasets API: up to 20 URL inputs go to the
// synchronous /scrape (answered with the rows, or after a minute with 202
// and a snapshot id); discovery and larger batches to /trigger (a snapshot
// id at once). A snapshot is polled (/progress), downloaded (/snapshot,
// where a not-ready answer in either documented form means "still
// building") and cancelled (/snapshot/{id}/cancel) whenever the call stops
// waiting first. The call's caps go upstream as limit_per_input and
// limit_multiple_results. It is safe for concurrent use.
type DatasetScrape struct {
	base
	poll time.Duration
}

var _ Resumer = (*DatasetScrape)(nil)

// NewDatasetScrape builds a dataset_scrape client; the base URL is required.
func NewDatasetScrape(cfg Config) (*DatasetScrape, error) {
	b, err := newBase(ProtocolDatasetScrape, cfg)
	if err != nil {
		return nil, err
	}
	d := &DatasetScrape{base: b, poll: cfg.PollInterval}
	if d.poll <= 0 {
		d.poll = DefaultPollInterval
	}
	return d, nil
}

// invalidBody is the error of a request body a protocol cannot send.
func invalidBody(err error) *Error {
	return &Error{Outcome: OutcomeInvalidInput, Message: err.Error()}
}

// Do collects dataset c.Target for the inputs in c.Body ({"input": [...]},
// other keys kept; a bare array is taken as the inputs) and returns the
// rows. Failures are *Error; a snapshot the call stops waiting for is
// cancelled.
func (d *DatasetScrape) Do(ctx context.Context, c Call) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, transportError(ctx, "before upstream request", err)
	}
	body, n, err := scrapeBody(c.Body)
	if err != nil {
		return nil, invalidBody(err)
	}
	if c.Params["type"] == "discover_new" || n > MaxScrapeInputs {
		return d.trigger(ctx, c, body)
	}
	c.waiting(MaxScrapeWait)
	ans, err := d.exchange(ctx, http.MethodPost, d.endpoint("scrape", c, false), body, c.Activity)
	if err != nil {
		return nil, err
	}
	switch ans.status {
	case http.StatusOK:
		return itemsResult(ans)
	case http.StatusAccepted:
		return d.snapshotFrom(ctx, c, ans, nil)
	}
	if ans.status < 300 {
		return nil, malformed(ans, fmt.Errorf("unexpected status %d for a scrape", ans.status))
	}
	return nil, statusError(ans)
}

// trigger starts an asynchronous collection and waits for it: for its
// notify, where the source has callbacks, else by polling.
func (d *DatasetScrape) trigger(ctx context.Context, c Call, body []byte) (*Result, error) {
	if in, ok := onlyInput(body); ok {
		body = in // the documented /trigger body: the inputs array
	}
	w := d.callback(c)
	if w != nil {
		defer w.Close()
	}
	ans, err := d.exchange(ctx, http.MethodPost, d.endpoint("trigger", c, w != nil), body, c.Activity)
	if err != nil {
		return nil, err
	}
	if ans.status != http.StatusOK && ans.status != http.StatusAccepted {
		if ans.status < 300 {
			return nil, malformed(ans, fmt.Errorf("unexpected status %d for a trigger", ans.status))
		}
		return nil, statusError(ans)
	}
	return d.snapshotFrom(ctx, c, ans, w)
}

// snapshotFrom reads the snapshot id of a 202 scrape or a trigger answer
// and waits for the snapshot (for its notify on w, when not nil).
func (d *DatasetScrape) snapshotFrom(ctx context.Context, c Call, ans *answer, w Wait) (*Result, error) {
	id := jsonscan.Field(ans.body, "snapshot_id")
	if id == "" {
		return nil, malformed(ans, errors.New("answer without snapshot_id"))
	}
	ans.release()
	h := Handle{Protocol: ProtocolDatasetScrape, SnapshotID: id}
	if w != nil {
		w.Bind(h)
	}
	c.started(h)
	return d.resume(ctx, c, h, w)
}

// endpoint is the URL of /scrape or /trigger for call c: the offer's
// params, the dataset, and the caps (never more records than reserved);
// with notify, the trigger's documented notify URL and the auth_header it
// is to send.
func (d *DatasetScrape) endpoint(path string, c Call, notify bool) string {
	q := url.Values{}
	for k, v := range c.Params {
		q.Set(k, v)
	}
	q.Set("dataset_id", c.Target)
	q.Set("format", "json")
	q.Set("include_errors", "true")
	if c.PerInput > 0 && c.Params["type"] == "discover_new" {
		q.Set("limit_per_input", strconv.Itoa(c.PerInput))
	}
	if c.Limit > 0 {
		q.Set("limit_multiple_results", strconv.Itoa(c.Limit))
	}
	if notify {
		cb := d.cfg.Callbacks
		q.Set("notify", cb.url(c.RunID, c.Batch))
		q.Set("auth_header", CallbackAuth(cb.Secret, cb.Source))
	}
	return d.baseURL + "/datasets/v3/" + path + "?" + q.Encode()
}

// Resume waits for snapshot h to be ready and downloads it. When it stops
// waiting first (ctx done, a failure), it cancels the snapshot from a
// detached context. A resumed snapshot is polled: its handle does not say
// whether it was started with a notify (a /scrape's is not).
func (d *DatasetScrape) Resume(ctx context.Context, c Call, h Handle) (*Result, error) {
	return d.resume(ctx, c, h, nil)
}

// resume is Resume with the notify wait w (nil: none).
func (d *DatasetScrape) resume(ctx context.Context, c Call, h Handle, w Wait) (*Result, error) {
	res, err := d.snapshot(ctx, c, h.SnapshotID, w)
	if err != nil {
		var e *Error
		if !errors.As(err, &e) || e.Outcome != OutcomeSnapshot {
			AbortDetached(ctx, h, d.Abort, d.log)
		}
		return nil, withHandles(err, []string{h.String()})
	}
	res.Handles = MergeHandles([]string{h.String()}, res.Handles...)
	return res, nil
}

// Abort cancels snapshot h (POST /datasets/v3/snapshot/{id}/cancel).
func (d *DatasetScrape) Abort(ctx context.Context, h Handle) error {
	if h.SnapshotID == "" {
		return errors.New("cancel: handle has no snapshot id")
	}
	ans, err := d.exchange(ctx, http.MethodPost, d.baseURL+"/datasets/v3/snapshot/"+url.PathEscape(h.SnapshotID)+"/cancel", nil, nil)
	if err != nil {
		return err
	}
	if ans.status != http.StatusOK {
		return statusError(ans)
	}
	return nil
}

// snapshot waits for snapshot id's notify (w) or polls its progress
// until ready, then downloads it. Polls start at the poll interval and
// grow to MaxPollFactor times it. A notify that says ready is not checked
// by a progress poll: the download follows at once.
//
// Started without a notify, the first check is a download rather than a
// progress poll: a snapshot ready by then (a small collection, or one a
// parked run's poller saw end) is read in one round trip instead of two,
// and one that is not answers the documented not-ready 202 for the price
// of a progress poll. Only rows end the wait there; any other answer (not
// ready, empty, unknown yet, a failure) is left to the progress polls
// that follow, as if that first check had been one of them. A notify that
// did not come within its fallback wait is followed by progress polls, as
// ever: the run is then known to be polled.
func (d *DatasetScrape) snapshot(ctx context.Context, c Call, id string, w Wait) (*Result, error) {
	progressURL := d.baseURL + "/datasets/v3/progress/" + url.PathEscape(id)
	snapshotURL := d.baseURL + "/datasets/v3/snapshot/" + url.PathEscape(id) + "?format=json"
	delay, first := d.poll, d.poll
	ready := false
	if st, ok := d.awaitCallback(ctx, c, w); ok {
		if st != JobSucceeded {
			return nil, &Error{Outcome: OutcomeSnapshot, Retryable: true,
				Message: fmt.Sprintf("snapshot %s %s (reported by its notify)", id, st)}
		}
		ready, first = true, 0
	}
	early := w == nil // the first check downloads
	timer := time.NewTimer(first)
	defer timer.Stop()
	c.waiting(first)
	pollErrs := 0
	for {
		select {
		case <-ctx.Done():
			return nil, transportError(ctx, "waiting for snapshot "+id, ctx.Err())
		case <-timer.C:
		}
		target := progressURL
		if ready || early {
			target = snapshotURL
		}
		// exchange reports activity for every answer, so a slow collection
		// that keeps answering its polls is not mistaken for a stall.
		ans, err := d.exchange(ctx, http.MethodGet, target, nil, c.Activity)
		if early {
			early = false
			if err == nil {
				if res, ok := earlyRows(ans); ok {
					return res, nil
				}
				ans.release()
			} else if ctx.Err() != nil {
				return nil, err
			}
			delay = min(delay*3/2, d.poll*MaxPollFactor)
			c.waiting(delay)
			timer.Reset(delay)
			continue
		}
		if err == nil {
			var done bool
			var res *Result
			res, done, ready, err = d.polled(ans, id, ready)
			if done {
				return res, err
			}
			ans.release() // a progress or not-ready answer, read
		}
		if err != nil {
			if !transient(err) || ctx.Err() != nil || pollErrs >= maxPollErrors {
				return nil, err
			}
			pollErrs++
		} else {
			pollErrs = 0
		}
		if !ready {
			delay = min(delay*3/2, d.poll*MaxPollFactor)
		}
		next := delay
		if ready && pollErrs == 0 && target == progressURL {
			next = 0 // download at once: the progress poll already waited
		}
		c.waiting(next)
		timer.Reset(next)
	}
}

// polled reads one poll answer: done with a result or a final error, or
// not done (ready says whether to download next); err is a transient
// failure to retry.
func (d *DatasetScrape) polled(ans *answer, id string, ready bool) (res *Result, done, nowReady bool, err error) {
	st := ""
	if isObject(ans.body) { // a download of items is an array: not read twice more for a status
		st = jsonscan.Field(ans.body, "status")
	}
	switch {
	case ans.status == http.StatusOK && !ready: // progress
		switch st {
		case "ready":
			return nil, false, true, nil
		case "failed", "cancelled", "canceled":
			return nil, true, false, &Error{Outcome: OutcomeSnapshot, Status: ans.status, Retryable: true,
				Message: fmt.Sprintf("snapshot %s %s: %s", id, st, truncate(string(ans.body)))}
		case "starting", "running", "building", "collecting", "digesting":
			return nil, false, false, nil
		}
		return nil, true, false, malformed(ans, fmt.Errorf("progress of snapshot %s: %s", id, snippet(ans.body)))
	case ans.status == http.StatusAccepted || ans.status == http.StatusOK && notReady(ans.body):
		// The documented not-ready download, as 202 or as 200 with a
		// status body: still building, poll it again.
		return nil, false, true, nil
	case ans.status == http.StatusOK:
		r, err := itemsResult(ans)
		return r, true, true, err
	case ans.status == http.StatusBadRequest && strings.Contains(strings.ToLower(string(ans.body)), "empty"):
		return &Result{Status: ans.status}, true, true, nil // "snapshot is empty": nothing collected
	case ans.status == http.StatusBadRequest || ans.status == http.StatusNotFound:
		e := statusError(ans)
		e.Outcome, e.Retryable = OutcomeSnapshot, true
		e.Message = fmt.Sprintf("snapshot %s: %s", id, e.Message)
		return nil, true, ready, e
	}
	e := statusError(ans)
	return nil, !transient(e), ready, e
}

// earlyRows is the result of a first download that found the rows: a
// 200 array of at least one row, the only answer a snapshot that is not
// ready cannot give (an empty one is documented as a 400, so an empty
// array is read again once progress says ready).
func earlyRows(ans *answer) (*Result, bool) {
	if ans.status != http.StatusOK || isObject(ans.body) {
		return nil, false
	}
	res, err := itemsResult(ans)
	if err != nil {
		return nil, false
	}
	if len(res.Items) == 0 {
		res.buf = nil // the answer's: its caller releases it
		res.Release()
		return nil, false
	}
	return res, true
}

// notReady reports a download answer that is a status object instead of
// the rows: {"status": "building"|"running"|…, "message": …}.
func notReady(body []byte) bool {
	if !isObject(body) || !jsonscan.ValidSyntax(body) {
		return false
	}
	v, ok := jsonscan.Lookup(jsonscan.Bytes(body), "status")
	return ok && v[0] == '"'
}

// isObject reports whether body starts as a JSON object: only an object
// can be a status body, and the check spares a snapshot's download of
// items (an array, often megabytes) two whole validations before the one
// that splits it.
func isObject(body []byte) bool {
	s := jsonscan.TrimSpace(jsonscan.Bytes(body))
	return s != "" && s[0] == '{'
}

// onlyInput returns the array of a body that is exactly {"input": [...]}
// (one member), and whether it is one.
func onlyInput(body []byte) ([]byte, bool) {
	s := jsonscan.Bytes(body)
	if !jsonscan.ValidSyntax(body) {
		return nil, false
	}
	s = jsonscan.TrimSpace(s)
	if s[0] != '{' {
		return nil, false
	}
	k, v, next, ok := jsonscan.NextMember(s, 1)
	if !ok || k != "input" || v[0] != '[' {
		return nil, false
	}
	if _, _, _, more := jsonscan.NextMember(s, next); more {
		return nil, false
	}
	return []byte(v), true
}

// scrapeBody is the request body of a call and its number of inputs: the
// call body, or {"input": [...]} around a bare array.
func scrapeBody(body any) ([]byte, int, error) {
	raw, err := encodeBody(body)
	if err != nil {
		return nil, 0, err
	}
	root := ""
	if jsonscan.ValidSyntax(raw) {
		root = jsonscan.TrimSpace(jsonscan.Bytes(raw))
	}
	switch {
	case root != "" && root[0] == '[':
		raw, err = json.Marshal(map[string]json.RawMessage{"input": raw})
		if err != nil {
			return nil, 0, fmt.Errorf("encoding scrape body: %w", err)
		}
		root = jsonscan.Bytes(raw)
	case root == "" || root[0] != '{':
		return nil, 0, fmt.Errorf("scrape body must be an object with an \"input\" array, got %s", snippet(raw))
	}
	inputs, ok := jsonscan.Lookup(root, "input")
	if !ok || inputs[0] != '[' {
		return nil, 0, errors.New("scrape body has no \"input\" array")
	}
	n := 0
	for i := 1; ; n++ {
		_, next, more := jsonscan.NextElem(inputs, i)
		if !more {
			break
		}
		i = next
	}
	if n == 0 {
		return nil, 0, errors.New("scrape body has no inputs")
	}
	return raw, n, nil
}
