package cache

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"socialrouter/caddymodule/registry"
	"socialrouter/caddymodule/store/badger"
)

func openCache(t *testing.T) *Cache {
	t.Helper()
	st, err := badger.Open(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return New(st, 0, time.Minute)
}

func svc(gen string) *registry.Service {
	return &registry.Service{Key: "pro_net/profile.info", CacheGen: gen, Cache: &registry.Cache{Keep: 3600}}
}

// TestKeys: a key names the record shape, the service, the input (in the
// form inputs match in) and the options; a request key also the order of
// its inputs and its limit.
func TestKeys(t *testing.T) {
	base := InputKey(svc("g1"), "https://x/in/a", map[string]any{"e": true})
	cases := []struct {
		name string
		key  string
		same bool
	}{
		{"case and trailing slash", InputKey(svc("g1"), "HTTPS://X/in/a/", map[string]any{"e": true}), true},
		{"another shape", InputKey(svc("g2"), "https://x/in/a", map[string]any{"e": true}), false},
		{"other options", InputKey(svc("g1"), "https://x/in/a", map[string]any{"e": false}), false},
		{"another input", InputKey(svc("g1"), "https://x/in/b", map[string]any{"e": true}), false},
		{"a whole request", RequestKey(svc("g1"), []string{"https://x/in/a"}, map[string]any{"e": true}, 0), false},
	}
	for _, c := range cases {
		if (c.key == base) != c.same {
			t.Errorf("%s: same key %v, want %v", c.name, c.key == base, c.same)
		}
	}
	if RequestKey(svc("g1"), []string{"a", "b"}, nil, 5) == RequestKey(svc("g1"), []string{"b", "a"}, nil, 5) ||
		RequestKey(svc("g1"), []string{"a"}, nil, 5) == RequestKey(svc("g1"), []string{"a"}, nil, 6) {
		t.Error("a request key ignores the order of inputs or the limit")
	}
}

// TestServes: an entry serves a call that needs no more records than it
// holds, or all when it is complete, and a pin only from its own offer.
func TestServes(t *testing.T) {
	recs := []json.RawMessage{[]byte(`{}`), []byte(`{}`)}
	pin := &registry.Offer{ID: "source_a/actor_1"}
	cases := []struct {
		name string
		e    Entry
		need int
		pin  *registry.Offer
		want bool
	}{
		{"complete, all wanted", Entry{Offer: "source_b/pro_net", Complete: true, Records: recs}, 0, nil, true},
		{"window 2, 2 wanted", Entry{Offer: "source_b/pro_net", Window: 2, Records: recs}, 2, nil, true},
		{"window 2, 3 wanted", Entry{Offer: "source_b/pro_net", Window: 2, Records: recs}, 3, nil, false},
		{"window 2, all wanted", Entry{Offer: "source_b/pro_net", Window: 2, Records: recs}, 0, nil, false},
		{"pinned to another offer", Entry{Offer: "source_b/pro_net", Complete: true, Records: recs}, 0, pin, false},
		{"pinned to its offer", Entry{Offer: "source_a/actor_1", Complete: true, Records: recs}, 0, pin, true},
	}
	for _, c := range cases {
		if got := c.e.Serves(c.need, c.pin); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// put encodes e and keeps it, as a call whose settle did not store it.
func put(c *Cache, ctx context.Context, key string, svc *registry.Service, e *Entry) error {
	se, ok, err := c.Encode(key, svc, e)
	if !ok {
		return err
	}
	return c.Keep(ctx, se)
}

// TestGetMaxAge: an entry is served within the caller's max age only.
func TestGetMaxAge(t *testing.T) {
	c := openCache(t)
	ctx := t.Context()
	s := svc("g")
	at := time.Now().UTC().Add(-10 * time.Second)
	if err := put(c, ctx, "k", s, &Entry{Offer: "o", At: at, Complete: true, Records: []json.RawMessage{[]byte(`{"a":1}`)}}); err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if _, ok := c.Get(ctx, "k", now, 5*time.Second); ok {
		t.Error("a 10 s old entry served to max-age 5")
	}
	e, ok := c.Get(ctx, "k", now, 60*time.Second)
	if !ok || string(e.Records[0]) != `{"a":1}` || !e.At.Equal(at) {
		t.Errorf("max-age 60: %+v, %v", e, ok)
	}
	if err := put(c, ctx, "empty", s, &Entry{Offer: "o", At: now}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(ctx, "empty", now, time.Minute); ok {
		t.Error("an entry without records was stored")
	}
}

// TestFlights: of calls leading one key at once, one leads and the others
// get what it lands; a leader that lands nothing sends them to live work.
func TestFlights(t *testing.T) {
	for _, landed := range []bool{true, false} {
		c := openCache(t)
		ctx := t.Context()
		var leaders, served, failed atomic.Int32
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				f := c.Lead(ctx, "k", time.Now())
				if f.Leader() {
					leaders.Add(1)
					time.Sleep(50 * time.Millisecond)
					var e *Entry
					if landed {
						e = &Entry{Offer: "o", At: time.Now(), Complete: true, Records: []json.RawMessage{[]byte(`{}`)}}
					}
					f.Land(ctx, e)
					return
				}
				if _, ok := f.Wait(ctx); ok {
					served.Add(1)
				} else {
					failed.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		// A call that came after the landing leads a flight of its own.
		if leaders.Load() < 1 || int(leaders.Load()+served.Load()+failed.Load()) != 16 {
			t.Fatalf("landed %v: %d leaders, %d served, %d failed", landed, leaders.Load(), served.Load(), failed.Load())
		}
		if landed && (leaders.Load() > 2 || failed.Load() != 0) || !landed && served.Load() != 0 {
			t.Errorf("landed %v: %d leaders, %d served, %d failed", landed, leaders.Load(), served.Load(), failed.Load())
		}
	}
}
