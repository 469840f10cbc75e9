import type { Clock } from '../foundation/clock.js';
import type { AccessMatch, Decision } from '../foundation/decision.js';
import { SluiceError, callerNamed } from '../foundation/errors.js';
import { AccessList, type ListEntryOptions, entryTexts, listEntries } from './access-list.js';
import { type AccessEntry, type NewAccessEntry, hasAccessLists } from './access-list-store.js';
import type { LimiterSetup } from './limiter-setup.js';
import type { Binding } from './live-configuration.js';
import { MemoryAccessLists } from './memory-access-lists.js';
import type { DecisionNote } from './observe.js';

/**
 * A limiter's allow and deny lists, in front of its rules: the decision of a listed key (the rules not asked)
 * and the changes to the lists (allow, deny, unlist, accessList), which a limiter made with
 * `accessList: false` refuses.
 */
export class AccessListGate {
  /** The lists as this process holds them (undefined: accessList false). */
  readonly #lists: AccessList | undefined;
  readonly #clock: Clock;
  readonly #maxKeyLength: number;
  readonly #checkOpen: () => void;
  /** The store's name when it keeps no lists for every node (StoreCapabilities.accessLists false). */
  readonly #unshared: string | undefined;

  /**
   * `checkOpen` throws once the limiter is closed; `onHolds` is told after each read whether the lists hold an
   * entry (the limiter asks the gate nothing while they do not).
   */
  constructor(setup: LimiterSetup, checkOpen: () => void, onHolds: (holds: boolean) => void) {
    const { store, clock } = setup;
    const { prefix, accessList: options } = setup.options;
    this.#clock = clock;
    this.#maxKeyLength = setup.options.maxKeyLength;
    this.#checkOpen = checkOpen;
    const can = store.capabilities;
    this.#unshared = can?.accessLists === false ? can.name : undefined;
    // A store without lists of its own (a custom store) keeps them in this process.
    this.#lists =
      options === false
        ? undefined
        : new AccessList(
            prefix,
            hasAccessLists(store) ? store.bindAccessList(prefix) : new MemoryAccessLists(clock).bind(prefix),
            options,
            clock,
            // A shared store reports its own failures ('store-error'); the list this process has holds meanwhile.
            () => {},
            onHolds,
          );
  }

  /** The lists' first read (ready() waits for it); undefined without lists. */
  get loaded(): Promise<void> | undefined {
    return this.#lists?.loaded;
  }

  async allow(entries: string | readonly string[], options?: ListEntryOptions): Promise<void> {
    await this.#listChange('allow', () => listEntries('allow', entries, options, this.#maxKeyLength));
  }

  async deny(entries: string | readonly string[], options?: ListEntryOptions): Promise<void> {
    await this.#listChange('deny', () => listEntries('deny', entries, options, this.#maxKeyLength));
  }

  async #listChange(method: 'allow' | 'deny', make: () => NewAccessEntry[]): Promise<void> {
    try {
      this.#checkOpen();
      const entries = make();
      await this.#listsFor(method).put(entries);
    } catch (error) {
      throw callerNamed(method, error);
    }
  }

  async unlist(entries: string | readonly string[]): Promise<number> {
    try {
      this.#checkOpen();
      const texts = entryTexts(entries, this.#maxKeyLength);
      return await this.#listsFor('unlist').remove(texts);
    } catch (error) {
      throw callerNamed('unlist', error);
    }
  }

  async accessList(): Promise<AccessEntry[]> {
    try {
      this.#checkOpen();
      return await this.#listsFor('accessList').entries();
    } catch (error) {
      throw callerNamed('accessList', error);
    }
  }

  /** The lists, or a typed error for a limiter made with `accessList: false`. */
  #listsFor(method: string): AccessList {
    if (this.#lists === undefined)
      throw new SluiceError('UNSUPPORTED', `${method}: this limiter was made with accessList: false`);
    if (this.#unshared !== undefined)
      throw new SluiceError(
        'UNSUPPORTED',
        `${method}: ${this.#unshared} keeps no access lists yet (an entry would hold in this process only); ` +
          'use a store with access lists (memoryStore, redisStore)',
      );
    return this.#lists;
  }

  /**
   * The decision of the access-list entry that holds for `key` and the client `address`, when one does (the
   * rules are not asked). An operator's block outranks the allow list, a rule's `blockMs` ban does not (the
   * rules are skipped, their bans too): an allowed key asks the store for its standing under an explicit ban
   * (explicitBan, nothing consumed).
   */
  decide(
    key: string,
    address: string | undefined,
    note: DecisionNote | undefined,
    deciding: boolean,
    current: Binding,
  ): Decision | Promise<Decision> | undefined {
    const listed = this.#lists?.match(key, address, deciding);
    if (listed === undefined) return undefined;
    const decision = this.#listedDecision(listed, current);
    const bound = current.bound;
    const explicitBan = bound.explicitBan;
    if (listed.list === 'deny' || explicitBan === undefined) {
      if (note !== undefined) note.source = 'access_list';
      return decision;
    }
    const unlessBanned = (banned: Decision | undefined): Decision => {
      if (banned?.blocked === true) return banned;
      if (note !== undefined) note.source = 'access_list';
      return decision;
    };
    const banned = explicitBan.call(bound, key);
    return banned instanceof Promise ? banned.then(unlessBanned) : unlessBanned(banned);
  }

  /**
   * An allowed key's decision (its limit whole, nothing consumed) or a denied one's (until the entry
   * expires, Infinity when it does not), in the numbers of the limiter's first rule, marked with the entry.
   */
  #listedDecision(entry: AccessEntry, current: Binding): Decision {
    // With plans: the first plan's (the key's plan is not resolved for a listed key).
    const rule = current.rules[0];
    const limit = rule?.limit ?? 0;
    const access: AccessMatch =
      entry.reason === undefined
        ? { list: entry.list, entry: entry.entry }
        : { list: entry.list, entry: entry.entry, reason: entry.reason };
    const name = rule?.name ?? entry.list;
    if (entry.list === 'allow')
      return {
        allowed: true,
        limit,
        remaining: limit,
        retryAfterMs: 0,
        resetAfterMs: 0,
        waitMs: 0,
        rule: name,
        access,
      };
    const rest = entry.expiresAt === undefined ? Infinity : Math.max(0, entry.expiresAt - this.#clock.now());
    return {
      allowed: false,
      limit,
      remaining: 0,
      retryAfterMs: rest,
      resetAfterMs: rest,
      waitMs: 0,
      rule: name,
      access,
    };
  }

  close(): void {
    this.#lists?.close();
  }
}
