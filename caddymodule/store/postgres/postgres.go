// Package postgres is the shared store.Store for several gateway nodes
// behind one balancer, on PostgreSQL through a pgx v5 pool. Money is BIGINT
// micro-credits; Settle is one transaction that locks the account row, so no
// number of nodes can overdraw a balance. The schema is migrated on Open,
// under an advisory lock so nodes starting together migrate once.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"socialrouter/caddymodule/store"
)

// Store is the PostgreSQL implementation of store.Store.
type Store struct {
	pool        *pgxpool.Pool
	settles     line[*waiter]        // settles grouped into shared transactions
	reserves    line[*reserveWaiter] // reserves grouped likewise
	creates     line[*createWaiter]  // async run creates grouped likewise
	deletes     line[*deleteWaiter]  // async run deletes grouped likewise
	updates     line[*updateWaiter]  // async run progress writes grouped likewise
	holdTimeout time.Duration
	stopReaper  context.CancelFunc
	reaper      sync.WaitGroup
	closeOnce   sync.Once
	// commitFault, set by tests, turns a settle's successful commit into
	// an ambiguous one (the error a broken connection gives).
	commitFault func() error
	// expiredSinceVacuum counts runs expired since Reclaim last vacuumed.
	expiredSinceVacuum expiredCounter
	ws                 writeState // whether the database can write (writable.go)
	// noLedger: opened on a schema older than the ledger (the migration
	// tests' WithMigrationsUpTo), so balances move without ledger rows.
	noLedger bool
	// cacheEvicted is when this node last evicted cache entries, and
	// cacheSince the bytes it put since (cache.go).
	cacheEvicted, cacheSince atomic.Int64
	// locks are the advisory locks of the nodes this store beats for
	// (nodelock.go).
	locks nodeLocks
	// holdsRenewed is when HeartbeatNode last renewed each node's holds.
	holdsRenewed holdRenewals
}

// Option configures Open.
type Option func(*config)

type config struct {
	schema      string
	holdTimeout time.Duration
	upTo        int // the last migration to apply; 0: every one
}

// WithHoldTimeout sets how long a hold counts when its call never settles
// nor releases it (its node died). Default DefaultHoldTimeout; it must
// exceed the longest call.
func WithHoldTimeout(d time.Duration) Option {
	return func(c *config) { c.holdTimeout = d }
}

// WithSchema keeps every table in the named schema, created if missing, by
// setting each connection's search_path to it: several deployments, or test
// runs, can then share one database. Default: the URL's search_path (a
// search_path URL parameter works too), normally public.
func WithSchema(name string) Option {
	return func(c *config) { c.schema = name }
}

// Open connects to the database at url (a PostgreSQL URL or DSN; pool
// settings such as pool_max_conns are read from it) and applies pending
// migrations.
func Open(ctx context.Context, url string, opts ...Option) (*Store, error) {
	c := config{holdTimeout: DefaultHoldTimeout}
	for _, o := range opts {
		o(&c)
	}
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("parsing postgres url: %v", err)
	}
	if c.schema != "" {
		pc.ConnConfig.RuntimeParams["search_path"] = pgx.Identifier{c.schema}.Sanitize()
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("connecting to postgres: %v", err)
	}
	if err := migrate(ctx, pool, c.schema, c.upTo); err != nil {
		pool.Close()
		return nil, fmt.Errorf("migrating postgres schema: %v", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	s := &Store{pool: pool, holdTimeout: c.holdTimeout, stopReaper: stop,
		noLedger: c.upTo != 0 && c.upTo < ledgerMigration.version}
	s.reaper.Add(1)
	go func() {
		defer s.reaper.Done()
		s.reap(rctx)
	}()
	return s, nil
}

// Close stops the hold reaper, ends the locks of the nodes it beats for
// (nodelock.go) and closes the pool; calling it again does
// nothing.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stopReaper()
		s.reaper.Wait()
		s.releaseNodes()
		s.pool.Close()
	})
	return nil
}

// Postgres error codes the store maps to store errors or retries.
const (
	codeUniqueViolation      = "23505"
	codeForeignKeyViolation  = "23503"
	codeSerializationFailure = "40001"
	codeDeadlockDetected     = "40P01"
	codeNumericOutOfRange    = "22003"
)

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// retryable reports whether a transaction failed only because of
// concurrency and may simply be run again.
func retryable(err error) bool {
	c := pgCode(err)
	return c == codeSerializationFailure || c == codeDeadlockDetected
}

// maxRetries bounds the re-runs of a transaction that PostgreSQL aborted
// for a deadlock or a serialization failure.
const maxRetries = 10

// inTx runs fn in a transaction, committing if it returns nil and running
// it again when PostgreSQL aborted it for a concurrency reason.
func (s *Store) inTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, fn)
		if err == nil || !retryable(err) || attempt == maxRetries {
			return err
		}
	}
}

// Interface guards
var _ store.Store = (*Store)(nil)
