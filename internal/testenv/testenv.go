// Package testenv gives tests the URLs of the real PostgreSQL and Redis
// that .ci/run starts (SDR_TEST_POSTGRES_URL, SDR_TEST_REDIS_URL), or skips
// them where the variable is unset: one wording of how to run them.
package testenv

import (
	"os"
	"testing"
)

// PostgresURL returns SDR_TEST_POSTGRES_URL or skips t; what names the tests
// skipped in the message.
func PostgresURL(t testing.TB, what string) string {
	t.Helper()
	return url(t, "SDR_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable", what)
}

// RedisURL returns SDR_TEST_REDIS_URL or skips t.
func RedisURL(t testing.TB, what string) string {
	t.Helper()
	return url(t, "SDR_TEST_REDIS_URL", "redis://127.0.0.1:6379/0", what)
}

func url(t testing.TB, name, example, what string) string {
	t.Helper()
	u := os.Getenv(name)
	if u == "" {
		t.Skipf("%s is not set: skipping %s (e.g. %s=%s)", name, what, name, example)
	}
	return u
}
