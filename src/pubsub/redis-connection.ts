import { createRequire } from 'node:module';
import type { Redis as RedisClient } from 'ioredis';

/** Resolves when the connection is ready; rejects at once unless it is being made right now. */
export function whenReady(client: RedisClient): Promise<void> {
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
  return (createRequire(import.meta.url)('ioredis') as typeof import('ioredis')).Redis;
}
