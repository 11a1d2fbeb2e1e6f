#!/usr/bin/env bash
# make demo: start the upstream simulator and the gateway, create a demo
# account, key and dashboard invitation through the admin API, print a curl
# that works, and stop everything on Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."

PORT="${SDR_PORT:-8080}"
ADMIN="localhost:2019"
DATA="$(mktemp -d -t sdr-demo-XXXXXX)"
LOG="$DATA/logs"
mkdir -p "$LOG"

pids=()
cleanup() {
	echo
	echo "stopping demo…"
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DATA"
}
trap cleanup EXIT INT TERM

bin/upstream-sim -a 127.0.0.1:9101 -b 127.0.0.1:9102 >"$LOG/sim.log" 2>&1 &
pids+=($!)

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
KEY=$(bin/caddy sdr key create demo --name demo --address "$ADMIN" | sed -n 's/.*"key": "\(sdr_live_[A-Za-z0-9]*\)".*/\1/p')
if [ -z "$KEY" ]; then
	echo "creating the demo key failed" >&2
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
  account      demo, 10 credits
  API key      $KEY
  dashboard    $INVITE
               (one-time invitation of demo@example.com: open it, choose a
               password, then sign in at http://127.0.0.1:$PORT/dashboard/)

Try:

curl -sS -X POST http://127.0.0.1:$PORT/v1/extract/pro_net/company.info \\
  -H 'Authorization: Bearer $KEY' -H 'Content-Type: application/json' \\
  -d '{"urls": ["https://www.linkedin.com/company/kraft-heinz-company"]}'

curl -sS http://127.0.0.1:$PORT/v1/account/balance -H 'Authorization: Bearer $KEY'
curl -sS http://127.0.0.1:$PORT/v1/services

Press Ctrl-C to stop.
MSG
wait
