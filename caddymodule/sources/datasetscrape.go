package sources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// ProtocolDatasetScrape is the name dataset_scrape sources declare.
const ProtocolDatasetScrape = "dataset_scrape"

// MaxScrapeInputs is the most inputs the upstream accepts in one scrape
// request; larger batches are split into chunks of this size.
const MaxScrapeInputs = 20

// scrapeConcurrency bounds the chunks of one call in flight at once, so one
// large call does not flood the upstream.
const scrapeConcurrency = 4

// maxPollErrors is how many consecutive transient poll failures (network,
// 5xx, 429) are tolerated before a snapshot is given up: the collection is
// paid for, one blip should not throw it away.
const maxPollErrors = 3

// DefaultPollInterval is the wait between progress polls when Config has none.
const DefaultPollInterval = 2 * time.Second

func init() {
	Register(ProtocolDatasetScrape, func(cfg Config) (Client, error) { return NewDatasetScrape(cfg) })
}

// DatasetScrape speaks the dataset-scrape protocol: a synchronous scrape of
// up to 20 inputs that may turn into an asynchronous snapshot (202), then
// progress polls and a snapshot download. It is safe for concurrent use.
type DatasetScrape struct {
	base
	poll time.Duration
}

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

// Do scrapes dataset c.Target for the inputs in c.Body ({"input": [...]},
// other keys kept; a bare array is taken as the inputs), in chunks of at
// most 20, and returns the records in input order. Failures are *Error; a
// failed chunk fails the call, with every snapshot id seen in Handles.
// Chunks run concurrently, so c.Activity must be safe for concurrent use.
func (d *DatasetScrape) Do(ctx context.Context, c Call) (*Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, transportError(ctx, "before upstream request", err)
	}
	bodies, err := scrapeBodies(c.Body)
	if err != nil {
		return nil, invalidBody(err)
	}
	scrapeURL := d.scrapeURL(c)
	if len(bodies) == 1 {
		return d.scrape(ctx, scrapeURL, bodies[0], c.Activity)
	}
	return d.scrapeChunks(ctx, scrapeURL, bodies, c.Activity)
}

// invalidBody is the error of a request body a protocol cannot send.
func invalidBody(err error) *Error {
	return &Error{Outcome: OutcomeInvalidInput, Message: err.Error()}
}

// scrapeURL is the scrape endpoint of call c.
func (d *DatasetScrape) scrapeURL(c Call) string {
	q := url.Values{}
	for k, v := range c.Params {
		q.Set(k, v)
	}
	q.Set("dataset_id", c.Target)
	q.Set("format", "json")
	q.Set("include_errors", "true")
	return d.baseURL + "/datasets/v3/scrape?" + q.Encode()
}

// scrapeChunks runs the chunks of a call of more than one concurrently
// and joins their records in input order.
func (d *DatasetScrape) scrapeChunks(ctx context.Context, scrapeURL string, bodies [][]byte, activity func()) (*Result, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([]*Result, len(bodies))
	var (
		mu       sync.Mutex
		firstErr error
		handles  = make([][]string, len(bodies))
		wg       sync.WaitGroup
		sem      = make(chan struct{}, scrapeConcurrency)
	)
	for i, body := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var (
				r   *Result
				err error
			)
			select {
			case sem <- struct{}{}:
				if err = ctx.Err(); err == nil {
					r, err = d.safeScrape(ctx, scrapeURL, body, activity)
				} else {
					err = transportError(ctx, "before upstream request", err)
				}
				<-sem
			case <-ctx.Done():
				err = transportError(ctx, "before upstream request", ctx.Err())
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				var e *Error
				if errors.As(err, &e) {
					handles[i] = e.Handles
				}
				if firstErr == nil {
					firstErr = err
					cancel()
				}
				return
			}
			results[i] = r
			handles[i] = r.Handles
		}()
	}
	wg.Wait()

	var all []string
	for _, h := range handles {
		all = MergeHandles(all, h...)
	}
	if firstErr != nil {
		var e *Error
		if errors.As(firstErr, &e) {
			e.Handles = all
		}
		return nil, firstErr
	}
	out := &Result{Handles: all}
	n := 0
	for _, r := range results {
		n += len(r.Items)
	}
	out.Items = make([]json.RawMessage, 0, n)
	for _, r := range results {
		out.Items = append(out.Items, r.Items...)
		out.ErrorItems += r.ErrorItems
		out.Status = r.Status
	}
	return out, nil
}

// safeScrape is scrape in a chunk's own goroutine: a panic there would
// kill the process, so it becomes the chunk's failure.
func (d *DatasetScrape) safeScrape(ctx context.Context, scrapeURL string, body []byte, activity func()) (r *Result, err error) {
	defer func() {
		if e := Recovered(recover()); e != nil {
			r, err = nil, e
		}
	}()
	return d.scrape(ctx, scrapeURL, body, activity)
}

// scrape runs one chunk: the scrape request, then, on 202, the snapshot.
func (d *DatasetScrape) scrape(ctx context.Context, scrapeURL string, body []byte, activity func()) (*Result, error) {
	ans, err := d.exchange(ctx, http.MethodPost, scrapeURL, body, activity)
	if err != nil {
		return nil, err
	}
	return d.scraped(ctx, ans, activity)
}

