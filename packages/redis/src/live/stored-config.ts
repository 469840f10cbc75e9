import { SluiceError } from '@sluice/core';
import type { RedisConnection } from '../connection/connection.js';
import { configKey, resetChannel, stateKey, versionKey, versionKeyBeside } from '../key-layout.js';
import { versionError } from '../reply-errors.js';
import { configReadScript, configWriteScript, raiseVersionScript } from '../scripts.js';
import { type LiveConfig, decodeConfig, encodeConfig } from './config-record.js';
import { withDeadline } from '@sluice/core/internal';

/** How many slots' versions one reconfigure raises at once on a Cluster. */
const RAISE_CONCURRENCY = 512;
/**
 * The deadline of one round of raises on a Cluster: a change is rare and a round is 512 calls, the first of
 * which may load the script on each primary; a decision's deadline is far too short for it.
 */
const RAISE_DEADLINE_MS = 5_000;
/** The deadline of the read after a write left unanswered: as a round of raises, it waits out a reconnection. */
const READ_BACK_DEADLINE_MS = 5_000;
/** How often a recovery of a lost record reads again after another node stored one first. */
const MAX_RECOVERY_ATTEMPTS = 3;

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
    return (await this.#readAt(this.#parts.timeoutMs)).config;
  }

  /**
   * The configuration in force for a node that knows `known` and saw a slot at version `seen`: the stored one,
   * or undefined when none was ever stored. A record that is gone or behind what the node knows or saw was
   * lost (Redis restarted without persistence, a FLUSHALL, an eviction): the later of the record and what this
   * node knows (for a node started since, its code's rules) is stored again under a version above every one
   * seen, every slot is told of it and the other nodes adopt it; `lost` hears of it once per recovery. Rejects
   * when it cannot be read or used, or when nodes kept changing it meanwhile (CONFLICT).
   */
  async inForce(known: LiveConfig, seen: number, lost: (error: Error) => void): Promise<LiveConfig | undefined> {
    return (await this.#inForceAt(known, seen, lost)).config;
  }

  /** inForce, with Redis's time when it was read. */
  async #inForceAt(
    known: LiveConfig,
    seen: number,
    lost: (error: Error) => void,
  ): Promise<{ config: LiveConfig | undefined; nowMs: number }> {
    for (let attempt = 0; ; attempt++) {
      const { config, nowMs } = await this.#readAt(this.#parts.timeoutMs);
      const floor = Math.max(known.version, seen);
      if (config !== undefined && config.version >= floor) return { config, nowMs };
      if (config === undefined && floor === 1) return { config, nowMs };
      const best = config !== undefined && config.version >= known.version ? config : known;
      const next: LiveConfig = { ...best, version: nextVersion(floor, nowMs) };
      try {
        await this.write(config?.version ?? 1, next);
      } catch (error) {
        // Another node stored it first (its recovery, or a change): read again.
        if (error instanceof SluiceError && error.code === 'CONFLICT' && attempt < MAX_RECOVERY_ATTEMPTS) continue;
        throw error;
      }
      lost(
        new SluiceError(
          'STORE_MISCONFIGURED',
          `the configuration of limiter ${JSON.stringify(this.#parts.prefix)} was lost in Redis (` +
            `${config === undefined ? 'no record' : `a record at version ${config.version}`} where version ${floor} ` +
            'was in force: a restart without persistence, a FLUSHALL or an eviction); stored again as version ' +
            `${next.version} with ${best === known ? "this node's" : 'the stored'} rules. Give Redis persistence ` +
            'and maxmemory-policy noeviction',
        ),
      );
      await this.raise(next.version, undefined);
      await this.announce().catch((error: unknown) => lost(error instanceof Error ? error : new Error(String(error))));
      return { config: next, nowMs };
    }
  }

  /**
   * Stores `next` if the stored version is still `fromVersion` (a compare-and-set): another node's change
   * first rejects with SluiceError 'CONFLICT' naming the version in force, and nothing is stored. A write left
   * unanswered (a deadline, a lost connection) is read back before it is answered: stored, not stored, or, when
   * the read gets no answer either, a STORE_UNAVAILABLE that says it may have been stored.
   */
  async write(fromVersion: number, next: LiveConfig): Promise<void> {
    const { connection, prefix, timeoutMs } = this.#parts;
    const record = encodeConfig(next);
    try {
      await withDeadline(
        connection.runScript(configWriteScript(), [configKey(prefix)], [String(fromVersion), record]),
        timeoutMs,
        'a configuration write',
      );
      return;
    } catch (error) {
      const won = versionError(error, 'SLUICE_CONFLICT');
      // A conflict with this very version may be this write's own, sent again by the client after a reconnection.
      if (won !== undefined && won !== next.version) throw conflict(won, fromVersion);
      let stored: string | undefined;
      try {
        // On the write's connection, so after the write if it got there; a change is rare: patient.
        stored = (await this.#readRaw(Math.max(READ_BACK_DEADLINE_MS, timeoutMs))).raw;
      } catch (again) {
        throw storeUnavailable(
          `version ${next.version} may have been stored (neither its write nor a read after it was answered; ` +
            'limiter.rules says which configuration a node decides under once it reads it again)',
          again,
        );
      }
      if (stored === record) return;
      const inForce = stored === undefined ? 1 : versionOf(stored);
      if (inForce !== fromVersion) throw conflict(inForce, fromVersion);
      throw storeUnavailable('the configuration was not stored (read back: unchanged)', error);
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
   * Makes a change for every node: `make` turns the configuration in force (see inForce: `known`, this node's,
   * when none is stored; what this node knows again when the record was lost) into the next version (undefined:
   * nothing to change), which is stored if the version is still the one read (write: a compare-and-set), then
   * raised where decisions must learn of it (every slot, or only `key`'s), adopted by this node, and announced
   * to the others. A stored configuration newer than `known` is adopted first. A version is Redis's time in ms
   * when it is stored, or one more than the version before when that is later. Resolves with the
   * configuration made (undefined: none).
   */
  async change(
    known: LiveConfig,
    make: (current: LiveConfig, version: number) => LiveConfig | undefined,
    key: string | undefined,
    adopt: (config: LiveConfig) => void,
    report: (error: Error) => void,
  ): Promise<LiveConfig | undefined> {
    const read = await this.#inForceAt(known, 1, report);
    const current = read.config ?? known;
    if (current.version > known.version) adopt(current);
    const next = make(current, nextVersion(current.version, read.nowMs));
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

  /** The stored record as text (undefined: none) and Redis's time in ms, read within `deadlineMs`. */
  async #readRaw(deadlineMs: number): Promise<{ raw: string | undefined; nowMs: number }> {
    const { connection, prefix } = this.#parts;
    const reply = await withDeadline(
      connection.runScript(configReadScript(), [configKey(prefix)], []),
      deadlineMs,
      'a configuration read',
    );
    // Checked as config_read.lua's reply (a record or none, whole ms): a reply stream that lost one answer may
    // hand this read another command's.
    const [record, now, ...more] = Array.isArray(reply) ? reply : [];
    const nowMs = Number(Buffer.isBuffer(now) ? now.toString('utf8') : now);
    const raw =
      record === null || record === undefined
        ? undefined
        : Buffer.isBuffer(record)
          ? record.toString('utf8')
          : String(record);
    if (!Number.isSafeInteger(nowMs) || more.length > 0 || (raw !== undefined && !/^\d+\n/.test(raw))) {
      throw new Error(`config_read.lua answered ${String(reply)}`);
    }
    return { raw, nowMs };
  }

  /** The stored configuration (undefined: none) and Redis's time; a failure to read is STORE_UNAVAILABLE. */
  async #readAt(deadlineMs: number): Promise<{ config: LiveConfig | undefined; nowMs: number }> {
    let read: { raw: string | undefined; nowMs: number };
    try {
      read = await this.#readRaw(deadlineMs);
    } catch (error) {
      throw storeUnavailable('the configuration could not be read', error);
    }
    const config = read.raw === undefined ? undefined : decodeConfig(read.raw, configKey(this.#parts.prefix));
    return { config, nowMs: read.nowMs };
  }
}

/**
 * The version of a configuration stored after one at `after`, at Redis time `nowMs`: the time, or one more
 * than `after` when that is later. No version names two configurations, even once the record was lost: a
 * record stored since is numbered above every version stored before it (given Redis's clock never went back
 * by more than the time between them).
 */
function nextVersion(after: number, nowMs: number): number {
  return Math.max(after + 1, Math.floor(nowMs));
}

/** The version at the head of a stored record ('<version>\n<JSON>'; 1 when unreadable, as config_write.lua). */
function versionOf(record: string): number {
  const version = Number.parseInt(record, 10);
  return Number.isSafeInteger(version) ? version : 1;
}

function conflict(won: number, fromVersion: number): SluiceError {
  return new SluiceError(
    'CONFLICT',
    `another node changed the configuration first: version ${won} is in force (this change was made from ` +
      `version ${fromVersion}); nothing was changed`,
  );
}

/** A SluiceError 'STORE_UNAVAILABLE' saying what could not be done and why. */
export function storeUnavailable(what: string, cause: unknown): SluiceError {
  return new SluiceError('STORE_UNAVAILABLE', `${what}: ${cause instanceof Error ? cause.message : String(cause)}`, {
    cause,
  });
}
