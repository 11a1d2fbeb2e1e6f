package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// webhookSuites are the cases of store.Webhooks.
var webhookSuites = []suite{
	{"webhook_endpoints", testWebhookEndpoints},
	{"webhook_rotate_disable", testWebhookRotateDisable},
	{"webhook_delete", testWebhookDelete},
	{"webhook_claim_finish", testWebhookClaimFinish},
	{"webhook_claim_concurrent", testWebhookClaimConcurrent},
	{"webhook_list_resend", testWebhookListResend},
	{"webhook_prune", testWebhookPrune},
}

func endpoint(id, account string, at time.Time) store.WebhookEndpoint {
	return store.WebhookEndpoint{ID: id, AccountID: account, URL: "https://hooks.example.com/" + id,
		Events: []string{"run.completed", "run.failed"}, Secret: "whsec_" + id, CreatedAt: at}
}

func delivery(id, endpoint, account string, at time.Time) store.WebhookDelivery {
	return store.WebhookDelivery{ID: id, EndpointID: endpoint, AccountID: account, Event: "run.completed",
		Payload: []byte(`{"type":"run.completed","data":{"id":"` + id + `"}}`), Status: store.DeliveryPending,
		NextAt: at, CreatedAt: at}
}

func mustEndpoint(t *testing.T, s store.Store, e store.WebhookEndpoint) {
	t.Helper()
	if err := s.CreateWebhook(ctx(t), e); err != nil {
		t.Fatalf("CreateWebhook(%s): %v", e.ID, err)
	}
}

func mustEnqueue(t *testing.T, s store.Store, ds ...store.WebhookDelivery) {
	t.Helper()
	if err := s.EnqueueDeliveries(ctx(t), ds); err != nil {
		t.Fatalf("EnqueueDeliveries: %v", err)
	}
}

func ids[T any](xs []T, id func(T) string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = id(x)
	}
	return out
}

func deliveryIDs(ds []store.WebhookDelivery) []string {
	return ids(ds, func(d store.WebhookDelivery) string { return d.ID })
}

func testWebhookEndpoints(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustAccount(t, s, "other", 0)
	if err := s.CreateWebhook(ctx(t), endpoint("wh_x", "nobody", base)); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("CreateWebhook for an unknown account: %v, want ErrNotFound", err)
	}
	for i, id := range []string{"wh_b", "wh_a", "wh_c"} {
		acct := "acme"
		if id == "wh_c" {
			acct = "other"
		}
		mustEndpoint(t, s, endpoint(id, acct, base.Add(time.Duration(i)*time.Second)))
	}
	if err := s.CreateWebhook(ctx(t), endpoint("wh_a", "acme", base)); !errors.Is(err, store.ErrExists) {
		t.Errorf("CreateWebhook with a taken id: %v, want ErrExists", err)
	}
	got, err := s.GetWebhook(ctx(t), "wh_a")
	if err != nil {
		t.Fatalf("GetWebhook: %v", err)
	}
	if got.AccountID != "acme" || got.URL != "https://hooks.example.com/wh_a" || got.Secret != "whsec_wh_a" ||
		!slices.Equal(got.Events, []string{"run.completed", "run.failed"}) || got.DisabledAt != nil || got.PreviousSecret != "" {
		t.Errorf("GetWebhook = %+v", got)
	}
	checkTime(t, "created_at", got.CreatedAt, base.Add(time.Second))
	if _, err := s.GetWebhook(ctx(t), "wh_none"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetWebhook(unknown): %v, want ErrNotFound", err)
	}
	list, err := s.ListWebhooks(ctx(t), "acme")
	if err != nil {
		t.Fatalf("ListWebhooks: %v", err)
	}
	if g := ids(list, func(e store.WebhookEndpoint) string { return e.ID }); !slices.Equal(g, []string{"wh_b", "wh_a"}) {
		t.Errorf("ListWebhooks(acme) = %v, want [wh_b wh_a] (creation order)", g)
	}
	if list, err := s.ListWebhooks(ctx(t), "nobody"); err != nil || len(list) != 0 {
		t.Errorf("ListWebhooks(nobody) = %v, %v; want none", list, err)
	}
}

