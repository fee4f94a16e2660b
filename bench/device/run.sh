#!/usr/bin/env bash
# Runs `pnpm bench:scale` on a bare machine from the bundle this script sits in (bench/device/build.ts
# made it): unpacks node, PostgreSQL, nats-server and the bundled project, starts PostgreSQL (as an
# ordinary user: it refuses root) and nats-server with JetStream on loopback, then runs
# bench/scale.mjs with the harness's own variables (R, BENCH_SECONDS, BENCH_CONNECTIONS, ...).
# Needs only bash, tar, xz and glibc there.
#
#   OUT=/some/dir R=1,4,8 BENCH_CONNECTIONS=128 bash .devbundle/run.sh
#
# Writes to $OUT: scale.log (everything the harness printed), scale-latest.json, env.txt, and
# logs.tar.gz (every process's log).
set -u
T0=$(date +%s)
B=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-/tmp/im-scale-out}
W=${BUNDLE_WORK:-/tmp/im-scale}
PGPORT=${BUNDLE_PG_PORT:-55432}
NATSPORT=${BUNDLE_NATS_PORT:-54222}
mkdir -p "$OUT"
log() { echo "[run.sh +$(($(date +%s) - T0))s] $*" | tee -a "$OUT/scale.log" >&2; }

PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  [ -f "$W/pgdata/postmaster.pid" ] && kill -INT "$(head -1 "$W/pgdata/postmaster.pid")" 2>/dev/null
  sleep 1
  (cd "$W" && tar czf "$OUT/logs.tar.gz" logs app/bench/results/logs 2>/dev/null)
}
trap cleanup EXIT

rm -rf "$W" && mkdir -p "$W/bin" "$W/app" "$W/logs"
xz -dc "$B/node.xz" >"$W/bin/node" && xz -dc "$B/nats-server.xz" >"$W/bin/nats-server" && chmod 755 "$W/bin/node" "$W/bin/nats-server" || { log "cannot unpack node or nats-server"; exit 1; }
tar -xJf "$B/pg.tar.xz" -C "$W" && tar -xJf "$B/app.tar.xz" -C "$W/app" || { log "cannot unpack PostgreSQL or the app"; exit 1; }
export PATH="$W/bin:$PATH"
{
  echo "bundle: $(tr '\n' ';' <"$B/MANIFEST")"
  echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'); memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); kernel $(uname -r)"
  echo "node $(node --version); $("$W/bin/nats-server" --version); $("$W/native/bin/postgres" --version)"
} | tee "$OUT/env.txt" >&2

# PostgreSQL refuses to run as root: an ordinary user owns its data directory.
PGUSER_OS=imbench
if [ "$(id -u)" = 0 ]; then
  id "$PGUSER_OS" >/dev/null 2>&1 || useradd -M -r -s /bin/sh "$PGUSER_OS" 2>/dev/null || { echo "$PGUSER_OS:x:19998:19998::/tmp:/bin/sh" >>/etc/passwd; echo "$PGUSER_OS:x:19998:" >>/etc/group; }
  as_pg() { setpriv --reuid="$(id -u $PGUSER_OS)" --regid="$(id -g $PGUSER_OS)" --clear-groups "$@"; }
else
  as_pg() { "$@"; }
fi
chmod 755 "$W" "$W/native"
mkdir -p "$W/pgdata" && chown "$PGUSER_OS" "$W/pgdata" 2>/dev/null; chmod 700 "$W/pgdata"
as_pg "$W/native/bin/initdb" -D "$W/pgdata" -U postgres --auth=trust --no-locale -E UTF8 >"$W/logs/initdb.log" 2>&1 || { log "initdb failed"; tail -20 "$W/logs/initdb.log" >&2; exit 1; }
# Settings for a big machine; synchronous_commit and fsync stay at their defaults.
PGSETTINGS="-c max_connections=1000 -c shared_buffers=2GB -c max_wal_size=8GB -c checkpoint_timeout=30min -c huge_pages=off -c dynamic_shared_memory_type=mmap"
as_pg "$W/native/bin/postgres" -D "$W/pgdata" -p "$PGPORT" -c listen_addresses=127.0.0.1 -c unix_socket_directories= $PGSETTINGS >"$W/logs/postgres.log" 2>&1 &
PIDS+=($!)
"$W/bin/nats-server" -a 127.0.0.1 -p "$NATSPORT" -js -sd "$W/nats" >"$W/logs/nats.log" 2>&1 &
PIDS+=($!)
export DATABASE_URL="postgres://postgres@127.0.0.1:$PGPORT/postgres" NATS_URL="nats://127.0.0.1:$NATSPORT"
for _ in $(seq 1 60); do
  node -e 'const c=new (require("net").Socket)();c.connect(Number(process.argv[1]),"127.0.0.1",()=>process.exit(0));c.on("error",()=>process.exit(1))' "$PGPORT" && break
  sleep 0.5
done
sleep 1
log "PostgreSQL on $PGPORT ($PGSETTINGS), nats-server on $NATSPORT; running bench/scale.mjs with R=${R:-1,2}"
cd "$W/app" && BENCH_BUNDLE_DIR="$W/app" node bench/scale.mjs 2>&1 | tee -a "$OUT/scale.log"
status=${PIPESTATUS[0]}
cp "$W/app/bench/results/scale-latest.json" "$OUT/" 2>/dev/null
log "bench/scale.mjs exited with $status"
exit "$status"
