#!/usr/bin/env bash
# Records the terminal session of docs/cli.md: a real cluster (README command 1 on a temporary
# data directory and port), an operator who watches an intent and answers a suspension with the
# CLI, and the README's agent (packages/sdk/examples/agent.ts) asking the question.
# Run from the repository root with NATS at NATS_URL: bash packages/cli/scripts/record-session.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
DATA=$(mktemp -d)
PORT=${PORT:-18080}
export NATS_URL=${NATS_URL:-nats://127.0.0.1:4222}
DATA_DIR=$DATA PORT=$PORT HOST=127.0.0.1 BUS_NAMESPACE="rec$RANDOM" LOG_LEVEL=warn node --import tsx scripts/start-cluster.ts >"$DATA/cluster.log" 2>&1 &
CLUSTER=$!
trap 'kill $CLUSTER 2>/dev/null; wait $CLUSTER 2>/dev/null; rm -rf "$DATA"' EXIT
for _ in $(seq 1 120); do curl -sf "http://127.0.0.1:$PORT/readyz" >/dev/null && break; sleep 0.5; done

key() { node -e "console.log(require('$DATA/api-keys.json').find(k => k.roles[0] === '$1').key)"; }
export INTENTMESH_CONFIG="$DATA/config.json"
intentmesh() { node packages/cli/bin/intentmesh.mjs "$@"; }
say() { printf '$ %s\n' "$*"; }
run() { say "intentmesh $*"; intentmesh "$@"; echo; }

# Terminal 2: the operator.
say "key-of operator | intentmesh config set local --server http://127.0.0.1:$PORT --api-key-stdin"
key operator | intentmesh config set local --server "http://127.0.0.1:$PORT" --api-key-stdin; echo
ID=$(intentmesh intents create "Launch post" --active --json | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).id))')
say 'intentmesh intents create "Launch post" --active'; echo "created $ID (active, version 1)"; echo
say "INTENTMESH_API_KEY=\$(key-of coordinator) intentmesh tasks create $ID \"the launch post\""
INTENTMESH_API_KEY=$(key coordinator) intentmesh tasks create "$ID" "the launch post" | sed -E 's/^[0-9a-f-]{36}/<task>/'; echo

# Terminal 1: the watch, started before the agent.
intentmesh intents watch "$ID" >"$DATA/watch.txt" 2>&1 &
WATCH=$!
sleep 2
# The agent (README): claims the task and asks.
INTENTMESH_URL="http://127.0.0.1:$PORT" INTENTMESH_API_KEY=$(key agent) INTENT_ID=$ID node --import tsx packages/sdk/examples/agent.ts >"$DATA/agent.txt" 2>&1 &
AGENT=$!
for _ in $(seq 1 60); do intentmesh intents show "$ID" --json | grep -q '"suspended_awaiting_input"' && break; sleep 0.5; done
sleep 1
run suspensions list
run intents show "$ID"
run respond "$ID" yes
wait $AGENT
sleep 1
run tasks list "$ID"
kill -TERM $WATCH; wait $WATCH || true
echo
echo "----- terminal 1 -----"
say "intentmesh intents watch $ID"
cat "$DATA/watch.txt"
echo "^C"
echo "----- the agent -----"
cat "$DATA/agent.txt"