func testWebhookRotateDisable(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustEndpoint(t, s, endpoint("wh_1", "acme", base))
	until := base.Add(24 * time.Hour)
	e, err := s.RotateWebhookSecret(ctx(t), "wh_1", "whsec_new", until)
	if err != nil {
		t.Fatalf("RotateWebhookSecret: %v", err)
	}
	if e.Secret != "whsec_new" || e.PreviousSecret != "whsec_wh_1" {
		t.Errorf("after rotation secrets = %q, %q", e.Secret, e.PreviousSecret)
	}
	checkTime(t, "previous_until", e.PreviousUntil, until)
	if got, _ := s.GetWebhook(ctx(t), "wh_1"); got.Secret != "whsec_new" || got.PreviousSecret != "whsec_wh_1" {
		t.Errorf("stored secrets = %q, %q", got.Secret, got.PreviousSecret)
	}
	if _, err := s.RotateWebhookSecret(ctx(t), "wh_none", "whsec_x", until); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("RotateWebhookSecret(unknown): %v, want ErrNotFound", err)
	}
	if err := s.DisableWebhook(ctx(t), "wh_1", base.Add(time.Hour), "410 Gone"); err != nil {
		t.Fatalf("DisableWebhook: %v", err)
	}
	if err := s.DisableWebhook(ctx(t), "wh_1", base.Add(2*time.Hour), "again"); err != nil {
		t.Fatalf("DisableWebhook again: %v", err)
	}
	got, _ := s.GetWebhook(ctx(t), "wh_1")
	if got.DisabledAt == nil || got.DisabledReason != "410 Gone" {
		t.Fatalf("disabled = %v %q, want the first disabling kept", got.DisabledAt, got.DisabledReason)
	}
	checkTime(t, "disabled_at", *got.DisabledAt, base.Add(time.Hour))
	if err := s.DisableWebhook(ctx(t), "wh_none", base, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DisableWebhook(unknown): %v, want ErrNotFound", err)
	}
}

func testWebhookDelete(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustEndpoint(t, s, endpoint("wh_1", "acme", base))
	mustEndpoint(t, s, endpoint("wh_2", "acme", base))
	mustEnqueue(t, s, delivery("msg_1", "wh_1", "acme", base), delivery("msg_2", "wh_2", "acme", base))
	if err := s.DeleteWebhook(ctx(t), "wh_1"); err != nil {
		t.Fatalf("DeleteWebhook: %v", err)
	}
	if err := s.DeleteWebhook(ctx(t), "wh_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("DeleteWebhook twice: %v, want ErrNotFound", err)
	}
	if _, err := s.GetWebhook(ctx(t), "wh_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetWebhook after delete: %v, want ErrNotFound", err)
	}
	if _, err := s.GetDelivery(ctx(t), "msg_1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("GetDelivery of a deleted endpoint: %v, want ErrNotFound", err)
	}
	ds, err := s.ClaimDeliveries(ctx(t), base, time.Minute, 10)
	if err != nil || !slices.Equal(deliveryIDs(ds), []string{"msg_2"}) {
		t.Errorf("ClaimDeliveries after delete = %v, %v; want only msg_2", deliveryIDs(ds), err)
	}
	if list, _ := s.ListDeliveries(ctx(t), "acme", "", 10); !slices.Equal(deliveryIDs(list), []string{"msg_2"}) {
		t.Errorf("ListDeliveries after delete = %v, want [msg_2]", deliveryIDs(list))
	}
}

