#!/usr/bin/env bash
# A private PostgreSQL primary (port 5441) with one streaming replica of it (5442, made by
# pg_basebackup -R), under /tmp/sg-pg-replica, for the read-replica tests (test/integration/read-replicas.test.ts)
# and for trying DATABASE_REPLICA_URLS by hand. Trust auth on 127.0.0.1, user postgres; fsync off (test data only).
# Usage (as root, or as the postgres user): scripts/pg-replica.sh up | down. Leaves the machine's own PostgreSQL alone.
#   TEST_PRIMARY_URL=postgres://postgres@127.0.0.1:5441/postgres TEST_REPLICA_URLS=postgres://postgres@127.0.0.1:5442/postgres
# Pausing the replica's replay (`select pg_wal_replay_pause()` on 5442) makes it lag on purpose.
set -euo pipefail
root="${PG_REPLICA_DIR:-/tmp/sg-pg-replica}"
primary_port="${PG_PRIMARY_PORT:-5441}"
replica_port="${PG_REPLICA_PORT:-5442}"
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { if [ "$(id -u)" = 0 ]; then su postgres -s /bin/bash -c "$*"; else bash -c "$*"; fi; }
case "${1:-}" in
up)
  "$0" down >/dev/null 2>&1 || true
  mkdir -p "$root" && chmod 777 "$root"
  as_pg "$bin/initdb -D $root/primary -A trust -U postgres >$root/initdb.log 2>&1"
  cat >>"$root/primary/postgresql.conf" <<CONF
port = $primary_port
listen_addresses = '127.0.0.1'
unix_socket_directories = '$root'
wal_level = replica
max_wal_senders = 5
hot_standby = on
fsync = off
max_connections = 200
CONF
  echo "host replication all 127.0.0.1/32 trust" >>"$root/primary/pg_hba.conf"
  as_pg "$bin/pg_ctl -D $root/primary -l $root/primary.log -w start >/dev/null"
  as_pg "$bin/pg_basebackup -h 127.0.0.1 -p $primary_port -U postgres -D $root/replica -R -X stream >$root/basebackup.log 2>&1"
  sed -i "s/^port = $primary_port/port = $replica_port/" "$root/replica/postgresql.conf"
  as_pg "$bin/pg_ctl -D $root/replica -l $root/replica.log -w start >/dev/null"
  for _ in $(seq 100); do
    psql -h 127.0.0.1 -p "$replica_port" -U postgres -Atc "select pg_is_in_recovery()" 2>/dev/null | grep -q t && break
    sleep 0.2
  done
  psql -h 127.0.0.1 -p "$replica_port" -U postgres -Atc "select pg_is_in_recovery()" | grep -q t
  echo "up: postgres primary $primary_port, streaming replica $replica_port ($root)"
  ;;
down)
  for d in replica primary; do [ -d "$root/$d" ] && as_pg "$bin/pg_ctl -D $root/$d -m immediate stop" >/dev/null 2>&1 || true; done
  rm -rf "$root"
  echo down
  ;;
stop-replica)
  as_pg "$bin/pg_ctl -D $root/replica -m fast stop" >/dev/null
  ;;
start-replica)
  as_pg "$bin/pg_ctl -D $root/replica -l $root/replica.log -w start" >/dev/null
  ;;
*) echo "usage: $0 up|down|stop-replica|start-replica"; exit 2 ;;
esac
