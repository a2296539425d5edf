#!/usr/bin/env bash
# Provides what the service tests need, idempotently:
#   1. a PostgreSQL server on loopback (127.0.0.1:${AGENTGUARD_PG_PORT:-5432}) with a test role and database,
#      whose SQLAlchemy URL is written to .cache/pg_url (gitignored; tests read it, nothing is exported);
#   2. Debian's chromium for the headless dashboard test (scripts/setup_chromium.sh), and wrk for the
#      load benchmark.
# Quick when everything is already up. Runs as root in CI with no stdin. When apt-get is unavailable (or
# we are not root) it says why and exits 0 outside CI, non-zero when CI is set.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .cache

PORT="${AGENTGUARD_PG_PORT:-5432}"
DB=agentguard_test
ROLE=agentguard
PASS=agentguard
URL="postgresql+psycopg://${ROLE}:${PASS}@127.0.0.1:${PORT}/${DB}"

say() { echo "setup_postgres: $*"; }
give_up() {
  say "$*"
  if [ -n "${CI:-}" ]; then say "CI is set: failing"; exit 1; fi
  say "skipping (the PostgreSQL tests will skip; set CI=1 to make this fatal)"; exit 0
}

pg_ready() { command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p "$PORT"; }
url_works() {
  command -v psql >/dev/null 2>&1 &&
    PGPASSWORD="$PASS" PGCONNECT_TIMEOUT=3 psql -h 127.0.0.1 -p "$PORT" -U "$ROLE" -d "$DB" -tAc 'select 1' >/dev/null 2>&1
}

# Browser for the dashboard test (own script so it can be run alone).
./scripts/setup_chromium.sh || { [ -n "${CI:-}" ] && exit 1; true; }

# Fast path: already up and reachable with the test credentials.
if pg_ready && url_works; then
  echo "$URL" > .cache/pg_url
  say "PostgreSQL already up: $(cat .cache/pg_url)"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  give_up "not root, and no PostgreSQL reachable at 127.0.0.1:${PORT} with role ${ROLE}: cannot install or start one"
fi

if ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || give_up "apt-get not found: cannot install PostgreSQL"
  say "installing postgresql (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq || give_up "apt-get update failed"
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null || give_up "apt-get install postgresql failed"
fi

VER="$(ls /usr/lib/postgresql | sort -V | tail -1)"
BIN="/usr/lib/postgresql/${VER}/bin"
if ! pg_ready; then
  if command -v pg_lsclusters >/dev/null 2>&1; then
    # Debian cluster tooling (postgresql-common): create the cluster if missing, then start it.
    if ! pg_lsclusters -h | awk '{print $1" "$2}' | grep -q "^${VER} main$"; then
      pg_createcluster "$VER" main -p "$PORT" -- --auth-local=peer --auth-host=scram-sha-256 >/dev/null
    fi
    pg_ctlcluster "$VER" main start || true
  else
    DATA=/var/lib/postgresql/agentguard-data
    if [ ! -f "$DATA/PG_VERSION" ]; then
      install -d -o postgres -g postgres "$DATA"
      runuser -u postgres -- "$BIN/initdb" -D "$DATA" --auth-local=peer --auth-host=scram-sha-256 >/dev/null
    fi
    runuser -u postgres -- "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w \
      -o "-c listen_addresses=127.0.0.1 -p ${PORT}" start >/dev/null
  fi
  for _ in $(seq 1 50); do pg_ready && break; sleep 0.2; done
  pg_ready || { say "PostgreSQL did not start"; [ -n "${CI:-}" ] && exit 1; exit 0; }
fi

psql_su() { runuser -u postgres -- psql -p "$PORT" -v ON_ERROR_STOP=1 -qtA "$@"; }
if [ -z "$(psql_su -c "select 1 from pg_roles where rolname='${ROLE}'")" ]; then
  psql_su -c "create role ${ROLE} login password '${PASS}'"
fi
if [ -z "$(psql_su -c "select 1 from pg_database where datname='${DB}'")" ]; then
  psql_su -c "create database ${DB} owner ${ROLE}"
fi
url_works || { say "cannot connect as ${ROLE} over TCP"; [ -n "${CI:-}" ] && exit 1; exit 0; }
echo "$URL" > .cache/pg_url
say "PostgreSQL ${VER} up: $(cat .cache/pg_url)"
