package dashboard

import "net/http"

// activityLimit is how many entries the activity page shows.
const activityLimit = 200

// activityPage serves GET /activity: the account's latest sign-ins, keys
// created and revoked and limits changed.
func (h *Handler) activityPage(w http.ResponseWriter, r *http.Request, s *Session) {
	list, err := h.Store.ListActivity(r.Context(), s.liveAccount(), activityLimit)
	if err != nil {
		h.failed(w, r, s, "listing activity", err)
		return
	}
	h.render(w, http.StatusOK, "activity", s, view{Title: "Activity", Nav: "activity", Data: list})
}
