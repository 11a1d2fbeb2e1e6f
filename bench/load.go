package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// target is one kind of request the load generator repeats.
type target struct {
	name   string
	method string
	url    string
	body   []byte
	header http.Header
}

// newClient returns a keep-alive client that holds one idle connection per
// worker, so a round measures requests rather than connection set-up.
func newClient(conc int) *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // loopback only, never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4 * conc,
		MaxIdleConnsPerHost: 2 * conc,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// do sends the target's request once and reads the whole answer.
func (t *target) do(ctx context.Context, c *http.Client) (status int, n int64, err error) {
	var body io.Reader
	if t.body != nil {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return 0, 0, err
	}
	req.Header = t.header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return 0, 0, err
	}
	n, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, n, err
}

// fetch sends the target's request once and returns the answer's body.
func (t *target) fetch(ctx context.Context, c *http.Client) (int, []byte, error) {
	var body io.Reader
	if t.body != nil {
		body = bytes.NewReader(t.body)
	}
	req, err := http.NewRequestWithContext(ctx, t.method, t.url, body)
	if err != nil {
		return 0, nil, err
	}
	req.Header = t.header.Clone()
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// round is the outcome of one timed round against one target.
type round struct {
	ok, failed int
	elapsed    time.Duration
	bytes      int64
	lat        []time.Duration // of the successful requests, sorted
	firstErr   string
	cpu        map[string]time.Duration // CPU time used during the round, per process
}

// rps is successful requests per second.
func (r round) rps() float64 {
	if r.elapsed <= 0 {
		return 0
	}
	return float64(r.ok) / r.elapsed.Seconds()
}

// runRound sends the target's request from conc workers until dur has
// passed or max requests were sent, whichever comes first, and times each.
func runRound(ctx context.Context, c *http.Client, t *target, conc int, dur time.Duration, max int64) round {
	ctx, cancel := context.WithTimeout(ctx, dur+30*time.Second) // a stuck request cannot hold the round
	defer cancel()
	var (
		issued   atomic.Int64
		mu       sync.Mutex
		res      round
		wg       sync.WaitGroup
		deadline = time.Now().Add(dur)
	)
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lat := make([]time.Duration, 0, 4096)
			ok, failed := 0, 0
			var nbytes int64
			firstErr := ""
			for time.Now().Before(deadline) && issued.Add(1) <= max && ctx.Err() == nil {
				t0 := time.Now()
				status, n, err := t.do(ctx, c)
				d := time.Since(t0)
				switch {
				case err != nil:
					failed++
					if firstErr == "" {
						firstErr = err.Error()
					}
				case status < 200 || status > 299:
					failed++
					if firstErr == "" {
						firstErr = fmt.Sprintf("HTTP %d", status)
					}
				default:
					ok++
					nbytes += n
					lat = append(lat, d)
				}
			}
			mu.Lock()
			res.ok += ok
			res.failed += failed
			res.bytes += nbytes
			res.lat = append(res.lat, lat...)
			if res.firstErr == "" {
				res.firstErr = firstErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	sort.Slice(res.lat, func(i, j int) bool { return res.lat[i] < res.lat[j] })
	return res
}

// percentile returns the q-quantile (0 ≤ q ≤ 1) of sorted durations by the
// nearest-rank method, or 0 for none.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.999999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(sorted) {
		i = len(sorted) - 1
	}
	return sorted[i]
}

// median returns the median of xs (the mean of the middle two for an even
// count), or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// summary is the medians over the rounds of one target.
type summary struct {
	name          string
	rps, p50, p99 float64 // req/s, and latencies in milliseconds
	ok, failed    int
	firstErr      string
	bytesPerReq   float64
	cpuPerReq     map[string]float64 // µs of CPU per successful request, per process
	rounds        []float64          // req/s of each round, in order
}

// summarize takes the median of each figure over the rounds.
func summarize(name string, rs []round) summary {
	s := summary{name: name, cpuPerReq: map[string]float64{}}
	var rps, p50, p99, bpr []float64
	cpu := map[string][]float64{}
	for _, r := range rs {
		rps = append(rps, r.rps())
		p50 = append(p50, ms(percentile(r.lat, 0.50)))
		p99 = append(p99, ms(percentile(r.lat, 0.99)))
		s.ok += r.ok
		s.failed += r.failed
		if s.firstErr == "" {
			s.firstErr = r.firstErr
		}
		if r.ok > 0 {
			bpr = append(bpr, float64(r.bytes)/float64(r.ok))
			for p, d := range r.cpu {
				cpu[p] = append(cpu[p], float64(d.Microseconds())/float64(r.ok))
			}
		}
	}
	s.rps, s.p50, s.p99, s.bytesPerReq, s.rounds = median(rps), median(p50), median(p99), median(bpr), rps
	for p, xs := range cpu {
		s.cpuPerReq[p] = median(xs)
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
