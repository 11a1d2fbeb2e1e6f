package badger

import (
	"fmt"
	"testing"
	"time"

	"socialrouter/caddymodule/store"
)

// TestDeleteWebhookInBatches deletes an endpoint with more deliveries than
// one transaction holds, interleaved with another endpoint's: all of its
// own go, none of the other's.
func TestDeleteWebhookInBatches(t *testing.T) {
	s, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := time.Now().UTC()
	if _, err := s.CreateAccount(t.Context(), "acme", 0, now); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"wh_big", "wh_other"} {
		if err := s.CreateWebhook(t.Context(), store.WebhookEndpoint{ID: id, AccountID: "acme", URL: "https://x/" + id, Events: []string{"run.completed"}, Secret: "whsec_x", CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 2*deleteBatch + 500
	var ds []store.WebhookDelivery
	for i := range n {
		ep := "wh_big"
		if i%5 == 0 {
			ep = "wh_other"
		}
		ds = append(ds, store.WebhookDelivery{ID: fmt.Sprintf("msg_%05d", i), EndpointID: ep, AccountID: "acme", Event: "run.completed",
			Payload: []byte(`{}`), Status: store.DeliveryPending, NextAt: now, CreatedAt: now.Add(time.Duration(i) * time.Microsecond)})
		if len(ds) == 500 {
			if err := s.EnqueueDeliveries(t.Context(), ds); err != nil {
				t.Fatal(err)
			}
			ds = nil
		}
	}
	if err := s.DeleteWebhook(t.Context(), "wh_big"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetWebhook(t.Context(), "wh_big"); err == nil {
		t.Error("the endpoint survived")
	}
	left, err := s.ListDeliveries(t.Context(), "acme", "", n)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != n/5 {
		t.Errorf("%d deliveries left, want %d (the other endpoint's)", len(left), n/5)
	}
	for _, d := range left {
		if d.EndpointID != "wh_other" {
			t.Fatalf("delivery %s of %s left", d.ID, d.EndpointID)
		}
	}
	claimed, _ := s.ClaimDeliveries(t.Context(), now, time.Minute, n)
	if len(claimed) != n/5 {
		t.Errorf("%d claimable, want %d", len(claimed), n/5)
	}
}

// TestDeliveryLeasesReleasedAtOpen: a delivery claimed by a process that
// died (the store closed with the lease held) is due again as soon as the
// store reopens, not when the dead lease would have run out.
func TestDeliveryLeasesReleasedAtOpen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, err := s.CreateAccount(t.Context(), "acme", 0, now); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateWebhook(t.Context(), store.WebhookEndpoint{ID: "wh_1", AccountID: "acme", URL: "https://x/wh_1", Events: []string{"run.completed"}, Secret: "whsec_x", CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	if err := s.EnqueueDeliveries(t.Context(), []store.WebhookDelivery{{ID: "msg_1", EndpointID: "wh_1", AccountID: "acme", Event: "run.completed",
		Payload: []byte(`{}`), Status: store.DeliveryPending, NextAt: now, CreatedAt: now}}); err != nil {
		t.Fatal(err)
	}
	if ds, err := s.ClaimDeliveries(t.Context(), now, 2*time.Minute, 10); err != nil || len(ds) != 1 {
		t.Fatalf("first claim = %v, %v", ds, err)
	}
	if ds, _ := s.ClaimDeliveries(t.Context(), now.Add(time.Second), 2*time.Minute, 10); len(ds) != 0 {
		t.Fatalf("a leased delivery was claimed again while its lease runs: %v", ds)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := s.ClaimDeliveries(t.Context(), now.Add(time.Second), 2*time.Minute, 10)
	if err != nil || len(ds) != 1 || ds[0].ID != "msg_1" {
		t.Errorf("after reopening: claim = %v, %v; want msg_1 due again at once", ds, err)
	}
}
