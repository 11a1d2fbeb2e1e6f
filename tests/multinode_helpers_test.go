package tests

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"socialrouter/caddymodule/credits"
)

// mnEnv returns the URLs of the PostgreSQL database and the Redis that the
// multi-node tests share between their two gateways, or skips the test.
func mnEnv(t *testing.T) (pgURL, redisURL string) {
	t.Helper()
	pgURL, redisURL = os.Getenv("SDR_TEST_POSTGRES_URL"), os.Getenv("SDR_TEST_REDIS_URL")
	if pgURL == "" || redisURL == "" {
		t.Skip("SDR_TEST_POSTGRES_URL and SDR_TEST_REDIS_URL must both be set for the multi-node tests " +
			"(two gateways on one PostgreSQL and one Redis), e.g. " +
			"SDR_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable SDR_TEST_REDIS_URL=redis://127.0.0.1:6379/0")
	}
	return pgURL, redisURL
}

func mnRandom() string {
	b := make([]byte, 6)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// mnSchema creates an empty schema sdr_mn_<random>, dropped when the test
// ends (after the gateways, whose clean-ups run first), and returns pgURL
// with its search_path set to it: both nodes then share that schema only.
func mnSchema(t *testing.T, pgURL string) (url, schema string) {
	t.Helper()
	schema = "sdr_mn_" + mnRandom()
	conn, err := pgx.Connect(t.Context(), pgURL)
	if err != nil {
		t.Fatalf("connecting to postgres: %v", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, pgURL)
		if err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	sep := "?"
	if strings.Contains(pgURL, "?") {
		sep = "&"
	}
	return pgURL + sep + "search_path=" + schema, schema
}

// mnRedisPrefix returns a rate-limit key prefix of this test alone; its
// keys are deleted when the test ends.
func mnRedisPrefix(t *testing.T, redisURL string) string {
	t.Helper()
	prefix := "sdr_mn_" + mnRandom()
	t.Cleanup(func() { mnResetRateLimit(t, redisURL, prefix) })
	return prefix
}

// mnResetRateLimit deletes the counters under prefix, and only those, so
// the next request starts a fresh window.
func mnResetRateLimit(t *testing.T, redisURL, prefix string) {
	t.Helper()
	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatalf("parsing SDR_TEST_REDIS_URL: %v", err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	it := rdb.Scan(ctx, 0, prefix+":*", 100).Iterator()
	for it.Next(ctx) {
		if err := rdb.Del(ctx, it.Val()).Err(); err != nil {
			t.Errorf("deleting %s: %v", it.Val(), err)
		}
	}
	if err := it.Err(); err != nil {
		t.Errorf("scanning %s:*: %v", prefix, err)
	}
}

// cluster is two gateway processes on one PostgreSQL schema (and, when
// asked, one Redis rate limit), as behind a balancer.
type cluster struct {
	nodes  [2]*gateway
	dbURL  string // with the test's search_path
	schema string
	prefix string // Redis rate-limit prefix, if any
}

// clusterOpts shapes the two nodes' shared Caddyfile.
type clusterOpts struct {
	// redisURL, if set, puts the ip_rate_limit counters in Redis under a
	// prefix of this test; rateCount is then the limit per minute.
	redisURL  string
	rateCount int
	// maxRuns raises the per-node, per-account cap on runs in flight
	// (max_concurrent_runs); 0 keeps the default of 16.
	maxRuns int
}

// startCluster starts two gateways on loopback ports sharing a fresh
// PostgreSQL schema, both sending upstream calls to s.
func startCluster(t *testing.T, s *sim, pgURL string, o clusterOpts) *cluster {
	t.Helper()
	c := &cluster{}
	c.dbURL, c.schema = mnSchema(t, pgURL)
	storage := "postgres " + c.dbURL
	if o.maxRuns > 0 {
		// gwConfig has no field for other social_router options: the
		// storage line is the last thing the template writes before the
		// sources, so the option goes on a line of its own after it.
		storage += fmt.Sprintf("\n\t\tmax_concurrent_runs %d", o.maxRuns)
	}
	var rateStore string
	if o.redisURL != "" {
		c.prefix = mnRedisPrefix(t, o.redisURL)
		rateStore = "store redis " + o.redisURL + "\n\t\tprefix " + c.prefix
	}
	for i := range c.nodes {
		cfg := defaultConfig(t, s)
		cfg.Storage = storage
		cfg.RateStore = rateStore
		if o.rateCount > 0 {
			cfg.RateCount = o.rateCount
		}
		c.nodes[i] = startGateway(t, cfg)
	}
	// Fetch each node's OpenAPI document now, so that responses read from
	// worker goroutines are validated without a first fetch (which may
	// call t.Fatal) and the rate-limit counts below stay exact.
	for _, g := range c.nodes {
		if r := g.do("GET", "/v1/services", "", nil); r.Status != 200 {
			t.Fatalf("warming up %s: %d %s", g.URL, r.Status, r.Body)
		}
	}
	return c
}

// trySend is send for worker goroutines: a transport error (a killed node)
// is returned, not fatal. Responses are validated against the served
// OpenAPI document as everywhere else in the suite.
func trySend(t *testing.T, method, url, key string, body any) (*response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return nil, err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	r, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	resp := &response{Status: r.StatusCode, Header: r.Header, Body: b}
	_ = json.Unmarshal(b, &resp.JSON)
	validateAgainstOpenAPI(t, req, r, b)
	return resp, nil
}

// micros reads the credit amount at path in a JSON body exactly (no float
// round trip), as integer micro-credits.
func micros(t testing.TB, body []byte, path ...string) credits.Micros {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", body, err)
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %v in %s", path, body)
		}
		v = m[p]
	}
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%v is not a number in %s", path, body)
	}
	m, err := credits.Parse(n.String())
	if err != nil {
		t.Fatalf("%v in %s: %v", path, body, err)
	}
	return m
}

