import { SluiceError } from '@sluice/core';
import type { RedisConnection } from '../connection/connection.js';
import { withDeadline } from '../deadline.js';
import { configKey, resetChannel, stateKey, versionKey, versionKeyBeside } from '../key-layout.js';
import { versionError } from '../reply-errors.js';
import { configReadScript, configWriteScript, raiseVersionScript } from '../scripts.js';
import { type LiveConfig, decodeConfig, encodeConfig } from './config-record.js';

/** How many slots' versions one reconfigure raises at once on a Cluster. */
const RAISE_CONCURRENCY = 512;
/**
 * The deadline of one round of raises on a Cluster: a change is rare and a round is 512 calls, the first of
 * which may load the script on each primary; a decision's deadline is far too short for it.
 */
const RAISE_DEADLINE_MS = 5_000;

/** Where a limiter's configuration lives: its client, prefix and the deadline of each call. */
export interface StoredConfigurationParts {
  readonly connection: RedisConnection;
  readonly prefix: string;
  readonly timeoutMs: number;
}

/**
 * A limiter's configuration as kept in Redis for every node of its prefix (configKey), and the versions
 * decisions read (versionKey): read it, store a next version if none was stored meanwhile, tell the slots and
 * the other nodes of it. Every mode's live limits are made of these steps (LiveBinding for exact and leased
 * mode, divided mode's binding).
 * @example
 * const stored = new StoredConfiguration({ connection, prefix: 'api', timeoutMs: 200 })
 * const current = await stored.read() // undefined: never changed
 */
export class StoredConfiguration {
  readonly #parts: StoredConfigurationParts;

  constructor(parts: StoredConfigurationParts) {
    this.#parts = parts;
  }

  /** The stored configuration, or undefined when none is stored. Rejects when it cannot be read or used. */
  async read(): Promise<LiveConfig | undefined> {
    const { connection, prefix, timeoutMs } = this.#parts;
    let reply: unknown;
    try {
      reply = await withDeadline(
        connection.runScript(configReadScript(), [configKey(prefix)], []),
        timeoutMs,
        'a configuration read',
      );
    } catch (error) {
      throw storeUnavailable('the configuration could not be read', error);
    }
    if (reply === null || reply === undefined) return undefined;
    return decodeConfig(Buffer.isBuffer(reply) ? reply.toString('utf8') : String(reply), configKey(prefix));
  }

  /**
   * Stores `next` if the stored version is still `fromVersion` (a compare-and-set): another node's change
   * first rejects with SluiceError 'CONFLICT' naming the version in force, and nothing is stored.
   */
  async write(fromVersion: number, next: LiveConfig): Promise<void> {
    const { connection, prefix, timeoutMs } = this.#parts;
    try {
      await withDeadline(
        connection.runScript(configWriteScript(), [configKey(prefix)], [String(fromVersion), encodeConfig(next)]),
        timeoutMs,
        'a configuration write',
      );
    } catch (error) {
      const won = versionError(error, 'SLUICE_CONFLICT');
      if (won === undefined) throw storeUnavailable('the configuration could not be stored', error);
      throw new SluiceError(
        'CONFLICT',
        `another node changed the configuration first: version ${won} is in force (this change was made from ` +
          `version ${fromVersion}); nothing was changed`,
      );
    }
  }

  /**
   * Raises the configuration version where decisions must learn of it: the limiter's one version key on a
   * standalone server; on a Cluster, `key`'s slot (an override) or every slot (the limiter's rules).
   */
  async raise(version: number, key: string | undefined): Promise<void> {
    const { connection, prefix, timeoutMs } = this.#parts;
    const raise = (versionAt: string) => connection.runScript(raiseVersionScript(), [versionAt], [String(version)]);
    try {
      if (!connection.isCluster) {
        await withDeadline(raise(versionKey(prefix, undefined)), timeoutMs, 'a configuration version');
        return;
      }
      if (key !== undefined) {
        const beside = versionKeyBeside(prefix, stateKey(prefix, key, '~o'), true);
        await withDeadline(raise(beside), timeoutMs, 'a configuration version');
        return;
      }
      for (let first = 0; first < 16_384; first += RAISE_CONCURRENCY) {
        const slots = Array.from({ length: RAISE_CONCURRENCY }, (_, i) => versionKey(prefix, first + i));
        await withDeadline(
          Promise.all(slots.map(raise)),
          Math.max(RAISE_DEADLINE_MS, timeoutMs * 4),
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

  /**
   * Makes a change for every node: `make` turns the stored configuration (or `known`, this node's, when none
   * is stored) into the next version (undefined: nothing to change), which is stored if the version is still
   * the one read (write: a compare-and-set), then raised where decisions must learn of it (every slot, or only
   * `key`'s), adopted by this node, and announced to the others. A stored configuration newer than `known` is
   * adopted first. Resolves with the configuration made (undefined: none).
   */
  async change(
    known: LiveConfig,
    make: (current: LiveConfig, version: number) => LiveConfig | undefined,
    key: string | undefined,
    adopt: (config: LiveConfig) => void,
    report: (error: Error) => void,
  ): Promise<LiveConfig | undefined> {
    const current = (await this.read()) ?? known;
    if (current.version > known.version) adopt(current);
    const next = make(current, current.version + 1);
    if (next === undefined) return undefined;
    await this.write(current.version, next);
    await this.raise(next.version, key);
    adopt(next);
    await this.announce().catch((error: unknown) => report(error instanceof Error ? error : new Error(String(error))));
    return next;
  }

  /** Tells the limiter's other nodes of a change at once: '' on its channel (no key encodes to ''). */
  async announce(): Promise<void> {
    const { connection, prefix, timeoutMs } = this.#parts;
    await withDeadline(connection.publish(resetChannel(prefix), ''), timeoutMs, 'a configuration message');
  }
}

/** A SluiceError 'STORE_UNAVAILABLE' saying what could not be done and why. */
export function storeUnavailable(what: string, cause: unknown): SluiceError {
  return new SluiceError('STORE_UNAVAILABLE', `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, {
    cause,
  });
}
