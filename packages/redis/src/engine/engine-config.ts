import { SluiceError } from '@sluice/core';
import type { ConfigRead, ConfigRecord, ConfigWrite } from '@sluice/core/engine';
import { storeUnavailable, withDeadline } from '@sluice/core/internal';
import type { RedisConnection } from '../connection/connection.js';
import { configKey, stateKey, versionKey, versionKeyBeside } from '../key-layout.js';
import { versionError } from '../reply-errors.js';
import { configReadScript, configWriteScript, raiseVersionScript } from '../scripts.js';

/** How many slots' versions one write raises at once on a Cluster. */
const RAISE_CONCURRENCY = 512;
/**
 * The deadline of one round of raises on a Cluster: a change is rare and a round is 512 calls, the first of
 * which may load the script on each primary; a decision's deadline is far too short for it.
 */
const RAISE_DEADLINE_MS = 5_000;

/**
 * A limiter's configuration record as live limits store it (configKey: '<version>\n<text>', the text core's
 * JSON), read with Redis's time and written by compare-and-set on the version (config_read.lua,
 * config_write.lua). A record written is then raised in the version keys decisions read (raise_version.lua:
 * the limiter's one key on a standalone server; on a Cluster every slot's, or for a key's override only the
 * key's slot), so that the next decision there under an older version answers `{ stale }`.
 */
export class EngineConfiguration {
  readonly #connection: RedisConnection;
  readonly #timeoutMs: number;

  constructor(connection: RedisConnection, timeoutMs: number) {
    this.#connection = connection;
    this.#timeoutMs = timeoutMs;
  }

  async read(prefix: string): Promise<ConfigRead> {
    const reply = await withDeadline(
      this.#connection.runScript(configReadScript(), [configKey(prefix)], []),
      this.#timeoutMs,
      'a configuration read',
    );
    const [stored, now, ...more] = Array.isArray(reply) ? reply : [];
    const engineNowMs = Number(Buffer.isBuffer(now) ? now.toString('utf8') : now);
    if (!Number.isSafeInteger(engineNowMs) || more.length > 0)
      throw new Error(`config_read.lua answered ${String(reply)}`);
    if (stored === null || stored === undefined) return { record: undefined, engineNowMs };
    const raw = Buffer.isBuffer(stored) ? stored.toString('utf8') : String(stored);
    const newline = raw.indexOf('\n');
    const version = Number(raw.slice(0, newline));
    if (newline === -1 || !Number.isSafeInteger(version) || version < 1)
      throw new SluiceError(
        'STORE_MISCONFIGURED',
        `the configuration stored at ${configKey(prefix)} is not one sluice wrote: no version`,
      );
    return { record: { version, text: raw.slice(newline + 1) }, engineNowMs };
  }

  async write(prefix: string, expected: number, record: ConfigRecord, key: string | undefined): Promise<ConfigWrite> {
    try {
      await withDeadline(
        this.#connection.runScript(
          configWriteScript(),
          [configKey(prefix)],
          [String(expected), `${record.version}\n${record.text}`],
        ),
        this.#timeoutMs,
        'a configuration write',
      );
    } catch (error) {
      const stored = versionError(error, 'SLUICE_CONFLICT');
      if (stored !== undefined) return { written: false, conflict: stored };
      throw error;
    }
    await this.#raise(prefix, record.version, key);
    return { written: true };
  }

  /**
   * Raises the configuration version where decisions must learn of it: the limiter's one version key on a
   * standalone server; on a Cluster, `key`'s slot (an override) or every slot (the limiter's rules).
   */
  async #raise(prefix: string, version: number, key: string | undefined): Promise<void> {
    const connection = this.#connection;
    const raise = (versionAt: string) => connection.runScript(raiseVersionScript(), [versionAt], [String(version)]);
    try {
      if (!connection.isCluster) {
        await withDeadline(raise(versionKey(prefix, undefined)), this.#timeoutMs, 'a configuration version');
        return;
      }
      if (key !== undefined) {
        const beside = versionKeyBeside(prefix, stateKey(prefix, key, '~o'), true);
        await withDeadline(raise(beside), this.#timeoutMs, 'a configuration version');
        return;
      }
      for (let first = 0; first < 16_384; first += RAISE_CONCURRENCY) {
        const slots = Array.from({ length: RAISE_CONCURRENCY }, (_, i) => versionKey(prefix, first + i));
        await withDeadline(
          Promise.all(slots.map(raise)),
          Math.max(RAISE_DEADLINE_MS, this.#timeoutMs * 4),
          'configuration versions',
        );
      }
    } catch (error) {
      // Stored, and raised in the slots a node already decided under it: the rest learn of it there.
      throw storeUnavailable(
        `version ${version} was stored, but not every slot could be told of it yet (a node learns of it where a ` +
          'node of this version decides, or from the next change)',
        error,
      );
    }
  }
}
