import { randomBytes } from 'node:crypto';
import { type AccessEntry, SluiceRangeError } from '@sluice/core';
import {
  type AccessListBinding,
  MAX_ACCESS_ENTRIES,
  type NewAccessEntry,
  OPERATIONS_DEADLINE_MS,
  type StoredAccessList,
  withDeadline,
} from '@sluice/core/internal';
import type { ChannelListener } from './connection/channel-listener.js';
import type { RedisConnection, ScriptReply } from './connection/connection.js';
import { accessListChannel, accessListKeys } from './key-layout.js';
import type { StartupChecks } from './preflight.js';
import { accessListScript } from './scripts.js';

/** What a Redis store's access lists need from it. */
export interface AccessListContext {
  readonly connection: RedisConnection;
  readonly timeoutMs: number;
  readonly checks: StartupChecks;
  /** Where the store hears the lists' channels; undefined: it keeps no subscriber, and nodes poll (refreshMs). */
  readonly channels: ChannelListener | undefined;
}

/**
 * An entry from its text and hash value ('<list>\n<expires at on Redis TIME, or ''>\n<reason>', as
 * access_list.lua writes it); undefined for a value no sluice wrote.
 * @example
 * decodeEntry('10.0.0.0/8', 'deny\n\nscan') // { entry: '10.0.0.0/8', list: 'deny', reason: 'scan' }
 */
export function decodeEntry(text: string, value: string): AccessEntry | undefined {
  const first = value.indexOf('\n');
  const second = value.indexOf('\n', first + 1);
  if (first < 0 || second < 0) return undefined;
  const list = value.slice(0, first);
  if (list !== 'allow' && list !== 'deny') return undefined;
  const expires = value.slice(first + 1, second);
  const reason = value.slice(second + 1);
  return {
    entry: text,
    list,
    ...(expires === '' ? {} : { expiresAt: Number(expires) }),
    ...(reason === '' ? {} : { reason }),
  };
}

/**
 * A change's version: random, so no two changes share one, whatever Redis lost in between (see access_list.lua).
 * @example
 * newVersion() // 'x3mQ0b8c9n1KzA7e'
 */
const newVersion = (): string => randomBytes(12).toString('base64url');

/**
 * A Redis store's access lists (redisStore, leasedStore, dividedStore: Store.bindAccessList): a limiter's
 * entries in one hash under its prefix (access_list.lua), every change announced on its channel, which the
 * store hears for each prefix bound here; the startup check covers the script's commands. Expiry comes
 * from Redis TIME, whoever writes (a node, the admin router, the CLI); each change's version is random.
 * @example
 * const lists = new RedisAccessLists({ connection, timeoutMs: 500, checks, channels })
 * const list = lists.bind('api')
 */
export class RedisAccessLists {
  readonly #ctx: AccessListContext;
  /** The bindings of each prefix bound here: each hears the prefix's channel. */
  readonly #bound = new Map<string, Set<() => void>>();

  constructor(ctx: AccessListContext) {
    this.#ctx = ctx;
  }

  /** The lists of the limiter whose namespace is `prefix` (its channel heard, its check added, with the first). */
  bind(prefix: string): AccessListBinding {
    const ctx = this.#ctx;
    const channel = accessListChannel(prefix);
    const check = `${prefix} access list`;
    let listeners = this.#bound.get(prefix);
    if (listeners === undefined) {
      const heard = new Set<() => void>();
      listeners = heard;
      this.#bound.set(prefix, heard);
      ctx.checks.add(prefix, [accessListScript()], check);
      ctx.channels?.listen(channel, () => {
        for (const listener of heard) listener();
      });
    }
    const at = listeners;
    const mine = new Set<() => void>();
    const keys = accessListKeys(prefix);
    const run = async (args: string[], what: string): Promise<ScriptReply> => {
      try {
        const deadline = Math.max(ctx.timeoutMs, OPERATIONS_DEADLINE_MS);
        const reply = await withDeadline(ctx.connection.runScript(accessListScript(), keys, args), deadline, what);
        return reply;
      } catch (error) {
        // The caller's failure alone, never the store's health (its fail mode would take over decisions for
        // a list read); a missing permission is said once, by the startup check.
        const full = /SLUICE_LIST_FULL (\d+)/.exec(error instanceof Error ? error.message : '');
        if (full !== null)
          throw new SluiceRangeError(
            'entries',
            Number(full[1]),
            `the access list holds ${full[1]} entries: these would pass its ${MAX_ACCESS_ENTRIES}`,
          );
        throw error;
      }
    };
    return {
      remote: true,
      read: async (knownVersion?: string): Promise<StoredAccessList> => {
        const reply = await run(['read', knownVersion ?? ''], 'an access-list read');
        const items = Array.isArray(reply) ? reply : [];
        const version = String(items[0] ?? '');
        const now = Number(items[1]);
        if (items.length === 2 && version !== '' && knownVersion === version) return { version, now };
        const entries: AccessEntry[] = [];
        for (let i = 2; i + 1 < items.length; i += 2) {
          const entry = decodeEntry(String(items[i]), String(items[i + 1]));
          if (entry !== undefined) entries.push(entry);
        }
        return { version, now, entries };
      },
      put: async (entries: readonly NewAccessEntry[]) => {
        const args = ['put', newVersion(), String(MAX_ACCESS_ENTRIES), channel];
        for (const e of entries)
          args.push(e.entry, e.list, e.ttlMs === undefined ? '' : String(Math.ceil(e.ttlMs)), e.reason ?? '');
        await run(args, 'an access-list change');
      },
      remove: async (texts) => Number(await run(['remove', newVersion(), channel, ...texts], 'an access-list change')),
      onChange: (listener) => {
        at.add(listener);
        mine.add(listener);
        return () => {
          at.delete(listener);
          mine.delete(listener);
        };
      },
      unbind: () => {
        for (const listener of mine) at.delete(listener);
        mine.clear();
        if (at.size > 0 || this.#bound.get(prefix) !== at) return;
        this.#bound.delete(prefix);
        ctx.checks.remove(check);
        ctx.channels?.stop(channel);
      },
    };
  }
}
