package callbacks

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"socialrouter/caddymodule/sources"
)

// maxPayload bounds a callback's body: the actor platform's default
// payload carries the run object (a few KiB), a notify two fields.
const maxPayload = 1 << 20

// Source is what the handler knows of a source with callbacks.
type Source struct {
	// Protocol is sources.ProtocolActorRun or ProtocolDatasetScrape: the
	// payload's form.
	Protocol string
	// Secret is the source's callback secret (sources.CallbackConfig).
	Secret []byte
}

// Handler serves POST /_sdr/callbacks/{source}/{run}/{batch}/{token}.
type Handler struct {
	// Sources finds a source with callbacks by id (false: none).
	Sources func(id string) (Source, bool)
	Waker   Waker
	Log     *zap.Logger
}

// ServeHTTP authenticates a callback and hands it to the Waker. Refusals
// change nothing and are logged: an unknown source or path, or a token
// that is not the run's and batch's, 404 (the route does not say which);
// a notify without the source's auth_header, 401; a payload that is not
// the upstream's documented one, 400. An authentic callback is answered
// 200 at once, also when it changes nothing (a replay, a batch waiting
// elsewhere), so the upstream does not deliver it again.
func (hd *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeStatus(w, http.StatusMethodNotAllowed, "method_not_allowed", "callbacks are POSTed")
		return
	}
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, sources.CallbackPrefix), "/")
	refuse := func(status int, code, why string, fields ...zap.Field) {
		hd.Log.Warn("callback refused; nothing changes", append(fields, zap.String("reason", why),
			zap.String("remote_addr", r.RemoteAddr), zap.Int("status", status))...)
		writeStatus(w, status, code, "no such callback")
	}
	if len(parts) != 4 {
		refuse(http.StatusNotFound, "not_found", "malformed callback path")
		return
	}
	srcID, runID, token := parts[0], parts[1], parts[3]
	batch, err := strconv.Atoi(parts[2])
	at := []zap.Field{zap.String("source", srcID), zap.String("run_id", runID), zap.String("batch", parts[2])}
	src, ok := hd.Sources(srcID)
	switch {
	case !ok:
		refuse(http.StatusNotFound, "not_found", "no source with callbacks by that id", at...)
		return
	case err != nil || batch < 0:
		refuse(http.StatusNotFound, "not_found", "batch is not a number", at...)
		return
	case !sources.CheckCallbackToken(src.Secret, srcID, runID, batch, token):
		refuse(http.StatusNotFound, "not_found", "token is not the run's and batch's", at...)
		return
	case src.Protocol == sources.ProtocolDatasetScrape &&
		subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), []byte(sources.CallbackAuth(src.Secret, srcID))) != 1:
		refuse(http.StatusUnauthorized, "unauthorized", "Authorization is not the auth_header the notify was asked to send", at...)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err == nil && len(body) > maxPayload {
		err = errors.New("payload larger than 1 MiB")
	}
	var h sources.Handle
	var st sources.JobState
	if err == nil {
		h, st, err = parsePayload(src.Protocol, body)
	}
	if err != nil {
		hd.Log.Warn("callback refused: payload unreadable; nothing changes", append(at, zap.Error(err))...)
		writeStatus(w, http.StatusBadRequest, "invalid_payload", err.Error())
		return
	}
	at = append(at, zap.String("handle", h.String()), zap.String("finished", string(st)))
	switch err := hd.Waker.Wake(r.Context(), srcID, runID, batch, h, st); {
	case err == nil:
		hd.Log.Debug("callback: batch woken", at...)
	case errors.Is(err, ErrReplayed), errors.Is(err, ErrNoWaiter):
		hd.Log.Info("callback changes nothing", append(at, zap.Error(err))...)
	case errors.Is(err, ErrMismatch):
		hd.Log.Warn("callback changes nothing", append(at, zap.Error(err))...)
	default:
		hd.Log.Error("callback not taken; the upstream delivers it again", append(at, zap.Error(err))...)
		writeStatus(w, http.StatusInternalServerError, "internal_error", "the callback could not be taken; deliver it again")
		return
	}
	writeStatus(w, http.StatusOK, "", "")
}

// parsePayload reads a callback's documented payload: the actor
// platform's default webhook payload ({eventType, eventData{actorRunId},
// resource{id, status, defaultDatasetId}}) or a notify ({snapshot_id,
// status}).
func parsePayload(protocol string, body []byte) (sources.Handle, sources.JobState, error) {
	if protocol == sources.ProtocolDatasetScrape {
		var p struct {
			SnapshotID string `json:"snapshot_id"`
			Status     string `json:"status"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			return sources.Handle{}, "", fmt.Errorf("notify payload: %w", err)
		}
		if p.SnapshotID == "" {
			return sources.Handle{}, "", errors.New("notify payload without snapshot_id")
		}
		st, err := sources.SnapshotState(p.Status)
		return sources.Handle{Protocol: protocol, SnapshotID: p.SnapshotID}, st, err
	}
	var p struct {
		EventType string `json:"eventType"`
		EventData struct {
			ActorRunID string `json:"actorRunId"`
		} `json:"eventData"`
		Resource struct {
			ID               string `json:"id"`
			DefaultDatasetID string `json:"defaultDatasetId"`
		} `json:"resource"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return sources.Handle{}, "", fmt.Errorf("webhook payload: %w", err)
	}
	run := p.EventData.ActorRunID
	switch {
	case run == "":
		run = p.Resource.ID
	case p.Resource.ID != "" && p.Resource.ID != run:
		return sources.Handle{}, "", fmt.Errorf("webhook payload names run %q in eventData and %q in resource", run, p.Resource.ID)
	}
	if run == "" {
		return sources.Handle{}, "", errors.New("webhook payload without eventData.actorRunId")
	}
	st, err := sources.ActorRunState(p.EventType)
	return sources.Handle{Protocol: protocol, RunID: run, DatasetID: p.Resource.DefaultDatasetID}, st, err
}

// writeStatus answers {"status":"ok"} or the error.
func writeStatus(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if code == "" {
		_, _ = w.Write([]byte(`{"status":"ok"}`))
		return
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": msg}})
	_, _ = w.Write(b)
}