func testWebhookClaimFinish(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustEndpoint(t, s, endpoint("wh_1", "acme", base))
	mustEnqueue(t, s,
		delivery("msg_late", "wh_1", "acme", base.Add(time.Hour)),
		delivery("msg_2", "wh_1", "acme", base.Add(2*time.Second)),
		delivery("msg_1", "wh_1", "acme", base.Add(time.Second)),
	)
	if err := s.EnqueueDeliveries(ctx(t), []store.WebhookDelivery{delivery("msg_new", "wh_1", "acme", base), delivery("msg_1", "wh_1", "acme", base)}); !errors.Is(err, store.ErrExists) {
		t.Errorf("EnqueueDeliveries with a taken id: %v, want ErrExists", err)
	}
	if _, err := s.GetDelivery(ctx(t), "msg_new"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused batch stored msg_new: %v", err)
	}
	now := base.Add(5 * time.Second)
	ds, err := s.ClaimDeliveries(ctx(t), now, time.Minute, 1)
	if err != nil || !slices.Equal(deliveryIDs(ds), []string{"msg_1"}) {
		t.Fatalf("ClaimDeliveries(limit 1) = %v, %v; want the earliest due, msg_1", deliveryIDs(ds), err)
	}
	d := ds[0]
	if string(d.Payload) != `{"type":"run.completed","data":{"id":"msg_1"}}` || d.EndpointID != "wh_1" || d.AccountID != "acme" ||
		d.Event != "run.completed" || d.Attempts != 0 || d.Status != store.DeliveryPending {
		t.Errorf("claimed delivery = %+v", d)
	}
	checkTime(t, "leased_until", d.LeasedUntil, now.Add(time.Minute))
	ds, _ = s.ClaimDeliveries(ctx(t), now, time.Minute, 10)
	if !slices.Equal(deliveryIDs(ds), []string{"msg_2"}) {
		t.Errorf("second claim = %v, want [msg_2] (msg_1 leased, msg_late not due)", deliveryIDs(ds))
	}
	// A failed first attempt: retry later.
	fail := store.DeliveryOutcome{ID: "msg_1", Attempt: 1, At: now, StatusCode: 500, Error: "HTTP 500",
		Status: store.DeliveryPending, NextAt: now.Add(5 * time.Second)}
	if err := s.FinishDelivery(ctx(t), fail); err != nil {
		t.Fatalf("FinishDelivery: %v", err)
	}
	if err := s.FinishDelivery(ctx(t), fail); !errors.Is(err, store.ErrStaleClaim) {
		t.Errorf("FinishDelivery of the same attempt twice: %v, want ErrStaleClaim", err)
	}
	got, err := s.GetDelivery(ctx(t), "msg_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.Attempts != 1 || got.Status != store.DeliveryPending || got.LastStatusCode != 500 || got.LastError != "HTTP 500" || got.LastAttemptAt == nil {
		t.Errorf("after a failed attempt = %+v", got)
	}
	checkTime(t, "next_at", got.NextAt, now.Add(5*time.Second))
	if !got.LeasedUntil.IsZero() && got.LeasedUntil.After(now) {
		t.Errorf("lease still held after FinishDelivery: %v", got.LeasedUntil)
	}
	if ds, _ := s.ClaimDeliveries(ctx(t), now.Add(4*time.Second), time.Minute, 10); len(ds) != 0 {
		t.Errorf("claim before the retry is due = %v, want none", deliveryIDs(ds))
	}
	ds, _ = s.ClaimDeliveries(ctx(t), now.Add(5*time.Second), time.Minute, 10)
	if !slices.Equal(deliveryIDs(ds), []string{"msg_1"}) || ds[0].Attempts != 1 {
		t.Fatalf("claim at the retry = %+v, want msg_1 with 1 attempt", ds)
	}
	ok := store.DeliveryOutcome{ID: "msg_1", Attempt: 2, At: now.Add(5 * time.Second), StatusCode: 204, Status: store.DeliverySucceeded}
	if err := s.FinishDelivery(ctx(t), ok); err != nil {
		t.Fatalf("FinishDelivery(success): %v", err)
	}
	got, _ = s.GetDelivery(ctx(t), "msg_1")
	if got.Status != store.DeliverySucceeded || got.Attempts != 2 || got.LastStatusCode != 204 || got.LastError != "" {
		t.Errorf("after success = %+v", got)
	}
	// A lease that ran out: another worker claims the delivery, and the
	// first worker's late report is refused.
	ds, _ = s.ClaimDeliveries(ctx(t), now.Add(2*time.Minute), time.Minute, 10)
	if !slices.Equal(deliveryIDs(ds), []string{"msg_2"}) {
		t.Fatalf("claim after msg_2's lease ran out = %v, want [msg_2]", deliveryIDs(ds))
	}
	if err := s.FinishDelivery(ctx(t), store.DeliveryOutcome{ID: "msg_2", Attempt: 1, At: now, Status: store.DeliveryFailed, Error: "x"}); err != nil {
		t.Fatalf("FinishDelivery(msg_2): %v", err)
	}
	if err := s.FinishDelivery(ctx(t), store.DeliveryOutcome{ID: "msg_2", Attempt: 1, At: now, Status: store.DeliverySucceeded}); !errors.Is(err, store.ErrStaleClaim) {
		t.Errorf("the first worker's late report: %v, want ErrStaleClaim", err)
	}
	if got, _ := s.GetDelivery(ctx(t), "msg_2"); got.Status != store.DeliveryFailed {
		t.Errorf("msg_2 = %s, want failed", got.Status)
	}
	if err := s.FinishDelivery(ctx(t), store.DeliveryOutcome{ID: "msg_none", Attempt: 1, Status: store.DeliveryFailed}); !errors.Is(err, store.ErrStaleClaim) && !errors.Is(err, store.ErrNotFound) {
		t.Errorf("FinishDelivery(unknown): %v", err)
	}
}

