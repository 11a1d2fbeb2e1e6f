package sim

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/tidwall/gjson"
)

// MaxScrapeInputs is the most inputs one scrape request may carry, as on
// the real upstream; more is answered 400, which catches clients that do
// not batch.
const MaxScrapeInputs = 20

// snapshotTTL is how long an async snapshot is kept for download.
const snapshotTTL = time.Hour

// DefaultPolls is how many polls an async snapshot needs when the fault
// does not say.
const DefaultPolls = 2

type snapshot struct {
	target  string
	body    []byte
	need    int
	polls   int
	failed  bool
	created time.Time
}

func (s *Sim) scrapeAnswer(r *http.Request, target string, body []byte) answer {
	if !s.authorized(r) {
		return errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token"))
	}
	if target == "" {
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "dataset_id is required"))
	}
	path, ok := s.routes[target]
	if !ok {
		return errAnswer(http.StatusNotFound, scrapeError("dataset_not_found", "dataset does not exist: "+target))
	}
	if !gjson.ValidBytes(body) {
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "body is not valid JSON"))
	}
	root := gjson.ParseBytes(body)
	in := root
	if root.IsObject() {
		in = root.Get("input")
	}
	if !in.IsArray() {
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "body needs an \"input\" array"))
	}
	inputs := in.Array()
	switch {
	case len(inputs) == 0:
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error", "input is empty"))
	case len(inputs) > MaxScrapeInputs:
		return errAnswer(http.StatusBadRequest, scrapeError("validation_error",
			fmt.Sprintf("at most %d inputs per scrape request, got %d", MaxScrapeInputs, len(inputs))))
	}
	fx, err := s.fixture(path)
	if err != nil {
		return errAnswer(http.StatusInternalServerError, scrapeError("internal_error", err.Error()))
	}
	f := s.takeFault(target)
	s.wait(r, f)
	if f.Status != 0 {
		return s.faultAnswer(f, ProtocolDatasetScrape)
	}

	per := 1
	if f.Items > 0 {
		per = f.Items
	} else if s.opts.Items > 0 {
		per = s.opts.Items
	}
	records := make([][]byte, 0, len(inputs)*per)
	for i, input := range inputs {
		raw := []byte(input.Raw)
		for j := range per {
			switch {
			case f.AllErrors || (f.ErrorRecords && i%2 == 1):
				var tmpl []byte
				if len(fx.errs) > 0 {
					tmpl = fx.errs[(i/2)%len(fx.errs)]
				}
				records = append(records, errorRecord(tmpl, raw))
			default:
				records = append(records, setInput(fx.data[(i*per+j)%len(fx.data)], raw))
			}
		}
	}
	out := joinArray(records)
	if f.Async {
		id := newSnapshotID()
		if f.Malformed {
			out = out[:len(out)/2]
		}
		need := f.Polls
		if need == 0 {
			need = DefaultPolls
		}
		s.mu.Lock()
		for k, sn := range s.snapshots {
			if time.Since(sn.created) > snapshotTTL {
				delete(s.snapshots, k)
			}
		}
		s.snapshots[id] = &snapshot{target: target, body: out, need: need, failed: f.SnapshotFailed, created: time.Now()}
		s.mu.Unlock()
		b, _ := json.Marshal(map[string]string{"snapshot_id": id,
			"message": "Your request is still in progress and may take a few minutes. Use the snapshot id to monitor its progress."})
		f.Malformed = false
		return s.dataAnswer(http.StatusAccepted, b, f)
	}
	return s.dataAnswer(http.StatusOK, out, f)
}

// poll counts one poll of a snapshot and says where it stands.
func (s *Sim) poll(id string) (sn *snapshot, status string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, ok := s.snapshots[id]
	if !ok {
		return nil, ""
	}
	sn.polls++
	switch {
	case sn.failed:
		return sn, "failed"
	case sn.polls >= sn.need:
		return sn, "ready"
	case sn.polls == 1:
		return sn, "starting"
	default:
		return sn, "running"
	}
}

func (s *Sim) progress(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	id := r.PathValue("id")
	sn, st := s.poll(id)
	if sn == nil {
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"snapshot_id": id, "dataset_id": sn.target, "status": st})
}

func (s *Sim) snapshotDownload(w http.ResponseWriter, r *http.Request) {
	if !s.authorized(r) {
		errAnswer(http.StatusUnauthorized, scrapeError("unauthorized", "Invalid or missing API token")).write(w, r)
		return
	}
	sn, st := s.poll(r.PathValue("id"))
	switch st {
	case "":
		writeJSON(w, http.StatusNotFound, scrapeError("snapshot_not_found", "Snapshot does not exist"))
	case "failed":
		writeJSON(w, http.StatusBadRequest, scrapeError("snapshot_failed", "Snapshot failed"))
	case "ready":
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(sn.body)
	default:
		writeJSON(w, http.StatusAccepted, map[string]string{"status": st, "message": "Snapshot is not ready yet, try again in 10s"})
	}
}

func newSnapshotID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "s_" + hex.EncodeToString(b[:])
}
