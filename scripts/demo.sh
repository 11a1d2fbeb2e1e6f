#!/usr/bin/env bash
# make demo: start the upstream simulator and the gateway, create a demo
# account, a test key and a live key and a dashboard invitation through the
# admin API, print curls that work (the test key first), and stop
# everything on Ctrl-C.
#
# make demo-reload (scripts/demo.sh reload): from another shell, while the
# demo runs, check the working tree's services/ as the reload will (sdr
# check, then the Caddyfile adapter), and only then restart its simulator
# on them and reload its gateway with the environment the demo started it
# with; a reload the gateway refuses puts the simulator back on the
# services the gateway still runs, so the two never disagree. A plain
# `bin/caddy reload` from a shell without SDR_DATA_DIR would point the
# gateway at another store (the gateway refuses that reload).
set -euo pipefail
cd "$(dirname "$0")/.."

# ENVFILE holds the running demo's environment, for demo-reload.
ENVFILE=bin/.demo-env

PORT="${SDR_PORT:-8080}"
ADMIN="localhost:2019"
if [ "${1:-}" = reload ] && [ -f "$ENVFILE" ]; then
	DATA="$(sed -n 's/^DEMO_DIR=//p' "$ENVFILE")"
else
	DATA="$(mktemp -d -t sdr-demo-XXXXXX)"
fi
LOG="$DATA/logs"
mkdir -p "$LOG"

# The simulator serves a copy of services/ ($SIMSVC), taken when it
# starts: the declarations the gateway runs, even while services/ is being
# edited, and what a refused reload rolls the simulator back to.
SIMSVC="$DATA/sim-services"

start_sim() {
	rm -rf "$SIMSVC" && cp -r services "$SIMSVC"
	bin/upstream-sim -a 127.0.0.1:9101 -b 127.0.0.1:9102 -services "$SIMSVC" >>"$LOG/sim.log" 2>&1 &
	echo $! >"$DATA/sim.pid"
}

# restart_sim [DIR]: the simulator again, on a fresh copy of services/,
# or on DIR (the copy it served before) as it is.
restart_sim() {
	kill "$(cat "$DATA/sim.pid")" 2>/dev/null || true
	sleep 0.2
	if [ -n "${1:-}" ]; then
		rm -rf "$SIMSVC" && mv "$1" "$SIMSVC"
		bin/upstream-sim -a 127.0.0.1:9101 -b 127.0.0.1:9102 -services "$SIMSVC" >>"$LOG/sim.log" 2>&1 &
		echo $! >"$DATA/sim.pid"
	else
		start_sim
	fi
	for _ in $(seq 1 50); do
		curl -fsS http://127.0.0.1:9101/_sim/health >/dev/null 2>&1 && break
		sleep 0.1
	done
}

if [ "${1:-}" = reload ]; then
	if [ ! -f "$ENVFILE" ]; then
		echo "no demo is running (start it with make demo in another shell)" >&2
		rm -rf "$DATA"
		exit 1
	fi
	# shellcheck source=/dev/null
	. "$ENVFILE"
	export SDR_DATA_DIR SDR_PORT SOURCE_A_URL SOURCE_B_URL
	# Validate first: what the reload would refuse changes nothing.
	echo "+ bin/caddy sdr check services"
	if ! bin/caddy sdr check services; then
		echo "refused by sdr check: nothing reloaded, the demo keeps serving the services it ran" >&2
		exit 1
	fi
	if ! bin/caddy adapt --config Caddyfile --adapter caddyfile >/dev/null; then
		echo "refused while adapting the Caddyfile: nothing reloaded" >&2
		exit 1
	fi
	[ -d "$SIMSVC" ] || cp -r services "$SIMSVC"
	PREV="$DATA/sim-services.prev"
	rm -rf "$PREV" && cp -r "$SIMSVC" "$PREV"
	restart_sim
	echo "+ SDR_DATA_DIR=$SDR_DATA_DIR SDR_PORT=$SDR_PORT SOURCE_A_URL=$SOURCE_A_URL SOURCE_B_URL=$SOURCE_B_URL bin/caddy reload --config Caddyfile --adapter caddyfile --address $ADMIN"
	if ! bin/caddy reload --config Caddyfile --adapter caddyfile --address "$ADMIN"; then
		echo "the gateway refused the reload and keeps its old config: the simulator goes back to those services" >&2
		restart_sim "$PREV"
		exit 1
	fi
	rm -rf "$PREV"
	echo "reloaded: the simulator serves services/ and the gateway runs its declarations"
	exit 0
fi