// testWebhookClaimConcurrent claims from many goroutines at once: every
// due delivery is handed out exactly once.
func testWebhookClaimConcurrent(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustEndpoint(t, s, endpoint("wh_1", "acme", base))
	const n = 60
	var ds []store.WebhookDelivery
	for i := range n {
		ds = append(ds, delivery(fmt.Sprintf("msg_%03d", i), "wh_1", "acme", base.Add(time.Duration(i)*time.Millisecond)))
	}
	mustEnqueue(t, s, ds...)
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				got, err := s.ClaimDeliveries(ctx(t), base.Add(time.Second), time.Minute, 4)
				if err != nil {
					t.Errorf("ClaimDeliveries: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, d := range got {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("%d deliveries claimed, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("%s claimed %d times", id, c)
		}
	}
}

func testWebhookListResend(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustAccount(t, s, "other", 0)
	mustEndpoint(t, s, endpoint("wh_1", "acme", base))
	mustEndpoint(t, s, endpoint("wh_2", "acme", base))
	mustEndpoint(t, s, endpoint("wh_3", "other", base))
	mustEnqueue(t, s,
		delivery("msg_a", "wh_1", "acme", base),
		delivery("msg_b", "wh_2", "acme", base.Add(time.Second)),
		delivery("msg_c", "wh_1", "acme", base.Add(2*time.Second)),
		delivery("msg_d", "wh_3", "other", base.Add(3*time.Second)),
	)
	for _, tc := range []struct {
		account, endpoint string
		limit             int
		want              []string
	}{
		{"acme", "", 10, []string{"msg_c", "msg_b", "msg_a"}},
		{"acme", "", 2, []string{"msg_c", "msg_b"}},
		{"acme", "wh_1", 10, []string{"msg_c", "msg_a"}},
		{"acme", "wh_3", 10, nil},
		{"other", "", 10, []string{"msg_d"}},
	} {
		got, err := s.ListDeliveries(ctx(t), tc.account, tc.endpoint, tc.limit)
		if err != nil || !slices.Equal(deliveryIDs(got), tc.want) && !(len(got) == 0 && len(tc.want) == 0) {
			t.Errorf("ListDeliveries(%s, %q, %d) = %v, %v; want %v", tc.account, tc.endpoint, tc.limit, deliveryIDs(got), err, tc.want)
		}
	}
	// A failed delivery resent: pending again, due now, same payload and attempts.
	if _, err := s.ClaimDeliveries(ctx(t), base.Add(time.Minute), time.Minute, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishDelivery(ctx(t), store.DeliveryOutcome{ID: "msg_a", Attempt: 1, At: base.Add(time.Minute), StatusCode: 404, Error: "HTTP 404", Status: store.DeliveryFailed}); err != nil {
		t.Fatal(err)
	}
	at := base.Add(time.Hour)
	d, err := s.ResendDelivery(ctx(t), "msg_a", at)
	if err != nil {
		t.Fatalf("ResendDelivery: %v", err)
	}
	if d.Status != store.DeliveryPending || d.Attempts != 1 || d.ID != "msg_a" || string(d.Payload) != `{"type":"run.completed","data":{"id":"msg_a"}}` {
		t.Errorf("resent = %+v", d)
	}
	checkTime(t, "next_at", d.NextAt, at)
	ds, _ := s.ClaimDeliveries(ctx(t), at, time.Minute, 10)
	if !slices.Contains(deliveryIDs(ds), "msg_a") {
		t.Errorf("claim after resend = %v, want msg_a among them", deliveryIDs(ds))
	}
	// A resend while a lease holds does not hand the delivery out twice.
	if _, err := s.ResendDelivery(ctx(t), "msg_a", at); err != nil {
		t.Fatal(err)
	}
	if ds, _ := s.ClaimDeliveries(ctx(t), at, time.Minute, 10); slices.Contains(deliveryIDs(ds), "msg_a") {
		t.Errorf("a leased delivery was claimed again after a resend")
	}
	if _, err := s.ResendDelivery(ctx(t), "msg_none", at); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("ResendDelivery(unknown): %v, want ErrNotFound", err)
	}
}

