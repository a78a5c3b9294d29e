#!/bin/sh
# A PostgreSQL of its own, sized for a bulk load, for the million-record job row: the machine's
# PostgreSQL as Debian installs it has 128 MB of shared buffers and checkpoints every 1 GB of WAL,
# which a million full records (9.3 GB of JSON, about 30 rows a record) outgrows half-way. Durability
# is the same as the machine's (fsync, synchronous commit and full-page writes stay on).
#
#   sudo sh bench/experiments/bulk-postgres.sh start [DIR=/var/tmp/bulk-postgres] [PORT=5433]
#   BENCH_ADMIN_URL=postgres://postgres@127.0.0.1:5433/postgres BENCH_ONLY=jobs BENCH_STORES=postgres \
#     BENCH_JOB_RECORDS=1000000 BENCH_JOB_FLOOR=0 BENCH_JOB_PER_RECORD_BASELINE=0 BENCH_WRITE_DOC=0 npm run bench
#   sudo sh bench/experiments/bulk-postgres.sh stop [DIR]      # stops it and deletes DIR
#
# Needs Debian's PostgreSQL 15 binaries and the `postgres` user; run as root (it runs the server as
# `postgres`). Memory: 8 GB of shared buffers; disk: up to 24 GB of WAL beside the data.
set -eu
action=${1:-}
dir=${2:-/var/tmp/bulk-postgres}
port=${3:-5433}
bin=/usr/lib/postgresql/15/bin

case "$action" in
  start)
    mkdir -p "$dir"
    chown postgres "$dir"
    su postgres -c "$bin/initdb -D '$dir/data' --auth=trust" > "$dir/initdb.log"
    cat >> "$dir/data/postgresql.conf" <<EOF
port = $port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
shared_buffers = 8GB
effective_cache_size = 16GB
wal_buffers = 64MB
max_wal_size = 24GB
min_wal_size = 2GB
checkpoint_timeout = 30min
checkpoint_completion_target = 0.9
wal_compression = lz4
bgwriter_lru_maxpages = 1000
maintenance_work_mem = 1GB
EOF
    su postgres -c "$bin/pg_ctl -D '$dir/data' -l '$dir/server.log' start -w"
    echo "BENCH_ADMIN_URL=postgres://postgres@127.0.0.1:$port/postgres"
    ;;
  stop)
    su postgres -c "$bin/pg_ctl -D '$dir/data' stop -m fast" || true
    rm -rf "$dir"
    ;;
  *)
    echo "usage: bulk-postgres.sh start|stop [DIR] [PORT]" >&2
    exit 2
    ;;
esac
