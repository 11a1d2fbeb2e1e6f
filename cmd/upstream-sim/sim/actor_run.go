package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

func (s *Sim) actorRunAnswer(r *http.Request, target string, body []byte) answer {
	if !s.authorized(r) {
		return errAnswer(http.StatusUnauthorized, apiError("user-or-token-not-found", "User was not found or authentication token is not valid"))
	}
	path, ok := s.routes[target]
	if !ok {
		return errAnswer(http.StatusNotFound, apiError("record-not-found", "Actor was not found"))
	}
	if !json.Valid(body) {
		return errAnswer(http.StatusBadRequest, apiError("invalid-input", "Input is not valid JSON"))
	}
	fx, err := s.fixture(path)
	if err != nil {
		return errAnswer(http.StatusInternalServerError, apiError("internal-server-error", err.Error()))
	}
	f := s.takeFault(target)
	if !s.wait(r, f) {
		return errAnswer(http.StatusRequestTimeout, apiError("run-timeout-exceeded", "Actor run did not finish in the given timeout; it keeps running"))
	}
	if f.Status != 0 {
		return s.faultAnswer(f, ProtocolActorRun)
	}

	n := len(fx.data)
	if f.Items > 0 {
		n = f.Items
	} else if s.opts.Items > 0 {
		n = s.opts.Items
	}
	items := make([][]byte, 0, n+1)
	for i := range n {
		if f.AllErrors {
			items = append(items, errorRecord(nil, body))
		} else {
			items = append(items, fx.data[i%len(fx.data)])
		}
	}
	if f.ErrorRecords && !f.AllErrors {
		items = append(items, errorRecord(nil, body))
	}
	if mx, err := strconv.Atoi(r.URL.Query().Get("maxItems")); err == nil && mx > 0 && mx < len(items) {
		items = items[:mx]
	}
	return s.dataAnswer(http.StatusCreated, joinArray(items), f)
}
