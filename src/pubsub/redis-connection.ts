import { createRequire } from 'node:module';
import type { Cluster, ClusterOptions, Redis as RedisClient, RedisOptions } from 'ioredis';

/** Where Redis is: a `redis://` URL (one server), or the `host:port` seed nodes of a Redis Cluster. */
export type RedisTarget = string | string[];

/** A connection to one server or to a cluster: the commands and events the server uses are the same. */
export type RedisLike = RedisClient | Cluster;

/** Resolves when the connection is ready; rejects at once unless it is being made right now. */
export function whenReady(client: RedisLike): Promise<void> {
  if (client.status === 'ready') return Promise.resolve();
  if (client.status !== 'connecting' && client.status !== 'connect') return Promise.reject(new Error(`redis ${client.status}`));
  return new Promise((resolve, reject) => {
    const onReady = () => {
      client.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      client.off('ready', onReady);
      reject(new Error('redis connection closed'));
    };
    client.once('ready', onReady);
    client.once('close', onClose);
  });
}

/** ioredis is loaded only when a Redis URL is configured (start-up time and memory without Redis). */
export function loadRedis(): typeof RedisClient {
  return loadIoredis().Redis;
}

function loadIoredis() {
  return createRequire(import.meta.url)('ioredis') as typeof import('ioredis');
}

/** `host:port` seeds as ioredis takes them. */
function seeds(nodes: string[]) {
  return nodes.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
}

/**
 * A client of `target`: one server with `options`, or a cluster whose node connections take
 * `options` (and `cluster`: the cluster client's own, e.g. `shardedSubscribers`).
 */
export function connectRedis(target: RedisTarget, options: RedisOptions, cluster: ClusterOptions = {}): RedisLike {
  if (typeof target === 'string') return new (loadRedis())(target, options);
  const { lazyConnect, enableOfflineQueue, ...nodeOptions } = options;
  return new (loadIoredis().Cluster)(seeds(target), {
    ...cluster,
    lazyConnect,
    enableOfflineQueue,
    redisOptions: { ...nodeOptions, ...cluster.redisOptions },
  });
}

/** How logs and `/readyz` name the target (a URL's password hidden). */
export function describeTarget(target: RedisTarget, redact: (url: string) => string): string {
  return typeof target === 'string' ? redact(target) : `Redis Cluster (seeds ${target.join(',')})`;
}
