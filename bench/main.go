// Command bench is `make bench`: it measures Social Data Router on this
// machine and prints figures next to references measured in the same run,
// with the same load generator, in interleaved rounds (A B A B …), as the
// medians of the rounds. It never asserts a figure; it marks each against
// its target with OK or BELOW.
//
// What it measures (see bench/README.md for the figures and the profile):
//
//   - end-to-end POST /v1/extract/pro_net/profile.info through the real
//     gateway (auth, validation, routing to the upstream simulator with no
//     added latency, normalization, settle on badger with fsync) against
//     Caddy's reverse_proxy to the same simulator endpoint, at N = 10 and
//     N = 1 records;
//   - the N = 1 extraction through a gateway on PostgreSQL (when
//     SDR_TEST_POSTGRES_URL is set), its process's and its backends' CPU,
//     interleaved with the badger-backed gateway; the reservation step
//     (Reserve of a served call, Reserve + Release of a failed one) on
//     each store, as a share of the CPU of a call on the same store;
//   - settles per second of the badger store (and PostgreSQL when
//     SDR_TEST_POSTGRES_URL is set), 1 and 32 callers, separate accounts
//     against one hot account;
//   - GET /v1/services and GET /v1/extractions/{id} against Caddy's static
//     respond of a body of the same size;
//   - the time to compile the services/ tree and the gateway's peak RSS
//     under the end-to-end load;
//   - a CPU and allocation profile of the gateway under the end-to-end load;
//   - the stored bytes per run of each store, and its size during a soak
//     of settles with run_retention on (flat, not growing);
//   - 1 000 to 10 000 calls held at once by a slow upstream, gateway against
//     reverse_proxy, each in a fresh process: peak RSS, memory per call,
//     errors, added latency.
//
// Everything listens on loopback, every loop is bounded in time and count,
// and the child processes are stopped on exit and on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"socialrouter/caddymodule/registry"
)

// config is the benchmark's flags.
type config struct {
	repo, caddyBin, simBin, services string
	rounds, e2eRounds                int
	round, lookupRound, settleRound  time.Duration
	warm                             time.Duration
	conc                             int
	max                              int64
	profile                          time.Duration
	profileDir                       string
	profileItems                     int
	phases                           map[string]bool
	timeout                          time.Duration
	cpuProfile                       string
	inflightLevels                   []int
	inflightLatency, inflightRamp    time.Duration
	inflightItems                    int
	inflightProto                    string
	signinAttack, signinIdle         time.Duration
	signinAddrs                      []int
	signinHashSlots                  int
	signinRate                       float64
	longJobCalls                     int
	longJobSeconds, longJobScale     float64
	soak, retentionWindow            time.Duration
	cacheCalls                       int
	cacheScale                       float64
}

var started = time.Now()

// logf reports progress on stderr; the figures go to stdout.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%5.1fs] %s\n", time.Since(started).Seconds(), fmt.Sprintf(format, args...))
}

