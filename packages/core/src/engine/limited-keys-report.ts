import { SluiceRangeError, callerNamed } from '../foundation/errors.js';
import { knownOptions } from '../foundation/options.js';
import { describe, positiveInteger, rateLimitKey } from '../foundation/validate.js';
import {
  DEFAULT_TOP_MINUTES,
  type LimitedKey,
  LimitedKeys,
  TOP_LIMITED_OPTIONS,
  type TopLimitedOptions,
  keyHash,
} from './limited-keys.js';
import { MAX_BOARD_MINUTES, hasLimitedKeysBoard } from './limited-keys-board.js';
import { MemoryBoards } from './memory-boards.js';
import type { LimiterSetup } from './limiter-setup.js';

/**
 * What a limiter reports of the keys it limits most: topLimited (the fleet's board, keys hashed unless
 * `clearKeys`), keyHash (to find a key you know among the hashes) and flushLimitedKeys. The counting itself
 * is LimitedKeys', which the limiter feeds every decision.
 */
export class LimitedKeysReport {
  /** What the limiter remembers of the keys it limits (undefined: limitedKeys false). */
  readonly sketches: LimitedKeys | undefined;
  readonly #prefix: string;
  readonly #maxKeyLength: number;

  constructor(setup: LimiterSetup) {
    const { store } = setup;
    const { prefix, limitedKeys: options } = setup.options;
    this.#prefix = prefix;
    this.#maxKeyLength = setup.options.maxKeyLength;
    // A store without a board of its own (a custom store) keeps this process's counts only.
    this.sketches =
      options === false
        ? undefined
        : new LimitedKeys(
            options,
            hasLimitedKeysBoard(store) ? store.bindLimitedKeys(prefix) : new MemoryBoards().bind(prefix),
            setup.clock,
          );
  }

  async topLimited(n = 10, options?: TopLimitedOptions): Promise<LimitedKey[]> {
    try {
      const count = positiveInteger('n', n);
      knownOptions('topLimited options', TOP_LIMITED_OPTIONS, options, false);
      const minutes = options?.minutes ?? DEFAULT_TOP_MINUTES;
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_BOARD_MINUTES)
        throw new SluiceRangeError(
          'minutes',
          minutes,
          `minutes must be a whole number from 1 to ${MAX_BOARD_MINUTES}, got ${describe(minutes)}`,
        );
      const limited = this.sketches;
      if (limited === undefined) return [];
      const top = await limited.fleetTop(count, minutes);
      if (limited.options.clearKeys) return top.map((row) => ({ ...row, hashed: false }));
      return Promise.all(top.map(async (row) => ({ ...row, key: await this.keyHash(row.key), hashed: true })));
    } catch (error) {
      throw callerNamed('topLimited', error);
    }
  }

  async flushLimitedKeys(): Promise<void> {
    try {
      await this.sketches?.flush();
    } catch (error) {
      throw callerNamed('flushLimitedKeys', error);
    }
  }

  async keyHash(key: string): Promise<string> {
    try {
      rateLimitKey(key, this.#maxKeyLength);
      const secret = this.sketches?.options.keySecret || this.#prefix;
      return await keyHash(key, secret);
    } catch (error) {
      throw callerNamed('keyHash', error);
    }
  }
}