// testWebhookPrune: finished deliveries older than the cut are deleted,
// pending ones and newer ones stay; a resent delivery is pending again
// and stays.
func testWebhookPrune(t *testing.T, open func(t *testing.T) store.Store) {
	s := open(t)
	mustAccount(t, s, "acme", 0)
	mustEndpoint(t, s, endpoint("wh_1", "acme", base))
	mustEnqueue(t, s,
		delivery("msg_old_ok", "wh_1", "acme", base),
		delivery("msg_old_failed", "wh_1", "acme", base),
		delivery("msg_old_resent", "wh_1", "acme", base),
		delivery("msg_new_ok", "wh_1", "acme", base),
		delivery("msg_pending", "wh_1", "acme", base),
	)
	if _, err := s.ClaimDeliveries(ctx(t), base, time.Minute, 10); err != nil {
		t.Fatal(err)
	}
	finish := func(id, status string, at time.Time) {
		t.Helper()
		o := store.DeliveryOutcome{ID: id, Attempt: 1, At: at, Status: status, StatusCode: 200}
		if status == store.DeliveryPending {
			o.StatusCode, o.Error, o.NextAt = 500, "HTTP 500", at.Add(time.Hour)
		}
		if err := s.FinishDelivery(ctx(t), o); err != nil {
			t.Fatal(err)
		}
	}
	finish("msg_old_ok", store.DeliverySucceeded, base.Add(time.Hour))
	finish("msg_old_failed", store.DeliveryFailed, base.Add(time.Hour))
	finish("msg_old_resent", store.DeliveryFailed, base.Add(time.Hour))
	finish("msg_new_ok", store.DeliverySucceeded, base.Add(3*time.Hour))
	finish("msg_pending", store.DeliveryPending, base.Add(time.Hour))
	if _, err := s.ResendDelivery(ctx(t), "msg_old_resent", base.Add(90*time.Minute)); err != nil {
		t.Fatal(err)
	}
	cut := base.Add(2 * time.Hour)
	n, err := s.PruneDeliveries(ctx(t), cut, 1)
	if err != nil || n != 1 {
		t.Fatalf("PruneDeliveries(limit 1) = %d, %v; want 1", n, err)
	}
	n, err = s.PruneDeliveries(ctx(t), cut, 10)
	if err != nil || n != 1 {
		t.Fatalf("PruneDeliveries = %d, %v; want the other old finished one", n, err)
	}
	if n, _ := s.PruneDeliveries(ctx(t), cut, 10); n != 0 {
		t.Errorf("a third PruneDeliveries deleted %d", n)
	}
	for _, id := range []string{"msg_old_ok", "msg_old_failed"} {
		if _, err := s.GetDelivery(ctx(t), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s after prune: %v, want ErrNotFound", id, err)
		}
	}
	list, _ := s.ListDeliveries(ctx(t), "acme", "", 10)
	if got := deliveryIDs(list); len(got) != 3 || !slices.Contains(got, "msg_new_ok") || !slices.Contains(got, "msg_pending") || !slices.Contains(got, "msg_old_resent") {
		t.Errorf("after prune the log lists %v", got)
	}
	if err := s.DeleteWebhook(ctx(t), "wh_1"); err != nil {
		t.Errorf("DeleteWebhook after a prune: %v", err)
	}
}