// scraped reads a scrape's answer: its items, or on 202 the snapshot's.
func (d *DatasetScrape) scraped(ctx context.Context, ans *answer, activity func()) (*Result, error) {
	switch ans.status {
	case http.StatusOK:
		return itemsResult(ans)
	case http.StatusAccepted:
		id := gjson.GetBytes(ans.body, "snapshot_id").String()
		if id == "" {
			return nil, malformed(ans, errors.New("202 answer without snapshot_id"))
		}
		r, err := d.snapshot(ctx, id, activity)
		if err != nil {
			return nil, withHandles(err, append([]string{id}, ans.handles...))
		}
		r.Handles = MergeHandles(append([]string{id}, ans.handles...), r.Handles...)
		return r, nil
	default:
		if ans.status >= 200 && ans.status < 300 {
			return nil, &Error{Outcome: OutcomeMalformed, Status: ans.status, Retryable: true, Handles: ans.handles,
				Message: "unexpected success status " + strconv.Itoa(ans.status) + " for a scrape"}
		}
		return nil, statusError(ans)
	}
}

// snapshot waits for snapshot id to be ready, polling its progress, and
// downloads it. Expired (400), unknown (404) or failed snapshots are
// snapshot_failed; the context ending is a timeout.
func (d *DatasetScrape) snapshot(ctx context.Context, id string, activity func()) (*Result, error) {
	progressURL := d.baseURL + "/datasets/v3/progress/" + url.PathEscape(id)
	snapshotURL := d.baseURL + "/datasets/v3/snapshot/" + url.PathEscape(id) + "?format=json"
	timer := time.NewTimer(d.poll)
	defer timer.Stop()
	ready := false
	pollErrs := 0
	for {
		select {
		case <-ctx.Done():
			return nil, transportError(ctx, "waiting for snapshot "+id, ctx.Err())
		case <-timer.C:
		}
		timer.Reset(d.poll)

		target := progressURL
		if ready {
			target = snapshotURL
		}
		// exchange reports activity for every answer, so a slow collection
		// that keeps answering its polls is not mistaken for a stall.
		ans, err := d.exchange(ctx, http.MethodGet, target, nil, activity)
		if err != nil {
			if ctx.Err() == nil && pollErrs < maxPollErrors {
				pollErrs++
				continue
			}
			return nil, err
		}
		switch {
		case ans.status == http.StatusOK && !ready:
			switch st := gjson.GetBytes(ans.body, "status").String(); st {
			case "ready":
				ready = true
				timer.Reset(0) // download at once: the progress poll already waited
			case "failed":
				return nil, &Error{Outcome: OutcomeSnapshot, Status: ans.status, Retryable: true,
					Message: fmt.Sprintf("snapshot %s failed: %s", id, truncate(string(ans.body)))}
			case "starting", "running", "building", "collecting", "digesting":
			default:
				if !gjson.ValidBytes(ans.body) {
					return nil, malformed(ans, fmt.Errorf("progress of snapshot %s: %s", id, snippet(ans.body)))
				}
			}
			pollErrs = 0
		case ans.status == http.StatusOK:
			return itemsResult(ans)
		case ans.status == http.StatusAccepted:
			pollErrs = 0 // snapshot not ready yet: keep polling it
		case ans.status == http.StatusBadRequest || ans.status == http.StatusNotFound:
			e := statusError(ans)
			e.Outcome, e.Retryable = OutcomeSnapshot, true
			e.Message = fmt.Sprintf("snapshot %s: %s", id, e.Message)
			return nil, e
		default:
			e := statusError(ans)
			transient := ans.status >= 500 || ans.status == http.StatusTooManyRequests
			if transient && pollErrs < maxPollErrors {
				pollErrs++
				continue
			}
			return nil, e
		}
	}
}

// scrapeBodies builds the request bodies of a call: the call body with its
// "input" array split into chunks of at most MaxScrapeInputs, every other
// top-level key kept in each chunk.
func scrapeBodies(body any) ([][]byte, error) {
	raw, err := encodeBody(body)
	if err != nil {
		return nil, err
	}
	root := gjson.ParseBytes(raw)
	var inputs gjson.Result
	switch {
	case root.IsArray():
		inputs = root
		raw = nil
	case root.IsObject():
		inputs = root.Get("input")
		if !inputs.IsArray() {
			return nil, errors.New("scrape body has no \"input\" array")
		}
	default:
		return nil, fmt.Errorf("scrape body must be an object with an \"input\" array, got %s", snippet(raw))
	}
	all := inputs.Array()
	if len(all) == 0 {
		return nil, errors.New("scrape body has no inputs")
	}
	if raw != nil && len(all) <= MaxScrapeInputs {
		return [][]byte{raw}, nil
	}
	var rest map[string]json.RawMessage
	if raw != nil {
		if err := json.Unmarshal(raw, &rest); err != nil {
			return nil, fmt.Errorf("decoding scrape body: %w", err)
		}
	} else {
		rest = map[string]json.RawMessage{}
	}
	var out [][]byte
	for start := 0; start < len(all); start += MaxScrapeInputs {
		chunk := all[start:min(start+MaxScrapeInputs, len(all))]
		arr := make([]json.RawMessage, len(chunk))
		for i, in := range chunk {
			arr[i] = json.RawMessage(in.Raw)
		}
		in, err := json.Marshal(arr)
		if err != nil {
			return nil, fmt.Errorf("encoding scrape inputs: %w", err)
		}
		rest["input"] = in
		b, err := json.Marshal(rest)
		if err != nil {
			return nil, fmt.Errorf("encoding scrape body: %w", err)
		}
		out = append(out, b)
	}
	return out, nil
}
