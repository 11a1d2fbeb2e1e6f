package api

import (
	"context"
	"encoding/json"
	"os"
	"reflect"
	"testing"

	"socialrouter/caddymodule/async"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/runs"
	"socialrouter/caddymodule/store"
)

// TestResumePointFormats: a run stored by 6778575 (resume record format
// 1, testdata/resume_v1.json: the attempts before the one under way only
// in the running document) resumes where it was, and a record written now
// holds those attempts itself: it resumes the same with no document.
func TestResumePointFormats(t *testing.T) {
	b, err := os.ReadFile("testdata/resume_v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Doc    json.RawMessage `json:"doc"`
		Resume json.RawMessage `json:"resume"`
	}
	if err := json.Unmarshal(b, &fx); err != nil {
		t.Fatal(err)
	}
	want := router.Resumed{Offer: "source_a/actor_6", Records: 2,
		Before:  []runs.Attempt{{Offer: "source_a/actor_7", Outcome: outcomeFailedOver}},
		Started: []router.Started{{Offer: "source_a/actor_6", Inputs: []string{"https://www.reddit.com/r/golang"}, Limit: 2, Handle: "HANDLE"}}}
	old, ok := resumePoint(store.AsyncRun{Doc: fx.Doc, Resume: fx.Resume})
	if !ok || !reflect.DeepEqual(old, want) {
		t.Fatalf("format 1: resumePoint = %+v, %v; want %+v", old, ok, want)
	}

	// The same state written now.
	var last async.State
	p := &runProgress{run: &runs.Run{ID: "ext_fixture1"}, life: runs.At(runs.Leased), runCtx: t.Context(),
		progress: func(_ context.Context, s async.State) error { last = s; return nil }}
	a := newTestAPI(t, 0)
	svc, _ := a.Registry.Service("forum_net", "subreddit.posts")
	var o6, o7 = svc.LiveOffers()[0], svc.LiveOffers()[0]
	for _, o := range svc.LiveOffers() {
		switch o.ID {
		case "source_a/actor_6":
			o6 = o
		case "source_a/actor_7":
			o7 = o
		}
	}
	if o6.ID != "source_a/actor_6" || o7.ID != "source_a/actor_7" {
		t.Fatal("the fixture's offers are gone from forum_net/subreddit.posts")
	}
	_ = p.began(t.Context(), router.Begun{Offer: o7, Records: 2})
	_ = p.began(t.Context(), router.Begun{Offer: o6, Records: 2})
	p.started(o6, want.Started[0])
	now, ok := resumePoint(store.AsyncRun{Resume: last.Resume}) // no document
	if !ok || !reflect.DeepEqual(now, want) {
		t.Fatalf("format 2: resumePoint = %+v, %v; want %+v (record %s)", now, ok, want, last.Resume)
	}
	if p.life.State() != runs.Upstream {
		t.Errorf("life at %s after a handle, want upstream", p.life.State())
	}
}
