package tests

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// acmeDomain is the gateway's public name in the ACME tests: Pebble's
// challenge test server answers its A queries with 127.0.0.1, and the
// test's client dials 127.0.0.1 for it. Nothing leaves loopback.
const acmeDomain = "gateway.sdr.test"

// pebbleBins returns the pebble and pebble-challtestsrv commands: from
// SDR_PEBBLE_BIN / SDR_CHALLTESTSRV_BIN (make test-e2e sets them), or as
// `make pebble` installs them under bin/.
func pebbleBins(t *testing.T) (pebble, challtestsrv string) {
	t.Helper()
	pebble, challtestsrv = os.Getenv("SDR_PEBBLE_BIN"), os.Getenv("SDR_CHALLTESTSRV_BIN")
	if pebble == "" || challtestsrv == "" {
		found, _ := filepath.Glob(filepath.Join(repoRoot, "bin", "pebble-*", "pebble"))
		if len(found) == 0 {
			t.Fatal("Pebble is not installed: run `make pebble` (make test-e2e does), or set SDR_PEBBLE_BIN and SDR_CHALLTESTSRV_BIN")
		}
		pebble = found[len(found)-1]
		challtestsrv = filepath.Join(filepath.Dir(pebble), "pebble-challtestsrv")
	}
	return pebble, challtestsrv
}

// acmeEdge is a gateway whose site acmeDomain gets its certificate from a
// Pebble run for the test.
type acmeEdge struct {
	g                   *gateway
	httpPort, httpsPort int
	client              *http.Client // trusts only Pebble's root; acmeDomain dials 127.0.0.1
	key                 string
}

// startACMEEdge starts Pebble (certificates valid for validity), its
// challenge test server as Pebble's DNS, the simulator and a gateway whose
// Caddyfile names acmeDomain as its site with Pebble as the ACME CA, and
// waits until the site answers over HTTPS with a certificate that chains to
// Pebble's root.
func startACMEEdge(t *testing.T, validity time.Duration, global string) *acmeEdge {
	t.Helper()
	pebbleBin, challBin := pebbleBins(t)
	dir := t.TempDir()

	// Pebble's own HTTPS listeners (ACME and management) get a certificate
	// of a CA made here, which Caddy is told to trust (acme_ca_root).
	caPEM, certPEM, keyPEM := localCA(t)
	caPath, certPath, keyPath := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writeFile(t, caPath, caPEM)
	writeFile(t, certPath, certPEM)
	writeFile(t, keyPath, keyPEM)

	dnsPort, challMgmt := freePort(t), freePort(t)
	chall := start(t, nil, challBin, "-dnsserver", fmt.Sprintf("127.0.0.1:%d", dnsPort),
		"-management", fmt.Sprintf("127.0.0.1:%d", challMgmt), "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
		"-http01", "", "-https01", "", "-tlsalpn01", "", "-doh", "")
	waitFor(t, "pebble-challtestsrv", chall, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", challMgmt), time.Second)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	// Pebble validates challenges on the gateway's own ports.
	s := startSim(t)
	c := defaultConfig(t, s)
	httpPort, httpsPort := freePort(t), freePort(t)
	acmePort, mgmtPort := freePort(t), freePort(t)
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           fmt.Sprintf("127.0.0.1:%d", acmePort),
		"managementListenAddress": fmt.Sprintf("127.0.0.1:%d", mgmtPort),
		"certificate":             certPath,
		"privateKey":              keyPath,
		"httpPort":                httpPort,
		"tlsPort":                 httpsPort,
		"ocspResponderURL":        "",
		"keyAlgorithm":            "ecdsa",
		"profiles": map[string]any{"default": map[string]any{
			"description": "the test's validity", "validityPeriod": int(validity / time.Second),
		}},
	}}
	b, _ := json.Marshal(cfg)
	writeFile(t, filepath.Join(dir, "pebble.json"), b)
	peb := start(t, []string{"PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0", "PEBBLE_AUTHZREUSE=0"},
		pebbleBin, "-config", filepath.Join(dir, "pebble.json"), "-dnsserver", fmt.Sprintf("127.0.0.1:%d", dnsPort), "-strict=false")

	caPool := x509.NewCertPool()
	caPool.AppendCertsFromPEM(caPEM)
	mgmt := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: caPool}}}
	var rootPEM []byte
	waitFor(t, "pebble", peb, func() bool {
		r, err := mgmt.Get(fmt.Sprintf("https://127.0.0.1:%d/roots/0", mgmtPort))
		if err != nil {
			return false
		}
		defer r.Body.Close()
		rootPEM, _ = io.ReadAll(r.Body)
		return r.StatusCode == 200
	})
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("Pebble's root is not PEM: %q", rootPEM)
	}

	c.Site = acmeDomain
	c.SiteExtra = "sdr_dashboard"
	c.Global = fmt.Sprintf("http_port %d\n\thttps_port %d\n\tacme_ca https://127.0.0.1:%d/dir\n\tacme_ca_root %s\n\t%s",
		httpPort, httpsPort, acmePort, caPath, global)
	g := startGateway(t, c)

	dialer := &net.Dialer{Timeout: 5 * time.Second}
	e := &acmeEdge{g: g, httpPort: httpPort, httpsPort: httpsPort, client: &http.Client{
		Timeout: 30 * time.Second,
		// Redirects are asserted, not followed.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots},
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				host, port, _ := net.SplitHostPort(addr)
				if host != acmeDomain {
					return nil, fmt.Errorf("the test dials only %s, not %s", acmeDomain, host)
				}
				return dialer.DialContext(ctx, network, net.JoinHostPort("127.0.0.1", port))
			},
		},
	}}
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := e.client.Get(e.url("/v1/health/live"))
		if err == nil {
			r.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no certificate from Pebble within 60s: %v\ngateway:\n%s\npebble:\n%s", err, tail(g.p.out.String(), 40), tail(peb.out.String(), 40))
		}
		time.Sleep(200 * time.Millisecond)
	}
	e.key = g.account("acme", 100)
	s.fault(t, map[string]any{"target": companyB, "items": 1})
	return e
}

