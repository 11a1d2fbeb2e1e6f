package settle

import (
	"encoding/json"
	"fmt"
	"time"

	"socialrouter/caddymodule/runs"
)

// ExpireDoc returns the stored document of a run whose records
// run_retention deletes: the run of doc (a stored document, plain JSON)
// with an empty data array, records_expired and expired_at set, and every
// other member, the run's billing facts (status, service, served_by,
// credits_used, pagination counts, timestamps, attempts, scope), as it was.
// Both stores write it, so an expired run reads the same on either.
// already is true, and out nil, when doc is expired already.
func ExpireDoc(doc []byte, at time.Time) (out []byte, already bool, err error) {
	var sr storedRun
	if err := json.Unmarshal(doc, &sr); err != nil {
		return nil, false, fmt.Errorf("decoding run to expire: %v", err)
	}
	if sr.RecordsExpired {
		return nil, true, nil
	}
	r := sr.Run
	r.Data = nil
	r.RecordsExpired = true
	at = Time(at)
	r.ExpiredAt = &at
	if b, ok := runs.AppendRun(nil, &r, nil, true, sr.AccountID, sr.KeyID); ok {
		return b, false, nil
	}
	b, err := runs.AppendJSON(nil, storedRun{Run: r, AccountID: sr.AccountID, KeyID: sr.KeyID}, []json.RawMessage{})
	if err != nil {
		return nil, false, fmt.Errorf("encoding expired run %s: %v", r.ID, err)
	}
	return b, false, nil
}
