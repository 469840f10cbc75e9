import type { Algorithm, AlgorithmKind } from '@sluice/core';
import type { AdjustAnswer, Adjustment, EngineRules, EngineTime } from '@sluice/core/engine';
import { identityOf } from '@sluice/core/internal';
import calculateSlot from 'cluster-key-slot';
import type { RedisConnection, ScriptReply } from '../connection/connection.js';
import { wirePermits } from '../exact/protocol.js';
import { type GrantTime, adjustArgs, numArg, ruleArgs } from '../exact/rule-args.js';
import { banKey, banMarkerKey, stateKey, versionKeyBeside } from '../key-layout.js';
import { versionError } from '../reply-errors.js';
import { lesseesName } from './engine-fleet.js';
import { adjustScript, blockScript, carryKeyScript } from '../scripts.js';

/**
 * redisEngine's `adjust`, as exact mode's controls make each change on Redis (RedisControls): a refund and a
 * reset reach the key's own rules (rules counted against other identities are shared), a penalty every rule
 * (one adjust.lua call per slot), a reset the ban too; `block` is block.lua, `unblock` deletes the ban (adjust.lua
 * 'reset' of no rules, so that its reply says whether there was one); a reset deletes the key's lessees beside its states. Under a configuration version each
 * adjust.lua call checks its slot's (SLUICE_STALE: `{ stale }`); a ban is the key's whatever the version.
 */
export async function adjustOnRedis(
  connection: RedisConnection,
  rules: EngineRules,
  key: string,
  adjustment: Adjustment,
  at: EngineTime,
): Promise<AdjustAnswer> {
  const { prefix } = rules;
  const own = rules.rules.filter((rule) => rule.scope === undefined);
  try {
    switch (adjustment.op) {
      case 'refund': {
        if (own.length === 0) return { freed: false };
        const ago = adjustment.grantedMsAgo;
        const granted: GrantTime | undefined =
          adjustment.grantedAtMs !== undefined
            ? { atMs: adjustment.grantedAtMs }
            : ago === undefined || Number.isNaN(ago)
              ? undefined
              : { agoMs: ago };
        const reply = await adjust(
          connection,
          rules,
          own,
          key,
          'refund',
          wirePermits(adjustment.permits, own),
          granted,
          at,
        );
        return { freed: reply === 1 };
      }
      case 'penalize': {
        const bySlot = new Map<number, Algorithm[]>();
        for (const rule of rules.rules) {
          const slot = connection.isCluster ? calculateSlot(stateOf(rules, rule, key)) : 0;
          bySlot.set(slot, [...(bySlot.get(slot) ?? []), rule]);
        }
        await Promise.all(
          [...bySlot.values()].map((group) =>
            adjust(connection, rules, group, key, 'penalize', wirePermits(adjustment.permits, group), undefined, at),
          ),
        );
        return { freed: false };
      }
      case 'reset': {
        // The ban, and each own rule's lessees (its state's slot: the key's).
        const lessees = own.map((rule) => stateKey(prefix, key, lesseesName(stateName(rules, rule))));
        const reply = await adjust(connection, rules, own, key, 'reset', 0, undefined, at, [
          banKey(prefix, key),
          ...lessees,
        ]);
        return { freed: typeof reply === 'number' && reply > 0 };
      }
      case 'block': {
        const ban = banKey(prefix, key);
        await connection.runScript(
          blockScript(),
          [ban, banMarkerKey(prefix, connection.isCluster ? calculateSlot(ban) : undefined)],
          [numArg(adjustment.ms), at === undefined ? '' : numArg(at)],
        );
        return { freed: false };
      }
      case 'carry':
        return (await carryOnRedis(connection, rules, key, adjustment.links, at)) ?? { freed: false };
      case 'unblock': {
        const reply = await connection.runScript(
          adjustScript([]),
          [banKey(prefix, key)],
          adjustArgs(ruleArgs([]), 'reset', 0, undefined, at),
        );
        return { freed: typeof reply === 'number' && reply > 0 };
      }
    }
  } catch (error) {
    const newer = versionError(error, 'SLUICE_STALE');
    if (newer !== undefined) return { stale: newer };
    throw error;
  }
}

/** One rule's earlier generations, as a carry names them. */
type CarryLinks = Extract<Adjustment, { op: 'carry' }>['links'][number];