func (e *acmeEdge) url(path string) string {
	return fmt.Sprintf("https://%s:%d%s", acmeDomain, e.httpsPort, path)
}

// serial is the serial number of the certificate the site serves now.
func (e *acmeEdge) serial(t *testing.T) string {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", e.httpsPort),
		&tls.Config{ServerName: acmeDomain, RootCAs: e.client.Transport.(*http.Transport).TLSClientConfig.RootCAs})
	if err != nil {
		t.Fatalf("TLS handshake: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// TestACMEPebble: the site's certificate comes from Pebble through
// Caddy's ACME issuer; /v1, /mcp and the dashboard answer over it (the
// client trusts Pebble's root only), with HSTS; HTTP redirects to HTTPS.
func TestACMEPebble(t *testing.T) {
	e := startACMEEdge(t, 24*time.Hour, "")

	extract := []byte(fmt.Sprintf(`{"url": %q}`, companyURL))
	initialize := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"acme-test","version":"1"}}}`)
	for _, tc := range []struct {
		method, path string
		body         []byte
		want         int
		contains     string
	}{
		{"GET", "/v1/services", nil, 200, `"pro_net"`},
		{"POST", "/v1/extract/pro_net/company.info", extract, 200, `"status":"completed"`},
		{"POST", "/mcp", initialize, 200, `"social-data-router"`},
		{"GET", "/dashboard/signin", nil, 200, "<form"},
	} {
		req, _ := http.NewRequest(tc.method, e.url(tc.path), bytes.NewReader(tc.body))
		if tc.body != nil {
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header.Set("Accept", "application/json, text/event-stream")
		}
		resp, err := e.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want || !strings.Contains(string(b), tc.contains) {
			t.Errorf("%s %s: %d %.300s", tc.method, tc.path, resp.StatusCode, b)
		}
		if got := resp.Header.Get("Strict-Transport-Security"); got != "max-age=31536000" {
			t.Errorf("%s %s: Strict-Transport-Security %q", tc.method, tc.path, got)
		}
		if issuer := resp.TLS.PeerCertificates[0].Issuer.CommonName; !strings.Contains(strings.ToLower(issuer), "pebble") {
			t.Errorf("%s %s: certificate issued by %q, not Pebble", tc.method, tc.path, issuer)
		}
	}

	resp, err := e.client.Get(fmt.Sprintf("http://%s:%d/v1/services?x=1", acmeDomain, e.httpPort))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// Caddy's redirect names no port: with https_port set it takes the
	// public port to be 443, forwarded to https_port.
	if want := "https://" + acmeDomain + "/v1/services?x=1"; resp.StatusCode != http.StatusPermanentRedirect || resp.Header.Get("Location") != want {
		t.Errorf("plain HTTP: %d Location %q, want 308 to %s", resp.StatusCode, resp.Header.Get("Location"), want)
	}
}

// TestACMERenewal: Pebble issues certificates valid for 30 s and Caddy
// checks every second, so it renews within about 20 s (its window is the
// last third of the lifetime); clients calling all the while see every
// call succeed, across at least two renewals.
func TestACMERenewal(t *testing.T) {
	e := startACMEEdge(t, 30*time.Second, "renew_interval 1s")
	first := e.serial(t)

	ctx, stop := context.WithTimeout(context.Background(), 90*time.Second)
	defer stop()
	var calls, failed atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	extract := []byte(fmt.Sprintf(`{"url": %q}`, companyURL))
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ctx.Err() == nil; n++ {
				req, _ := http.NewRequest("GET", e.url("/v1/services"), nil)
				if (n+w)%2 == 0 {
					req, _ = http.NewRequest("POST", e.url("/v1/extract/pro_net/company.info"), bytes.NewReader(extract))
					req.Header.Set("Authorization", "Bearer "+e.key)
				}
				calls.Add(1)
				resp, err := e.client.Do(req)
				if err != nil {
					if ctx.Err() == nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err.Error())
					}
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, fmt.Sprintf("%s %s: %d", req.Method, req.URL.Path, resp.StatusCode))
				}
				time.Sleep(20 * time.Millisecond)
			}
		}()
	}
	seen := map[string]bool{first: true}
	for len(seen) < 3 && ctx.Err() == nil {
		time.Sleep(500 * time.Millisecond)
		seen[e.serial(t)] = true
	}
	stop()
	wg.Wait()
	t.Logf("certificates served: %d; calls: %d, failed: %d", len(seen), calls.Load(), failed.Load())
	if len(seen) < 3 {
		t.Errorf("%d certificates in 90 s: Caddy did not renew twice\n%s", len(seen), tail(e.g.p.out.String(), 30))
	}
	if failed.Load() != 0 {
		t.Errorf("%d of %d calls failed across renewals (first: %v)", failed.Load(), calls.Load(), firstErr.Load())
	}
}

// localCA makes a CA and a certificate it signs for localhost and
// 127.0.0.1, for Pebble's own HTTPS listeners.
func localCA(t *testing.T) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "sdr test CA for Pebble"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	caCert, _ := x509.ParseCertificate(caDER)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}
