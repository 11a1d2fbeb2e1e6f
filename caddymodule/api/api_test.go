package api

import (
	"crypto/sha256"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"socialrouter/caddymodule/credits"
	"socialrouter/caddymodule/router"
	"socialrouter/caddymodule/store"
	badgerstore "socialrouter/caddymodule/store/badger"
)

// testAPI is an API over the repository's services and a badger store in a
// temporary directory, with account acme holding balance and one key.
type testAPI struct {
	*API
	store  store.Store
	secret string
	key    store.Key
}

func newTestAPI(t testing.TB, balance credits.Micros) *testAPI {
	t.Helper()
	return newTestAPIOn(t, balance, badgerstore.Options{})
}

// newTestAPIOn is newTestAPI on a badger store opened with opts.
func newTestAPIOn(t testing.TB, balance credits.Micros, opts badgerstore.Options) *testAPI {
	t.Helper()
	s, err := badgerstore.Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	now := time.Now().UTC()
	if _, err := s.CreateAccount(t.Context(), "acme", balance, now); err != nil {
		t.Fatal(err)
	}
	secret := "sdr_live_" + strings.Repeat("a", 40)
	k := store.Key{ID: "key_1", AccountID: "acme", Hash: sha256.Sum256([]byte(secret)), Display: "sdr_live_…aaaa", CreatedAt: now}
	if err := s.CreateKey(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	reg := loadRegistry(t)
	a := New(Config{
		Registry: reg, Store: s, KeyPrefix: "sdr", MaxConcurrentRuns: 16, InFlight: NewInFlight(),
		Router:       router.New(router.Config{AttemptTimeout: time.Second, SoftTimeout: time.Second}, nil, router.NewBreakers(), zap.NewNop()),
		SourceStatus: func(string) string { return "active" },
		Logger:       zap.NewNop(),
	})
	return &testAPI{API: a, store: s, secret: secret, key: k}
}

// do sends one request, with the key when auth is set, and returns the
// answer and its decoded error envelope (if any).
func (a *testAPI) do(t *testing.T, method, target, body string, auth bool) (*http.Response, errorBody) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	r := httptest.NewRequest(method, target, rd)
	if auth {
		r.Header.Set("Authorization", "Bearer "+a.secret)
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, r)
	res := rec.Result()
	var e struct {
		Error errorBody `json:"error"`
	}
	if res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("%s %s: Content-Type %q", method, target, res.Header.Get("Content-Type"))
	}
	if res.StatusCode >= 400 {
		if err := json.NewDecoder(res.Body).Decode(&e); err != nil {
			t.Fatalf("%s %s: %d answer is not an error envelope: %v", method, target, res.StatusCode, err)
		}
	}
	return res, e.Error
}

type errorBody struct {
	Code    string `json:"code"`
	Type    string `json:"type"`
	Message string `json:"message"`
}