/**
 * carry_key.lua for `links` of `key`, one call per slot of the rules carried to (atomic per slot: a key's own
 * rules share its slot; on a Cluster a rule counted against another identity lives in that identity's), the
 * slot's configuration version checked when the caller names one. A stale slot answers for the whole carry.
 */
async function carryOnRedis(
  connection: RedisConnection,
  rules: EngineRules,
  key: string,
  links: readonly CarryLinks[],
  at: EngineTime,
): Promise<{ stale: number } | undefined> {
  const bySlot = new Map<number, CarryLinks[]>();
  for (const link of links) {
    const slot = connection.isCluster ? calculateSlot(stateOf(rules, rules.rules[link.rule] as Algorithm, key)) : 0;
    bySlot.set(slot, [...(bySlot.get(slot) ?? []), link]);
  }
  const answers = await Promise.allSettled(
    [...bySlot.values()].map((group) => carryInSlot(connection, rules, key, group, at)),
  );
  for (const answer of answers) {
    if (answer.status === 'fulfilled') continue;
    const newer = versionError(answer.reason, 'SLUICE_STALE');
    if (newer !== undefined) return { stale: newer };
  }
  const failed = answers.find((answer) => answer.status === 'rejected');
  if (failed !== undefined) throw failed.reason;
  return undefined;
}

/** One carry_key.lua call for `links` of `key`, whose rules carried to share one slot. */
async function carryInSlot(
  connection: RedisConnection,
  rules: EngineRules,
  key: string,
  links: readonly CarryLinks[],
  at: EngineTime,
): Promise<void> {
  const { prefix } = rules;
  const first = rules.rules[(links[0] as CarryLinks).rule] as Algorithm;
  const keys = [versionKeyBeside(prefix, stateOf(rules, first, key), connection.isCluster)];
  const args = [
    rules.version === undefined ? '' : String(rules.version),
    at === undefined ? '' : numArg(at),
    String(links.length),
  ];
  const kinds = new Set<string>();
  for (const link of links) {
    const rule = rules.rules[link.rule] as Algorithm;
    keys.push(stateOf(rules, rule, key));
    args.push(String(link.from.length), ...ruleArgs([rule]), carryMeta(rule, '-'));
    kinds.add(rule.kind);
    for (const from of link.from) {
      keys.push(stateKey(prefix, identityOf(from.rule, key), from.state));
      args.push(...ruleArgs([from.rule]), carryMeta(from.rule, from.mode));
      kinds.add(from.rule.kind);
    }
  }
  await connection.runScript(carryKeyScript([...kinds] as AlgorithmKind[]), keys, args);
}

/** The meta carry_key.lua reads beside a rule: limit, burst, state format, carry mode. */
function carryMeta(rule: Algorithm, mode: string): string {
  return `${numArg(rule.limit)}\n${numArg(rule.burst)}\n${rule.stateFormat}\n${mode}`;
}

/** `rule`'s state name under `rules`. */
const stateName = (rules: EngineRules, rule: Algorithm): string => rules.states[rules.rules.indexOf(rule)] as string;

/** Where `rule` keeps `key`'s state under `rules` (its state name). */
function stateOf(rules: EngineRules, rule: Algorithm, key: string): string {
  return stateKey(rules.prefix, identityOf(rule, key), stateName(rules, rule));
}

/**
 * One atomic adjust.lua call for `group` of `key` (one slot); `extraKeys` follow the states (reset: the ban;
 * with no rule, the ban's slot is the call's). The slot's version key and the version last when checked.
 */
function adjust(
  connection: RedisConnection,
  rules: EngineRules,
  group: readonly Algorithm[],
  key: string,
  op: 'refund' | 'penalize' | 'reset',
  permits: number | readonly number[],
  granted: GrantTime | undefined,
  at: EngineTime,
  extraKeys: readonly string[] = [],
): Promise<ScriptReply> {
  const keys = [...group.map((rule) => stateOf(rules, rule, key)), ...extraKeys];
  const args = adjustArgs(ruleArgs(group), op, permits, granted, at);
  if (rules.version !== undefined && keys.length > 0) {
    keys.push(versionKeyBeside(rules.prefix, keys[0] as string, connection.isCluster));
    args.push(String(rules.version));
  }
  return connection.runScript(adjustScript(group.map((rule) => rule.kind)), keys, args);
}