pids=()
cleanup() {
	echo
	echo "stopping demo…"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	kill "$(cat "$DATA/sim.pid" 2>/dev/null)" 2>/dev/null || true # demo-reload may have restarted it
	wait 2>/dev/null || true
	rm -f "$ENVFILE"
	rm -rf "$DATA"
}
trap cleanup EXIT INT TERM

start_sim

cat >"$ENVFILE" <<ENV
DEMO_DIR=$DATA
SDR_DATA_DIR=$DATA/badger
SDR_PORT=$PORT
SOURCE_A_URL=http://127.0.0.1:9101
SOURCE_B_URL=http://127.0.0.1:9102
ENV
SDR_DATA_DIR="$DATA/badger" SDR_PORT="$PORT" \
	SOURCE_A_URL=http://127.0.0.1:9101 SOURCE_B_URL=http://127.0.0.1:9102 \
	bin/caddy run --config Caddyfile --adapter caddyfile >"$LOG/caddy.log" 2>&1 &
pids+=($!)

for _ in $(seq 1 100); do
	if curl -fsS "http://127.0.0.1:$PORT/v1/services" >/dev/null 2>&1 &&
		curl -fsS "http://127.0.0.1:9101/_sim/health" >/dev/null 2>&1; then
		break
	fi
	sleep 0.1
done
if ! curl -fsS "http://127.0.0.1:$PORT/v1/services" >/dev/null; then
	echo "the gateway did not start; its log:" >&2
	cat "$LOG/caddy.log" >&2
	exit 1
fi

bin/caddy sdr account create demo --balance 10 --address "$ADMIN" >/dev/null
# A test key first (docs/testmode.md): records from the examples, no
# upstream, the test balance; then the live key.
TEST_KEY=$(bin/caddy sdr key create demo --test --name demo-test --address "$ADMIN" | sed -n 's/.*"key": "\(sdr_test_[A-Za-z0-9]*\)".*/\1/p')
KEY=$(bin/caddy sdr key create demo --name demo --address "$ADMIN" | sed -n 's/.*"key": "\(sdr_live_[A-Za-z0-9]*\)".*/\1/p')
if [ -z "$KEY" ] || [ -z "$TEST_KEY" ]; then
	echo "creating the demo keys failed" >&2
	exit 1
fi
INVITE=$(bin/caddy sdr member invite demo demo@example.com --address "$ADMIN" \
	--dashboard "http://127.0.0.1:$PORT/dashboard/" | head -n 1)
if [ -z "$INVITE" ]; then
	echo "inviting the demo member failed" >&2
	exit 1
fi

cat <<MSG

Social Data Router demo is running.
  gateway      http://127.0.0.1:$PORT   (admin $ADMIN)
  simulator    http://127.0.0.1:9101 (source_a), http://127.0.0.1:9102 (source_b)
  account      demo, 10 credits (and a test balance of 100)
  test key     $TEST_KEY
  live key     $KEY
  dashboard    $INVITE
               (one-time invitation of demo@example.com: open it, choose a
               password, then sign in at http://127.0.0.1:$PORT/dashboard/)

Try, with the test key first (no upstream is called, the live balance
stays 10; "livemode": false):

curl -sS -X POST http://127.0.0.1:$PORT/v1/extract/pro_net/company.info \\
  -H 'Authorization: Bearer $TEST_KEY' -H 'Content-Type: application/json' \\
  -d '{"urls": ["https://www.linkedin.com/company/kraft-heinz-company"]}'

and a magic input that makes every offer fail (502 provider_error):

curl -sS -X POST http://127.0.0.1:$PORT/v1/extract/pro_net/company.info \\
  -H 'Authorization: Bearer $TEST_KEY' -H 'Content-Type: application/json' \\
  -d '{"url": "https://www.linkedin.com/company/sdr-test-provider-error"}'

then the same call with the live key (the simulator answers, 10 credits pay):

curl -sS -X POST http://127.0.0.1:$PORT/v1/extract/pro_net/company.info \\
  -H 'Authorization: Bearer $KEY' -H 'Content-Type: application/json' \\
  -d '{"urls": ["https://www.linkedin.com/company/kraft-heinz-company"]}'

curl -sS http://127.0.0.1:$PORT/v1/account/balance -H 'Authorization: Bearer $KEY'
curl -sS http://127.0.0.1:$PORT/v1/services

After changing services/ (docs/add-a-service.md), reload from another shell with

  make demo-reload

or, by hand, with this demo's environment (without it the gateway would
look for another store, and refuses the reload):

  SDR_DATA_DIR=$DATA/badger SDR_PORT=$PORT \\
    SOURCE_A_URL=http://127.0.0.1:9101 SOURCE_B_URL=http://127.0.0.1:9102 \\
    bin/caddy reload --config Caddyfile --adapter caddyfile

Press Ctrl-C to stop.
MSG
wait
