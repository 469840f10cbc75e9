import type { HealthProbe } from '@sluice/core/internal';
import type { Pool } from 'pg';

/**
 * What the health machine (core's EngineHealth) asks of a node-postgres pool: it hears the pool's 'error' (a
 * connection lost while idle) and 'connect' (a new connection: probed at once), and probes with `SELECT 1` on
 * a connection of the pool (the machine gives it the store's deadline). A pool opens connections per call, so
 * it is never known to be disconnected beforehand, and there is no backoff to cut short. PostgreSQL's errors
 * are never about one key's state (the engine's tables hold plain rows): every error counts as a failure.
 * @example
 * const health = new EngineHealth({ ...poolHealthProbe(pool), timeoutMs: 50, onChange })
 */
export function poolHealthProbe(pool: Pool): HealthProbe {
  return {
    link: {
      connected: true,
      nudgeReconnect: () => undefined,
      watch(onError, onReady) {
        const ready = (): void => onReady();
        pool.on('error', onError);
        pool.on('connect', ready);
        return () => {
          pool.off('error', onError);
          pool.off('connect', ready);
        };
      },
    },
    probe: () => pool.query('SELECT 1'),
    isKeyScoped: () => false,
  };
}