func main() {
	var cfg config
	var phases string
	flag.StringVar(&cfg.repo, "repo", "", "repository root (default: the directory holding go.mod, from the working directory up)")
	flag.StringVar(&cfg.caddyBin, "caddy", "", "gateway binary (default <repo>/bin/caddy)")
	flag.StringVar(&cfg.simBin, "sim", "", "simulator binary (default <repo>/bin/upstream-sim)")
	flag.IntVar(&cfg.rounds, "rounds", 3, "rounds per measured figure (medians are printed); at least 3")
	flag.IntVar(&cfg.e2eRounds, "e2e-rounds", 5, "rounds per end-to-end figure (the noisiest: medians of more rounds); at least 3")
	flag.DurationVar(&cfg.round, "round", 3*time.Second, "duration of one end-to-end round")
	flag.DurationVar(&cfg.lookupRound, "lookup-round", 2*time.Second, "duration of one look-up round")
	flag.DurationVar(&cfg.settleRound, "settle-round", time.Second, "duration of one settle round")
	flag.DurationVar(&cfg.soak, "soak", 30*time.Second, "duration of the retention soak per store (retention phase)")
	flag.DurationVar(&cfg.retentionWindow, "retention-window", 3*time.Second, "run_retention window of the soak (retention phase)")
	flag.DurationVar(&cfg.warm, "warm", 500*time.Millisecond, "unmeasured warm-up before each pair of targets")
	flag.IntVar(&cfg.conc, "c", 16, "concurrent connections of the load generator")
	flag.Int64Var(&cfg.max, "max", 200000, "most requests (or settles) of one round")
	flag.DurationVar(&cfg.profile, "profile", 5*time.Second, "CPU profile length under load (0: no profile)")
	flag.IntVar(&cfg.profileItems, "profile-items", 10, "records per answer (N) under the profiled end-to-end load")
	flag.StringVar(&cfg.profileDir, "profile-dir", "", "keep the raw profiles in this directory (default: deleted)")
	flag.StringVar(&phases, "phases", "provision,settle,retention,e2e,pg-e2e,lookup,profile,inflight,signin,longjob,webhooks,async,cache", "phases to run, comma-separated (pg-e2e: the N = 1 call through a gateway on PostgreSQL, when SDR_TEST_POSTGRES_URL is set; signin: bad sign-ins and invitation posts while /v1 is measured; longjob: calls each waiting on a minute-long upstream job; retention: stored bytes per run and disk after a soak with retention on; webhooks: deliveries per second to a local receiver; async: async runs in flight and restart-to-resumed; cache: the freshness cache under a Zipf workload)")
	flag.DurationVar(&cfg.signinAttack, "signin-attack", 20*time.Second, "sign-in phase: length of each attack")
	flag.DurationVar(&cfg.signinIdle, "signin-idle", 5*time.Second, "sign-in phase: length of the idle /v1 measurement")
	flag.IntVar(&cfg.signinHashSlots, "signin-hash-slots", 0, "sign-in phase: the gateway's hash_slots (0: its default, one per two cores)")
	flag.Float64Var(&cfg.signinRate, "signin-rate", 36, "sign-in phase: the paced attack's posts a second (the issue's 36; 0: no paced attack)")
	signinAddrs := flag.String("signin-addrs", "1,64", "sign-in phase: loopback source addresses the attackers spread over, one attack per value, comma-separated")
	flag.DurationVar(&cfg.timeout, "timeout", 40*time.Minute, "stop everything after this long (the core phases' target is 6 min; the load phases of issues 24, 26 and 27 hold 10,000 calls or runs and take longer)")
	levels := flag.String("inflight", "1000,5000,10000", "in-flight phase: calls held at once, one level per fresh process, comma-separated")
	flag.DurationVar(&cfg.inflightLatency, "inflight-latency", 5*time.Second, "in-flight phase: the simulator's latency before each answer")
	flag.DurationVar(&cfg.inflightRamp, "inflight-ramp", 3*time.Second, "in-flight phase: the calls of a level start evenly over this long (below the latency, so all are in flight at once)")
	flag.IntVar(&cfg.inflightItems, "inflight-items", 1, "in-flight phase: records per answer (N)")
	flag.StringVar(&cfg.inflightProto, "inflight-proto", "auto", "in-flight phase: the callers' protocol to Caddy: h1 (a connection per call), h2c (HTTP/2 cleartext, many calls per connection), or auto (h1 where the file limit allows 2 descriptors per call, else h2c)")
	flag.IntVar(&cfg.longJobCalls, "longjob-calls", 10000, "long-job phase: calls held at once, each on its own upstream job")
	flag.Float64Var(&cfg.longJobSeconds, "longjob-seconds", 60, "long-job phase: each job's length in upstream seconds")
	flag.Float64Var(&cfg.longJobScale, "longjob-scale", 0.1, "long-job phase: the simulator's -time-scale (0.1: a 60 s job takes 6 s)")
	flag.IntVar(&cfg.cacheCalls, "cache-calls", 3000, "cache phase: calls of the Zipf workload")
	flag.Float64Var(&cfg.cacheScale, "cache-scale", 0.02, "cache phase: the simulator's -time-scale (0.02: a 10 s upstream job takes 0.2 s)")
	flag.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write a CPU profile of this program (the in-process settle and provision phases) to this file")
	flag.Parse()
	if cfg.rounds < 3 || cfg.e2eRounds < 3 {
		fmt.Fprintln(os.Stderr, "bench: -rounds and -e2e-rounds must be at least 3")
		os.Exit(2)
	}
	var err error
	if cfg.signinAddrs, err = parseLevels(*signinAddrs); err != nil {
		fmt.Fprintln(os.Stderr, "bench: -signin-addrs:", err)
		os.Exit(2)
	}
	if cfg.inflightLevels, err = parseLevels(*levels); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	switch cfg.inflightProto {
	case "h1", "h2c", "auto":
	default:
		fmt.Fprintln(os.Stderr, "bench: -inflight-proto must be h1, h2c or auto")
		os.Exit(2)
	}
	cfg.phases = map[string]bool{}
	for _, p := range strings.Split(phases, ",") {
		cfg.phases[strings.TrimSpace(p)] = true
	}

	os.Exit(runMain(&cfg))
}