// TestRouting pins the answer of every route shape: status, error code,
// and the Allow header of a 405.
func TestRouting(t *testing.T) {
	a := newTestAPI(t, credits.PerCredit)
	tests := []struct {
		method, path string
		status       int
		code, allow  string
	}{
		{"GET", "/v1/services", 200, "", ""},
		{"HEAD", "/v1/services", 200, "", ""},
		{"GET", "/v1/services/", 200, "", ""},
		{"POST", "/v1/services", 405, "method_not_allowed", "GET"},
		{"GET", "/v1/services/pro_net", 200, "", ""},
		{"GET", "/v1/services/mars_net", 404, "unknown_platform", ""},
		{"GET", "/v1/services/pro_net/profile.info", 200, "", ""},
		{"GET", "/v1/services/pro_net/profile.infos", 404, "unknown_service", ""},
		{"GET", "/v1/services/pro_net/profile.info/x", 404, "not_found", ""},
		{"GET", "/v1/providers", 200, "", ""},
		{"GET", "/v1/providers/source_a", 200, "", ""},
		{"GET", "/v1/providers/nope", 404, "not_found", ""},
		{"POST", "/v1/providers/source_a", 405, "method_not_allowed", "GET"},
		{"GET", "/v1/openapi.json", 200, "", ""},
		{"GET", "/v1/extract/pro_net/profile.info", 405, "method_not_allowed", "POST"},
		{"POST", "/v1/extract/mars_net/x", 404, "unknown_platform", ""},
		{"POST", "/v1/extract/pro_net/profile.info", 401, "missing_api_key", ""},
		{"POST", "/v1/pro_net/profile.info", 401, "missing_api_key", ""},
		{"GET", "/v1/pro_net/profile.info", 405, "method_not_allowed", "POST"},
		{"POST", "/v1/account/nope", 404, "unknown_platform", ""},
		{"GET", "/v1/search", 405, "method_not_allowed", "POST"},
		{"POST", "/v1/search", 401, "missing_api_key", ""},
		{"GET", "/v1/extractions/ext_1", 401, "missing_api_key", ""},
		{"DELETE", "/v1/extractions/ext_1", 405, "method_not_allowed", "GET"},
		{"GET", "/v1/account/balance", 401, "missing_api_key", ""},
		{"PUT", "/v1/account/usage", 405, "method_not_allowed", "GET"},
		{"GET", "/v1", 404, "not_found", ""},
		{"GET", "/v1/", 404, "not_found", ""},
		{"GET", "/v1/nope", 404, "not_found", ""},
		{"GET", "/v1/a/b/c/d", 404, "not_found", ""},
		// Leading and trailing slashes around the segments are ignored, as
		// they always were; paths ServeMux would clean (and answer with a
		// redirect) are a JSON 404 here, never a 301 or an empty 200.
		{"GET", "/v1//services", 200, "", ""},
		{"GET", "/v1/services//pro_net", 404, "not_found", ""},
		{"GET", "/v1/./services", 404, "not_found", ""},
		{"GET", "/v1/services/../providers", 404, "not_found", ""},
		{"GET", "/elsewhere", 404, "not_found", ""},
	}
	for _, tt := range tests {
		res, e := a.do(t, tt.method, tt.path, "", false)
		if res.StatusCode != tt.status || e.Code != tt.code {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.path, res.StatusCode, e.Code, tt.status, tt.code)
		}
		if got := res.Header.Get("Allow"); got != tt.allow {
			t.Errorf("%s %s: Allow %q, want %q", tt.method, tt.path, got, tt.allow)
		}
	}
}

// TestNotFoundNamesThePathAsSent: the 404 names the method and the path
// the client sent, not the canonical form routed.
func TestNotFoundNamesThePathAsSent(t *testing.T) {
	a := newTestAPI(t, 0)
	for _, path := range []string{"/v1/nope/", "/v1", "/v1//x"} {
		_, e := a.do(t, "GET", path, "", false)
		if want := "no endpoint GET " + path + ";"; !strings.HasPrefix(e.Message, want) {
			t.Errorf("GET %s: message %q, want it to start with %q", path, e.Message, want)
		}
	}
}

// TestCanonical: the fast path of ServeHTTP takes only paths its rewrite
// would leave as they are (and "/v1/", which it also leaves, goes the
// slow way: no route takes it).
func TestCanonical(t *testing.T) {
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/v1/extractions/ext_1", true},
		{"/v1/services", true},
		{"/v1/a/b/c/d", true},
		{"/v1/.well", true},
		{"/v1/...", true},
		{"/v1", false},
		{"/v1/", false},
		{"/v1//services", false},
		{"/v1/services/", false},
		{"/v1/services//pro_net", false},
		{"/v1/./services", false},
		{"/v1/services/..", false},
		{"/v1/services/.", false},
		{"//v1/services", false},
		{"/v2/services", false},
		{"/v1services", false},
		{"/elsewhere", false},
	} {
		seg, ok := segments(tc.path)
		rewritten := !ok || "/v1/"+strings.Join(seg, "/") != tc.path
		if got := canonical(tc.path); got != tc.want || got && rewritten {
			t.Errorf("canonical(%q) = %v, want %v (ServeHTTP rewrites it: %v)", tc.path, got, tc.want, rewritten)
		}
	}
}