// balanceMicros is the account's balance through node g, exactly.
func balanceMicros(t testing.TB, g *gateway, key string) credits.Micros {
	t.Helper()
	r := g.do("GET", "/v1/account/balance", key, nil)
	if r.Status != 200 {
		t.Fatalf("balance through %s: %d %s", g.URL, r.Status, r.Body)
	}
	return micros(t, r.Body, "balance")
}

// storedRuns reads, straight from the shared schema, every run of an
// account and what each charged: what the balance equation is checked
// against, including runs whose answer never reached the client.
func (c *cluster) storedRuns(t *testing.T, account string) map[string]credits.Micros {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), "SELECT id, credits_used FROM runs WHERE account_id = $1", account)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]credits.Micros{}
	for rows.Next() {
		var id string
		var used int64
		if err := rows.Scan(&id, &used); err != nil {
			t.Fatal(err)
		}
		out[id] = credits.Micros(used)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// mnResult is one extract call of a load test.
type mnResult struct {
	node    int
	status  int
	code    string // error code, if any
	id      string // run id of a 200
	charged credits.Micros
	records int
	err     error // transport error
	start   time.Time
	end     time.Time
}

const (
	mnCompanyPath = "/v1/extract/pro_net/company.info"
	mnCompanyURL  = "https://www.linkedin.com/company/kraft-heinz-company"
)

// extractOnce sends one company.info call (served by source_b/pro_net
// alone, so every run has one price) through node i.
func (c *cluster) extractOnce(t *testing.T, i int, key string) mnResult {
	res := mnResult{node: i, start: time.Now()}
	r, err := trySend(t, "POST", c.nodes[i].URL+mnCompanyPath, key, map[string]any{"url": mnCompanyURL})
	res.end = time.Now()
	if err != nil {
		res.err = err
		return res
	}
	res.status, res.code = r.Status, r.errCode()
	if r.Status == 200 {
		res.id, _ = r.JSON["id"].(string)
		res.charged = micros(t, r.Body, "credits_used")
		data, _ := r.JSON["data"].([]any)
		res.records = len(data)
		if p, _ := r.JSON["pagination"].(map[string]any); int(num(p["returned"])) != res.records {
			t.Errorf("run %s: pagination %v for %d records", res.id, p, res.records)
		}
	}
	return res
}

// callCharge makes one call on a throw-away account and returns what one
// call costs and the price of a record.
func (c *cluster) callCharge(t *testing.T) (perCall, price credits.Micros, records int) {
	t.Helper()
	key := c.nodes[0].account("probe_"+mnRandom(), 10)
	res := c.extractOnce(t, 0, key)
	if res.status != 200 || res.records == 0 || res.charged == 0 {
		t.Fatalf("probe call: %+v", res)
	}
	if res.charged%credits.Micros(res.records) != 0 {
		t.Fatalf("probe call charged %s for %d records", res.charged, res.records)
	}
	return res.charged, res.charged / credits.Micros(res.records), res.records
}

// checkRunReadable reads a run through node g and compares it with what
// the call answered.
func checkRunReadable(t *testing.T, g *gateway, key string, want mnResult) {
	t.Helper()
	r, err := trySend(t, "GET", g.URL+"/v1/extractions/"+want.id, key, nil)
	if err != nil {
		t.Errorf("reading run %s through %s: %v", want.id, g.URL, err)
		return
	}
	data, _ := r.JSON["data"].([]any)
	if r.Status != 200 || r.JSON["id"] != want.id || micros(t, r.Body, "credits_used") != want.charged || len(data) != want.records {
		t.Errorf("run %s through %s: %d %s; want %d records for %s", want.id, g.URL, r.Status, tail(string(r.Body), 3), want.records, want.charged)
	}
}

// usageTotals returns the account's usage totals (requests and credits)
// through node g.
func usageTotals(t *testing.T, g *gateway, key string) (requests int, charged credits.Micros) {
	t.Helper()
	r := g.do("GET", "/v1/account/usage?days=2", key, nil)
	if r.Status != 200 {
		t.Fatalf("usage: %d %s", r.Status, r.Body)
	}
	return int(num(r.JSON["total_requests"])), micros(t, r.Body, "total_credits")
}
