package api

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/store"
)

// Idempotency-Key (IETF httpapi draft "The Idempotency-Key HTTP Header
// Field") on the extract and search POSTs: the key, scoped to the account,
// names one call for 24 hours. The same key with the same request answers
// that call's run again without routing or charging anything; with another
// request it is 422; while the first call still runs it is 409 (or, for
// an async call, the running run).
const (
	idempotencyHeader   = "Idempotency-Key"
	replayedHeader      = "Idempotent-Replayed"
	idempotencyLifetime = 24 * time.Hour
	// idempotencyLock is how long a synchronous call holds its key before
	// answering: past it (the node died mid-call) the key is free again.
	// Longer than any sync call (a few offers × the attempt deadline).
	idempotencyLock   = 15 * time.Minute
	maxIdempotencyKey = 255
)

// idempotencyKey reads the header: a structured-field string ("…") as the
// draft writes it, or the bare token many clients send. "" when absent.
func idempotencyKey(h http.Header) (string, *Error) {
	vals := h.Values(idempotencyHeader)
	if len(vals) == 0 {
		return "", nil
	}
	k := strings.TrimSpace(vals[0])
	if len(k) >= 2 && k[0] == '"' && k[len(k)-1] == '"' {
		k = k[1 : len(k)-1]
	}
	bad := len(vals) > 1 || k == "" || len(k) > maxIdempotencyKey
	for i := 0; i < len(k) && !bad; i++ {
		bad = k[i] < 0x20 || k[i] > 0x7e || k[i] == '"' || k[i] == '\\'
	}
	if bad {
		return "", newError(http.StatusBadRequest, "invalid_idempotency_key", typeValidation,
			fmt.Sprintf(`Idempotency-Key must be one string of 1 to %d printable ASCII characters, e.g. Idempotency-Key: "8e03978e-40d5-43e8-bc93-6894a57f9324"`, maxIdempotencyKey))
	}
	return k, nil
}

// fingerprint identifies a request for its key: the route and the body as
// JSON with its top-level keys sorted and its values compacted, so the
// same request sent with other whitespace or key order is the same.
func fingerprint(c *prepared, body map[string]json.RawMessage) [32]byte {
	b, _ := json.Marshal(body) // sorted keys, compacted raw values
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", c.kind, c.svc.Key)
	h.Write(b)
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// claimKey stores the call's key for run id; it returns the key's record
// and whether this call owns it.
func (a *API) claimKey(r *http.Request, key store.Key, idem string, fp [32]byte, id string, async bool) (store.IdempotencyKey, bool, *Error) {
	now := time.Now().UTC()
	rec, created, err := a.Store.PutIdempotencyKey(r.Context(), store.IdempotencyKey{
		AccountID: key.AccountID, Key: idem, Fingerprint: fp, RunID: id, Async: async,
		CreatedAt: now, ExpiresAt: now.Add(idempotencyLifetime), LockedUntil: now.Add(idempotencyLock),
	})
	if err != nil {
		a.Logger.Error("storing an idempotency key", zap.Error(err))
		return rec, false, storeUnavailable()
	}
	return rec, created, nil
}

// endKey records how the call of run id that owns the key answered:
// status when a run was stored, else the key is dropped so a retry runs.
func (a *API) endKey(r *http.Request, key store.Key, idem, id string, stored bool, status int) {
	if idem == "" {
		return
	}
	ctx := r.Context()
	var err error
	if stored {
		err = a.Store.FinishIdempotencyKey(ctx, key.AccountID, idem, id, status)
	} else {
		err = a.Store.DropIdempotencyKey(ctx, key.AccountID, idem, id)
	}
	if err != nil {
		a.Logger.Error("ending an idempotency key", zap.String("run_id", id), zap.Error(err))
	}
}

// errKeyFree is replay's word that the key's run vanished: the caller
// runs the call anew.
var errKeyFree = errors.New("the idempotency key's run is gone")

// replay answers a call whose key is already taken (rec): 422 for another
// request, 409 while a synchronous first call runs, else the first call's
// run, marked Idempotent-Replayed.
func (a *API) replay(w http.ResponseWriter, r *http.Request, key store.Key, rec store.IdempotencyKey, fp [32]byte, async bool) error {
	if rec.Fingerprint != fp {
		newError(http.StatusUnprocessableEntity, "idempotency_key_reused", typeValidation,
			"this Idempotency-Key was used with another request in the last 24 hours: send a new key for a new request").
			with("run_id", rec.RunID).write(w)
		return nil
	}
	inUse := newError(http.StatusConflict, "idempotency_key_in_use", typeValidation,
		"the first call with this Idempotency-Key is still running: retry when it has answered").with("run_id", rec.RunID)
	inUse.RetryAfter = time.Second
	if rec.Status == 0 {
		inUse.write(w)
		return nil
	}
	buf := runBufs.Get(0)
	defer runBufs.Put(buf)
	doc, err := a.Store.GetRunJSON(r.Context(), (*buf)[:0], key.AccountID, rec.RunID)
	*buf = doc
	if errors.Is(err, store.ErrNotFound) && rec.Async {
		ar, aerr := a.Store.GetAsyncRun(r.Context(), key.AccountID, rec.RunID)
		if aerr == nil {
			if !async {
				inUse.write(w)
				return nil
			}
			w.Header().Set(replayedHeader, "true")
			writeAccepted(w, rec.RunID, ar.Doc)
			return nil
		}
		// Settled between the two reads.
		doc, err = a.Store.GetRunJSON(r.Context(), (*buf)[:0], key.AccountID, rec.RunID)
		*buf = doc
	}
	if errors.Is(err, store.ErrNotFound) {
		if derr := a.Store.DropIdempotencyKey(r.Context(), key.AccountID, rec.Key, rec.RunID); derr != nil {
			a.Logger.Error("dropping an idempotency key", zap.Error(derr))
			storeUnavailable().write(w)
			return nil
		}
		return errKeyFree
	}
	if err != nil {
		a.Logger.Error("reading a replayed run", zap.Error(err))
		storeUnavailable().write(w)
		return nil
	}
	w.Header().Set(replayedHeader, "true")
	if rec.Status < 300 {
		writeRaw(w, http.StatusOK, doc)
		return nil
	}
	// A failed sync call: its error again, from the stored run.
	var run struct {
		Error struct {
			Code, Type, Message string
		} `json:"error"`
		Attempts json.RawMessage `json:"attempts"`
	}
	_ = json.Unmarshal(doc, &run)
	attempts := run.Attempts
	if attempts == nil {
		attempts = json.RawMessage("[]")
	}
	newError(rec.Status, run.Error.Code, run.Error.Type, run.Error.Message).
		with("run_id", rec.RunID).with("attempts", attempts).write(w)
	return nil
}
