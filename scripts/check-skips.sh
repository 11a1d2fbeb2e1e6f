#!/usr/bin/env bash
# Fails when a `go test -v` log shows a skipped test whose reason is not the
# documented one (a missing SDR_TEST_POSTGRES_URL or SDR_TEST_REDIS_URL).
# caddytest and friends skip, rather than fail, when their set-up fails:
# that must not pass CI silently. go test -v prints a test's skip message
# on the lines between its "=== RUN" and its "--- SKIP".
set -u
awk '
/^=== (RUN|CONT|PAUSE)/ { msg = ""; next }
/--- SKIP:/ {
  if (msg !~ /SDR_TEST_(POSTGRES|REDIS)_URL/) { print "undocumented skip: " $0 " " msg; bad = 1 }
  msg = ""; next }
{ msg = msg " " $0 }
END { exit bad }' "$1"
