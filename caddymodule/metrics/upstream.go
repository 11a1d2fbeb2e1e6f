package metrics

import (
	"io"
	"net/http"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"socialrouter/caddymodule/sources"
)

// upstreamTransport is the one HTTP transport of every source client, so
// connections are pooled across sources and config reloads.
var upstreamTransport = sync.OnceValue(sources.NewTransport)

// upstreamClients caches one client per source id across reloads.
var upstreamClients sync.Map // source id → *http.Client

// UpstreamClient returns the HTTP client of a source: it counts the response
// body bytes read from the source. Hand it to sources.Config.HTTPClient.
func UpstreamClient(source string) *http.Client {
	if c, ok := upstreamClients.Load(source); ok {
		return c.(*http.Client)
	}
	c := &http.Client{Transport: &countingTransport{
		base: upstreamTransport(), bytes: upstreamBytes.WithLabelValues(source),
	}}
	v, _ := upstreamClients.LoadOrStore(source, c)
	return v.(*http.Client)
}

// countingTransport counts the body bytes of every response.
type countingTransport struct {
	base  http.RoundTripper
	bytes prometheus.Counter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, bytes: t.bytes}
	return resp, nil
}

// countingBody adds every read to the counter.
type countingBody struct {
	io.ReadCloser
	bytes prometheus.Counter
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.bytes.Add(float64(n))
	}
	return n, err
}
