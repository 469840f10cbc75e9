import type { ConfigRecord, Engine } from '../../contract/engine.js';
import { SluiceError } from '../../foundation/errors.js';
import { serverName } from '../clock-skew.js';
import { withDeadline } from '../deadline.js';
import { type LiveConfig, decodeConfig, encodeConfig } from './config-record.js';

/**
 * The deadline of a change's write: the engine raises the version wherever decisions read it before it
 * answers (on a Redis Cluster, every slot), and a change is rare: patient, whatever a decision's deadline.
 */
const WRITE_DEADLINE_MS = 5_000;
/** The deadline of the read after a write left unanswered: as a write, it waits out a reconnection. */
const READ_BACK_DEADLINE_MS = 5_000;
/** How often a recovery of a lost record reads again after another node stored one first. */
const MAX_RECOVERY_ATTEMPTS = 3;

/** Where a limiter's configuration lives: the engine, the limiter's prefix and the deadline of a read. */
export interface StoredConfigurationParts {
  readonly engine: Engine;
  readonly prefix: string;
  readonly timeoutMs: number;
}

/**
 * A limiter's configuration as an engine keeps it for every node of its prefix (readConfig; writeConfig, a
 * compare-and-set that raises the version wherever decisions read it), and the announcement of a change to
 * the other nodes ('' published on the prefix's channel): read it, store a next version if none was stored
 * meanwhile, tell the other nodes. Every mode's live limits are made of these steps (LiveBinding for exact
 * and leased mode, divided mode's DividedConfig).
 * @example
 * const stored = new StoredConfiguration({ engine, prefix: 'api', timeoutMs: 200 })
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
   * The configuration in force for a node that knows `known` and saw decisions at version `seen`: the stored
   * one, or undefined when none was ever stored. A record that is gone or behind what the node knows or saw
   * was lost (a restart without persistence, a FLUSHALL, an eviction): the later of the record and what this
   * node knows (for a node started since, its code's rules) is stored again under a version above every one
   * seen (raised wherever decisions read it) and the other nodes adopt it; `lost` hears of it once per
   * recovery. Rejects when it cannot be read or used, or when nodes kept changing it meanwhile (CONFLICT).
   */
  async inForce(known: LiveConfig, seen: number, lost: (error: Error) => void): Promise<LiveConfig | undefined> {
    return (await this.#inForceAt(known, seen, lost)).config;
  }

  /** inForce, with the engine's time when it was read. */
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
          `the configuration of limiter ${JSON.stringify(this.#parts.prefix)} was lost in ${this.#server} (` +
            `${config === undefined ? 'no record' : `a record at version ${config.version}`} where version ${floor} ` +
            'was in force: a restart without persistence, a FLUSHALL or an eviction); stored again as version ' +
            `${next.version} with ${best === known ? "this node's" : 'the stored'} rules. ${this.#keepAdvice}`,
        ),
      );
      await this.announce().catch((error: unknown) => lost(error instanceof Error ? error : new Error(String(error))));
      return { config: next, nowMs };
    }
  }

  /**
   * Stores `next` if the stored version is still `fromVersion` (a compare-and-set), raised wherever decisions
   * read the version (given `key`, a change of that key's override alone, only where its states live):
   * another node's change first rejects with SluiceError 'CONFLICT' naming the version in force, and nothing
   * is stored. A write left unanswered (a deadline, a lost connection) is read back before it is answered:
   * stored (then written again over itself, so its version is raised for certain), not stored, or, when the
   * read gets no answer either, a STORE_UNAVAILABLE that says it may have been stored.
   */
  async write(fromVersion: number, next: LiveConfig, key?: string): Promise<void> {
    const record = recordOf(next);
    let inForce: number | undefined;
    try {
      inForce = await this.#write(fromVersion, record, key);
    } catch (error) {
      inForce = await this.#readBack(fromVersion, record, key, error);
    }
    if (inForce !== undefined) throw conflict(inForce, fromVersion);
  }

  /**
   * One compare-and-set: undefined when written, else the version stored instead. A conflict with the
   * record's own version may be this write's own, sent again by a client after a reconnection: it rejects,
   * and is read back.
   */
  async #write(fromVersion: number, record: ConfigRecord, key: string | undefined): Promise<number | undefined> {
    const { engine, prefix, timeoutMs } = this.#parts;
    const answer = await withDeadline(
      engine.writeConfig(prefix, fromVersion, record, key),
      Math.max(WRITE_DEADLINE_MS, timeoutMs),
      'a configuration write',
    );
    if (answer.written) return undefined;
    if (answer.conflict === record.version && fromVersion !== record.version)
      throw new Error(`version ${record.version} is stored already`);
    return answer.conflict;
  }

  /**
   * After a write left unanswered: undefined when the read finds it stored (and written over itself so its
   * version is raised), the version stored when it is another's; rejects when nothing was stored.
   */
  async #readBack(
    fromVersion: number,
    record: ConfigRecord,
    key: string | undefined,
    error: unknown,
  ): Promise<number | undefined> {
    const { engine, prefix, timeoutMs } = this.#parts;
    let stored: ConfigRecord | undefined;
    try {
      const deadlineMs = Math.max(READ_BACK_DEADLINE_MS, timeoutMs);
      stored = (await withDeadline(engine.readConfig(prefix), deadlineMs, 'a configuration read')).record;
    } catch (again) {
      throw storeUnavailable(
        `version ${record.version} may have been stored (neither its write nor a read after it was answered; ` +
          'limiter.rules says which configuration a node decides under once it reads it again)',
        again,
      );
    }
    if (stored !== undefined && stored.version === record.version && stored.text === record.text) {
      try {
        return await this.#write(record.version, record, key);
      } catch (raising) {
        throw storeUnavailable(
          `version ${record.version} was stored, but not every node's decisions could be told of it yet (a node ` +
            'learns of it where a node of this version decides, or from the next change)',
          raising,
        );
      }
    }
    const inForce = stored?.version ?? 1;
    if (inForce !== fromVersion) return inForce;
    throw storeUnavailable('the configuration was not stored (read back: unchanged)', error);
  }

  /**
   * Makes a change for every node: `make` turns the configuration in force (see inForce: `known`, this node's,
   * when none is stored; what this node knows again when the record was lost) into the next version (undefined:
   * nothing to change), which is stored if the version is still the one read (write: a compare-and-set, raised
   * wherever decisions must learn of it: everywhere, or only where `key`'s states live), adopted by this node,
   * and announced to the others. A stored configuration newer than `known` is adopted first. A version is the
   * engine's time in ms when it is stored, or one more than the version before when that is later. Resolves
   * with the configuration made (undefined: none).
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
    await this.write(current.version, next, key);
    adopt(next);
    await this.announce().catch((error: unknown) => report(error instanceof Error ? error : new Error(String(error))));
    return next;
  }

  /** Tells the limiter's other nodes of a change at once: '' on its channel (no key encodes to ''). */
  async announce(): Promise<void> {
    const { engine, prefix, timeoutMs } = this.#parts;
    await withDeadline(engine.publish(prefix, ''), timeoutMs, 'a configuration message');
  }

  /** The stored configuration (undefined: none) and the engine's time; a failure to read is STORE_UNAVAILABLE. */
  async #readAt(deadlineMs: number): Promise<{ config: LiveConfig | undefined; nowMs: number }> {
    const { engine, prefix } = this.#parts;
    let read: { readonly record: ConfigRecord | undefined; readonly engineNowMs: number };
    try {
      read = await withDeadline(engine.readConfig(prefix), deadlineMs, 'a configuration read');
    } catch (error) {
      throw storeUnavailable('the configuration could not be read', error);
    }
    const { record } = read;
    const where = `the configuration record of limiter ${JSON.stringify(prefix)}`;
    const config = record === undefined ? undefined : decodeConfig(`${record.version}\n${record.text}`, where);
    return { config, nowMs: read.engineNowMs };
  }

  /** The engine's server, as errors name it. */
  get #server(): string {
    return serverName(this.#parts.engine);
  }

  /** What keeps a configuration from being lost, on this engine. */
  get #keepAdvice(): string {
    return this.#parts.engine.name === 'redis'
      ? 'Give Redis persistence and maxmemory-policy noeviction'
      : `Give ${this.#server} durable storage`;
  }
}

/** A configuration as an engine stores it: its version, and core's JSON of the rest (encodeConfig). */
function recordOf(config: LiveConfig): ConfigRecord {
  const encoded = encodeConfig(config);
  return { version: config.version, text: encoded.slice(encoded.indexOf('\n') + 1) };
}

/**
 * The version of a configuration stored after one at `after`, at the engine's time `nowMs`: the time, or one
 * more than `after` when that is later. No version names two configurations, even once the record was lost: a
 * record stored since is numbered above every version stored before it (given the engine's clock never went
 * back by more than the time between them).
 */
function nextVersion(after: number, nowMs: number): number {
  return Math.max(after + 1, Math.floor(nowMs));
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