// runMain runs the benchmark and returns the exit code, so that deferred
// clean-up runs before the process exits.
func runMain(cfg *config) int {
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -cpuprofile:", err)
			return 2
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	err := run(ctx, cfg)
	cancel()
	stop()
	stopChildren()
	if err != nil {
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("stopped: %v", err)
		}
		fmt.Fprintln(os.Stderr, "bench:", err)
		return 1
	}
	return 0
}

func run(ctx context.Context, cfg *config) error {
	if err := cfg.resolve(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "sdr-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	defer stopChildren() // before the temporary directory goes

	rep := &report{cfg: cfg}
	defer rep.flush()
	rep.header()

	if cfg.phases["provision"] {
		if err := rep.provision(ctx, cfg); err != nil {
			return fmt.Errorf("provision: %w", err)
		}
	}
	if cfg.phases["settle"] {
		if err := rep.settles(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("settle: %w", err)
		}
	}
	if cfg.phases["retention"] {
		if err := rep.retention(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("retention: %w", err)
		}
	}
	if cfg.phases["profile"] {
		logf("in-process experiments")
		if err := rep.experiments(ctx, cfg); err != nil {
			return fmt.Errorf("experiments: %w", err)
		}
		if err := rep.badgerOptions(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("badger options: %w", err)
		}
	}
	if cfg.phases["e2e"] || cfg.phases["pg-e2e"] || cfg.phases["lookup"] || cfg.phases["profile"] {
		if rep.catalogue == nil {
			reg, err := registry.Load(cfg.services)
			if err != nil {
				return err
			}
			rep.catalogue = reg.CatalogueJSON()
		}
		e, err := startEnv(ctx, tmp, cfg, rep.catalogue)
		if err != nil {
			return err
		}
		if cfg.phases["e2e"] {
			if err := rep.endToEnd(ctx, e, cfg); err != nil {
				return fmt.Errorf("end-to-end: %w", err)
			}
		}
		if cfg.phases["pg-e2e"] {
			if err := rep.pgEndToEnd(ctx, e, cfg); err != nil {
				return fmt.Errorf("end-to-end on PostgreSQL: %w", err)
			}
		}
		if cfg.phases["lookup"] {
			if err := rep.lookups(ctx, e, cfg); err != nil {
				return fmt.Errorf("look-ups: %w", err)
			}
		}
		if cfg.phases["profile"] && cfg.profile > 0 {
			if err := rep.profile(ctx, e, cfg, tmp); err != nil {
				return fmt.Errorf("profile: %w", err)
			}
		}
		rep.memory(e)
		e.gw.stop() // the in-flight phase starts its own processes
		e.sim.stop()
	}
	rep.coreTime = time.Since(started)
	if cfg.phases["signin"] {
		if err := rep.signinLoad(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("sign-in load: %w", err)
		}
	}
	if cfg.phases["inflight"] {
		if err := rep.inflight(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("in flight: %w", err)
		}
	}
	if cfg.phases["longjob"] {
		if err := rep.longJob(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("long jobs: %w", err)
		}
	}
	if cfg.phases["webhooks"] {
		if err := rep.webhooks(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("webhooks: %w", err)
		}
	}
	if cfg.phases["async"] {
		if err := rep.asyncRuns(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("async: %w", err)
		}
	}
	if cfg.phases["cache"] {
		if err := rep.cachePhase(ctx, tmp, cfg); err != nil {
			return fmt.Errorf("cache: %w", err)
		}
	}
	rep.summary()
	return ctx.Err()
}

// resolve fills in the defaults that depend on the repository root.
func (cfg *config) resolve() error {
	if cfg.repo == "" {
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		for {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				return errors.New("no go.mod above the working directory; pass -repo")
			}
			dir = parent
		}
		cfg.repo = dir
	}
	if cfg.caddyBin == "" {
		cfg.caddyBin = filepath.Join(cfg.repo, "bin", "caddy")
	}
	if cfg.simBin == "" {
		cfg.simBin = filepath.Join(cfg.repo, "bin", "upstream-sim")
	}
	cfg.services = filepath.Join(cfg.repo, "services")
	for _, p := range []string{cfg.caddyBin, cfg.simBin} {
		if _, err := os.Stat(p); err != nil {
			return fmt.Errorf("%s is missing: run make build (or make bench)", p)
		}
	}
	return nil
}

// goVersion is the toolchain the benchmark was built with.
func goVersion() string { return runtime.Version() }
