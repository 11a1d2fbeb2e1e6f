package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// A node's lock: from its first heartbeat to its last, a node holds a
// session-level advisory lock keyed by its name, on a connection of its
// own (not the pool's), and its async_nodes row says which key
// (lock_key). PostgreSQL releases the lock when that session ends: a
// process killed, or a host gone, its socket closed by the kernel. The
// claim of any node then reads in pg_locks that nobody holds the key and
// takes the dead node's parked runs at once, instead of waiting for its
// heartbeat to lapse (the lease: 30 s by default, kept for the healthy
// case and as the fallback for a session the server does not see end,
// such as a host cut off the network without a reset).
//
// A live node whose lock connection broke is taken for dead too, for a
// moment: the claim takes its parked runs only, never the runs its
// goroutines run (those keep their own lease), and every write of a
// parked run by its owner (UnparkAsyncRun, DelayAsyncRuns) is
// conditioned in SQL on its owner: one row lock decides whether the
// node resumed the run or another took it. Its next beat finds the
// connection broken and locks again.

// nodeLockSQL takes node's lock without waiting: the key hashes the node
// with the schema, so two schemas of one database (test runs, or
// deployments) never share a key.
const nodeLockSQL = `
SELECT k, pg_try_advisory_lock(k) FROM (SELECT hashtextextended('sdr async node ' || current_schema() || ' ' || $1, 0) AS k) x`

// nodeLock is a node's lock, held by its session on conn.
type nodeLock struct {
	conn *pgx.Conn
	key  int64
}

// nodeLocks are the locks of the nodes this store beats for (one in a
// gateway; the conformance tests beat for several).
type nodeLocks struct {
	mu     sync.Mutex
	m      map[string]*nodeLock
	closed bool
}

// holdNode returns the key of node's lock, checking that its session
// lives (one round trip per beat, which also keeps the connection from
// idling out); it takes the lock first on node's first beat, or again
// when its session ended (then relocked says so: meanwhile another node
// may have taken node's parked runs over).
func (s *Store) holdNode(ctx context.Context, node string) (key int64, relocked bool, err error) {
	s.locks.mu.Lock()
	if s.locks.closed {
		s.locks.mu.Unlock()
		return 0, false, errors.New("the store is closed")
	}
	l := s.locks.m[node]
	delete(s.locks.m, node) // this beat's while it checks; beats of a node take turns
	s.locks.mu.Unlock()
	if l != nil {
		if _, err := l.conn.Exec(ctx, `SELECT 1`); err == nil {
			s.keepNode(node, l)
			return l.key, false, nil
		}
		l.release()
		relocked = true
	}
	l, err = s.lockNode(ctx, node)
	if err != nil {
		return 0, relocked, err
	}
	s.keepNode(node, l)
	return l.key, relocked, nil
}

// keepNode records node's lock, or releases it if the store closed
// meanwhile.
func (s *Store) keepNode(node string, l *nodeLock) {
	s.locks.mu.Lock()
	closed := s.locks.closed
	if !closed {
		if s.locks.m == nil {
			s.locks.m = map[string]*nodeLock{}
		}
		s.locks.m[node] = l
	}
	s.locks.mu.Unlock()
	if closed {
		l.release()
	}
}

// lockNode opens a connection like the pool's and takes node's lock on
// it.
func (s *Store) lockNode(ctx context.Context, node string) (*nodeLock, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, s.pool.Config().ConnConfig)
	if err != nil {
		return nil, fmt.Errorf("connecting for the node's lock: %w", err)
	}
	l := &nodeLock{conn: conn}
	var ok bool
	if err := conn.QueryRow(ctx, nodeLockSQL, node).Scan(&l.key, &ok); err != nil {
		l.release()
		return nil, fmt.Errorf("taking the node's lock: %w", err)
	}
	if !ok {
		// Another session holds it: one that has not ended yet (the
		// server sees a broken connection end a little later), or a
		// process of the same name.
		l.release()
		return nil, errors.New("taking the node's lock: another session holds it")
	}
	return l, nil
}

// releaseNode ends node's lock, if held: its session ends, and the lock
// with it.
func (s *Store) releaseNode(node string) {
	s.locks.mu.Lock()
	l := s.locks.m[node]
	delete(s.locks.m, node)
	s.locks.mu.Unlock()
	if l != nil {
		l.release()
	}
}

// releaseNodes ends every node's lock, as the store closes.
func (s *Store) releaseNodes() {
	s.locks.mu.Lock()
	s.locks.closed = true
	m := s.locks.m
	s.locks.m = nil
	s.locks.mu.Unlock()
	for _, l := range m {
		l.release()
	}
}

// release closes the lock's connection, which ends its session and so
// releases the lock (closing a broken one just frees it).
func (l *nodeLock) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.conn.Close(ctx)
}
