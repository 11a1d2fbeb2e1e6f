// Command upstream-sim is the upstream simulator: it speaks both upstream
// protocols (actor_run and dataset_scrape) from the services' example
// payloads (services/examples), each on the target its offer declares, with
// fault injection, for tests, benchmarks and `make demo`. The server logic is in
// package sim; this only parses flags and listens.
//
// Both listeners serve both protocols and the /_sim control endpoints, over
// one shared state, so a fault set through either applies everywhere.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"socialrouter/cmd/upstream-sim/sim"
)

// faultFlags collects repeated -fault flags.
type faultFlags []sim.Fault

func (f *faultFlags) String() string { return fmt.Sprint(len(*f)) + " faults" }

func (f *faultFlags) Set(v string) error {
	var fault sim.Fault
	if err := json.Unmarshal([]byte(v), &fault); err != nil {
		return fmt.Errorf("decoding fault %q: %w", v, err)
	}
	*f = append(*f, fault)
	return nil
}

// stringsFlag collects a repeated string flag.
type stringsFlag []string

func (f *stringsFlag) String() string     { return fmt.Sprint([]string(*f)) }
func (f *stringsFlag) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var faults faultFlags
	addrA := flag.String("a", "127.0.0.1:9101", "listen address for source_a (actor_run); empty disables")
	addrB := flag.String("b", "127.0.0.1:9102", "listen address for source_b (dataset_scrape); empty disables")
	servicesDir := flag.String("services", "", "services directory whose offers' examples are served, routed by their targets (default: the embedded declarations)")
	fixturesDir := flag.String("fixtures", "", "directory of extra payloads, added to the examples (a routes.json at its root adds routes)")
	routesFile := flag.String("routes", "", `JSON file {"<target id>": "source_a/<file>.json", ...} merged over the declared routes`)
	token := flag.String("token", "", "require this bearer token on protocol endpoints (401 otherwise)")
	latency := flag.Duration("latency", 0, "latency added before every protocol answer")
	items := flag.Int("items", 0, "actor_run: items per answer (fixture repeated); dataset_scrape: records per input (0 = as in the fixture)")
	timeScale := flag.Float64("time-scale", 1, "multiplies every upstream duration: job durations and the documented waits (0.01 turns a 60 s wait into 0.6 s)")
	var dead stringsFlag
	flag.Var(&dead, "dead-input", `substring that makes an input unknown (answered with a dead_page row), repeatable; default "does-not-exist"`)
	flag.Var(&faults, "fault", `initial fault as JSON, repeatable, e.g. '{"target":"*","status":503,"times":2}'`)
	flag.Parse()

	if *timeScale <= 0 {
		log.Fatalf("upstream-sim: -time-scale %v must be positive", *timeScale)
	}
	opts := sim.Options{Token: *token, Latency: *latency, Items: *items, TimeScale: *timeScale, DeadInputs: dead}
	if *servicesDir != "" {
		opts.Services = os.DirFS(*servicesDir)
		if _, _, err := sim.DeclaredRoutes(opts.Services); err != nil {
			log.Fatalf("upstream-sim: -services %s: %v", *servicesDir, err)
		}
	}
	if *fixturesDir != "" {
		opts.Fixtures = os.DirFS(*fixturesDir)
	}
	if *routesFile != "" {
		data, err := os.ReadFile(*routesFile)
		if err != nil {
			log.Fatalf("upstream-sim: reading routes: %v", err)
		}
		if opts.Routes, err = sim.LoadRoutes(data); err != nil {
			log.Fatalf("upstream-sim: %s: %v", *routesFile, err)
		}
	}
	s := sim.New(opts)
	for _, f := range faults {
		if err := s.SetFault(f); err != nil {
			log.Fatalf("upstream-sim: -fault: %v", err)
		}
	}
	if err := s.Check(); err != nil {
		log.Fatalf("upstream-sim: fixtures: %v", err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var servers []*http.Server
	errc := make(chan error, 2)
	for _, addr := range []string{*addrA, *addrB} {
		if addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			log.Fatalf("upstream-sim: listening on %s: %v", addr, err)
		}
		srv := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, srv)
		log.Printf("upstream-sim: serving actor_run and dataset_scrape on http://%s (%d routes)", ln.Addr(), len(s.Routes()))
		go func() { errc <- srv.Serve(ln) }()
	}
	if len(servers) == 0 {
		log.Fatal("upstream-sim: no listener (-a and -b are both empty)")
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Printf("upstream-sim: %v", err)
		}
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range servers {
		_ = srv.Shutdown(shutdown)
	}
	log.Print("upstream-sim: stopped")
}
