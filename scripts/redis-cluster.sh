#!/usr/bin/env bash
# A private Redis Cluster for tests and CI on one machine: six nodes (three primaries, three replicas)
# on ports BASE+1..BASE+6 (REDIS_CLUSTER_PORT_BASE, default 7200: 7201-7206), a 2-second node timeout
# so that a killed primary fails over quickly, no persistence, all under /tmp/sg-redis-cluster-BASE.
# Touches no Redis the machine started.
#   redis-cluster.sh up          start a fresh cluster (stopping one left behind), wait for cluster_state:ok
#   redis-cluster.sh down        stop every node and remove the folder
#   redis-cluster.sh start PORT  start one node again (after a kill: it rejoins, as a replica if it was failed over)
#   redis-cluster.sh nodes       print the seed list, host:port,… (what REDIS_CLUSTER_NODES takes)
set -euo pipefail
base=${REDIS_CLUSTER_PORT_BASE:-7200}
root=/tmp/sg-redis-cluster-$base
ports=$(seq $((base + 1)) $((base + 6)))
start_node() {
  redis-server --port "$1" --bind 127.0.0.1 --cluster-enabled yes --cluster-config-file "$root/nodes-$1.conf" \
    --cluster-node-timeout 2000 --dir "$root" --save "" --appendonly no --daemonize yes \
    --pidfile "$root/$1.pid" --logfile "$root/$1.log"
  for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return 0; sleep 0.1; done
  echo "redis-server on $1 did not start (see $root/$1.log)" >&2
  return 1
}
cluster_ok() {
  for _ in $(seq 150); do
    redis-cli -p "$1" cluster info 2>/dev/null | grep -q cluster_state:ok && return 0
    sleep 0.2
  done
  echo "cluster not ok" >&2
  return 1
}
case "${1:-}" in
up)
  "$0" down >/dev/null 2>&1 || true
  mkdir -p "$root"
  for p in $ports; do start_node "$p"; done
  # shellcheck disable=SC2046
  redis-cli --cluster create $(for p in $ports; do printf '127.0.0.1:%s ' "$p"; done) \
    --cluster-replicas 1 --cluster-yes >"$root/create.log" 2>&1
  cluster_ok $((base + 1))
  # Every node must agree (three replicas attached) before a client reads the slots from any of
  # them, and before a test kills a primary that must fail over.
  for p in $ports; do
    cluster_ok "$p"
    for _ in $(seq 150); do
      [ "$(redis-cli -p "$p" cluster nodes | grep -c slave)" -eq 3 ] && break
      sleep 0.2
    done
  done
  echo "up: redis cluster 127.0.0.1:$((base + 1))-$((base + 6))"
  ;;
down)
  pids=$(cat "$root"/*.pid 2>/dev/null || true)
  for pid in $pids; do kill "$pid" 2>/dev/null || true; done
  # Gone before the ports are taken again.
  for pid in $pids; do for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done; done
  rm -rf "$root"
  echo down
  ;;
start)
  start_node "${2:?port}"
  cluster_ok "$2"
  ;;
nodes)
  for p in $ports; do printf '127.0.0.1:%s\n' "$p"; done | paste -sd, -
  ;;
*)
  echo "usage: $0 up|down|start PORT|nodes" >&2
  exit 2
  ;;
esac
