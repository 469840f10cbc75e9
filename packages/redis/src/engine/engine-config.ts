import { SluiceError } from '@sluice/core';
import type { ConfigRead, ConfigRecord, ConfigWrite } from '@sluice/core/engine';
import type { RedisConnection } from '../connection/connection.js';
import { withDeadline } from '@sluice/core/internal';
import { configKey } from '../key-layout.js';
import { StoredConfiguration } from '../live/stored-config.js';
import { versionError } from '../reply-errors.js';
import { configReadScript, configWriteScript } from '../scripts.js';

/**
 * A limiter's configuration record as live limits store it (configKey: '<version>\n<text>', the text core's
 * JSON), read with Redis's time and written by compare-and-set on the version (config_read.lua,
 * config_write.lua). A record written is then raised in the version keys decisions read (raise_version.lua:
 * the limiter's one key on a standalone server, every slot's on a Cluster), as limiter.reconfigure does, so
 * that the next decision anywhere under an older version answers `{ stale }`.
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

  async write(prefix: string, expected: number, record: ConfigRecord): Promise<ConfigWrite> {
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
    await new StoredConfiguration({ connection: this.#connection, prefix, timeoutMs: this.#timeoutMs }).raise(
      record.version,
      undefined,
    );
    return { written: true };
  }
}
