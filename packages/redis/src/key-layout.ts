import { createHash } from 'node:crypto';
import calculateSlot from 'cluster-key-slot';
import { type Algorithm, SluiceRangeError } from '@sluice/core';
import { decodeIdentity, encodeIdentity, stateName } from '@sluice/core/internal';

/**
 * The version of the Redis state format, hashed into every rule id (see ruleId): a later format that changes
 * what a key holds changes this, so its rule ids, and every key name they are in, differ from this one's,
 * and two versions of sluice sharing one Redis during a rolling deploy never read each other's states as
 * their own. The layout's own parts (bans, semaphores, fleets: '~' and a letter) take a new letter when
 * theirs change. Format 1 wrote the rule's name after ':' (`api:{user:1}:per-minute`); no later key has ':'
 * after its hash tag. Format 2 kept a window algorithm's count in one key per window, named inside the
 * scripts; format 3 keeps it in the rule's one key, beside the previous window's. See docs/redis-format.md.
 */
export const FORMAT_VERSION = 3;

const ID_LENGTH = 3;
const ids = new Map<string, string>();

/**
 * A rule's short, stable id in key names: 3 base64url characters (18 bits) of the SHA-1 of the format
 * version and its state name (stateName in core: the rule's name and its state format, so a rule keeps its
 * state when its limit changes and never reads a state of another kind or meaning; a hybrid mode's own states
 * hash a name derived from it). Keys carry this instead of the name: Redis keeps every byte of every key, and
 * an identity key plus the name often crossed one of its allocation sizes. checkStateIds refuses two rules of
 * one limiter whose ids meet.
 * @example
 * ruleId(stateName(rule)) // 3 characters, the same on every node and every run
 */
export function ruleId(name: string): string {
  let id = ids.get(name);
  if (id === undefined) {
    id = createHash('sha1').update(`sluice/${FORMAT_VERSION}/${name}`).digest('base64url').slice(0, ID_LENGTH);
    ids.set(name, id);
  }
  return id;
}

/**
 * Where a rule's state lives: `${prefix}{${identity}}${ruleId(name)}`, `name` its state name (stateName in
 * core, or a name derived from it). The braces are a Cluster hash tag, so
 * every state of one identity lands in one slot and a whole policy is decided in one script call. A prefix
 * holds no '{' and the identity is encoded (see encodeIdentity), so two (prefix, key, rule) triples never
 * share a name and no key content can move the hash tag. Every algorithm's state is this one key (a window
 * algorithm's holds its current and previous window together), so a script touches only keys it is given.
 * `name` starting with '~' is one of the layout's own parts (see banKey), kept as it is.
 * @example
 * stateKey('api', 'user:1', stateName(rule)) // 'api{user:1}' + ruleId(stateName(rule))
 */
export function stateKey(prefix: string, key: string, name: string): string {
  return `${prefix}{${encodeIdentity(key)}}${name.charCodeAt(0) === 126 ? name : ruleId(name)}`;
}

/**
 * Where a key's ban lives: beside its rules' states, in the same slot (the same hash tag), under a part no
 * rule id can be ('~' is not in base64url).
 * @example
 * banKey('api', 'user:1') // 'api{user:1}~b'
 */
export function banKey(prefix: string, key: string): string {
  return stateKey(prefix, key, '~b');
}

/**
 * Where a limiter announces its bans for the keys of one Cluster slot (`slot`), or of the whole limiter on a
 * standalone server (`slot` undefined): the latest end of any ban written there, so that a decision reads
 * ban keys only while one can be in force (a limiter that bans nothing pays for nothing). In its slot through
 * a hash tag found for that slot (see slotTag), so a decide script of that slot can read it.
 * @example
 * banMarkerKey('api', undefined) // 'api{api}~B'
 */
export function banMarkerKey(prefix: string, slot: number | undefined): string {
  return `${prefix}{${slot === undefined ? encodeIdentity(prefix) : slotTag(slot)}}~B`;
}

/**
 * Where a limiter's configuration version lives for the keys of one Cluster slot (`slot`), or of the whole
 * limiter on a standalone server (`slot` undefined), read by every decision beside the ban marker (see
 * stale_version in prelude.lua). Absent: version 1, the rules each node was created with.
 * @example
 * versionKey('api', undefined) // 'api{api}~V'
 */
export function versionKey(prefix: string, slot: number | undefined): string {
  return `${prefix}{${slot === undefined ? encodeIdentity(prefix) : slotTag(slot)}}~V`;
}

/**
 * The configuration version key decisions about `aKey` (any key of theirs: all share its slot) read: the
 * limiter's one key on a standalone server, its slot's on a Cluster (see versionKey).
 * @example
 * versionKeyBeside('api', stateKey('api', 'user:1', 'per-minute'), true) // the version key of that key's slot
 */
export function versionKeyBeside(prefix: string, aKey: string, isCluster: boolean): string {
  return versionKey(prefix, isCluster ? calculateSlot(aKey) : undefined);
}

/**
 * Where a limiter's configuration is stored once it has been changed (limiter.reconfigure): its version and
 * its rules (see LiveBinding). In the prefix's own slot.
 * @example
 * configKey('api') // 'api{api}~C'
 */
export function configKey(prefix: string): string {
  return stateKey(prefix, prefix, '~C');
}

let slotTags: string[] | undefined;

/**
 * A short text whose Cluster slot is `slot`: the first of '0', '1', '2', ... that hashes there. The table of
 * all 16,384 is built once, on first use (about 160,000 CRC16s, some milliseconds).
 * @example
 * calculateSlot(slotTag(42)) // 42
 */
export function slotTag(slot: number): string {
  if (slotTags === undefined) {
    const tags = new Array<string>(16_384);
    let found = 0;
    for (let i = 0; found < 16_384; i++) {
      const tag = String(i);
      const s = calculateSlot(tag);
      if (tags[s] === undefined) {
        tags[s] = tag;
        found++;
      }
    }
    slotTags = tags;
  }
  return slotTags[slot] as string;
}

/**
 * A concurrency limiter's sets for `key`: its holders, its queue, its queue's liveness and the counter that
 * numbers arrivals (the queue's order), in the key's slot.
 * @example
 * const [holders, queue, liveness, arrivals] = semaphoreKeys('jobs', 'tenant:1')
 */
export function semaphoreKeys(prefix: string, key: string): [string, string, string, string] {
  return [
    stateKey(prefix, key, '~h'),
    stateKey(prefix, key, '~q'),
    stateKey(prefix, key, '~a'),
    stateKey(prefix, key, '~r'),
  ];
}

/**
 * A throttle's pauses: the throttle-wide one, and `key`'s (or the throttle-wide one again when `key` is
 * undefined), both under the prefix's hash tag so one call reads both.
 * @example
 * pauseKeys('llm', 'openai') // ['llm{llm}~p', 'llm{llm}~p:openai']
 */
export function pauseKeys(prefix: string, key: string | undefined): [string, string] {
  const all = stateKey(prefix, prefix, '~p');
  return [all, key === undefined ? all : `${all}:${encodeIdentity(key)}`];
}

/**
 * What a limiter says it runs (its mode and rules), for tools that read its state (see descriptor.lua).
 * @example
 * descriptorKey('api') // 'api{api}~D'
 */
export function descriptorKey(prefix: string): string {
  return stateKey(prefix, prefix, '~D');
}

/**
 * A limiter's allow and deny lists: the entries (a hash) and their version, under the prefix's hash tag.
 * @example
 * accessListKeys('api') // ['api{api}~L', 'api{api}~Lv']
 */
export function accessListKeys(prefix: string): [string, string] {
  const entries = stateKey(prefix, prefix, '~L');
  return [entries, `${entries}v`];
}

/**
 * The channel on which a limiter's nodes hear that its lists changed (the message is the new version).
 * @example
 * accessListChannel('api') // 'api:sluice-list'
 */
export function accessListChannel(prefix: string): string {
  return `${prefix}:sluice-list`;
}

/**
 * One minute's limited-keys board of a limiter (limiter.topLimited): its denials, near-limit grants and
 * overcounts, each a sorted set by key, under the prefix's hash tag so one call reads many minutes.
 * @example
 * limitedKeysKeys('api', 29_000_000) // ['api{api}~t:29000000:d', 'api{api}~t:29000000:n', 'api{api}~t:29000000:e']
 */
export function limitedKeysKeys(prefix: string, minute: number): [string, string, string] {
  const base = `${stateKey(prefix, prefix, '~t')}:${minute}`;
  return [`${base}:d`, `${base}:n`, `${base}:e`];
}

/**
 * The channel on which a throttle's nodes hear each other's pauses.
 * @example
 * pauseChannel('llm') // 'llm:sluice-pause'
 */
export function pauseChannel(prefix: string): string {
  return `${prefix}:sluice-pause`;
}

/**
 * Where the nodes of a limiter's fleet are counted (see presence.lua): under the limiter's prefix, with the
 * prefix as its hash tag, so each limiter's count lives in a slot of its own choosing and the limiters of a
 * store spread over a Cluster.
 * @example
 * fleetKey('api') // 'api{api}~n'
 */
export function fleetKey(prefix: string): string {
  return stateKey(prefix, prefix, '~n');
}

/**
 * Throws unless `rules` (the rules one limiter keeps under `prefix`: every plan's) have state names with
 * distinct rule ids: an id is 18 bits of a hash, and two state names whose ids met would count into one state.
 * The odds are about 1 in 87,000 for three rules, 1 in 5,800 for ten; renaming either rule fixes it. (A store
 * lets only one limiter's rules use a prefix, so one limiter's names are all that can meet.)
 * @example
 * checkStateIds('api', [perSecond, perDay])
 */
export function checkStateIds(prefix: string, rules: readonly Algorithm[]): void {
  const seen = new Map<string, { name: string; state: string }>();
  for (const rule of rules) {
    const state = stateName(rule);
    const id = ruleId(state);
    const holder = seen.get(id);
    if (holder !== undefined && holder.state !== state) {
      throw new SluiceRangeError(
        'rules',
        rule.name,
        `rules '${holder.name}' and '${rule.name}' under prefix '${prefix}' would share the state id '${id}' in Redis; rename one of them`,
      );
    }
    seen.set(id, { name: rule.name, state });
  }
}

/**
 * The keys of a divided limiter's fleet: its live nodes, their demands, the fleet's summary and each node's
 * allocation, under the limiter's prefix with the prefix and rule as hash tag, so each limiter's fleet lives in
 * a slot of its own and the limiters of all services spread over a Cluster; '~' keeps them apart from every
 * rule's state.
 * @example
 * membershipKeys('api', 'fw') // ['api{api~fw}~m', 'api{api~fw}~d', 'api{api~fw}~s', 'api{api~fw}~l']
 */
export function membershipKeys(prefix: string, rule: string): [string, string, string, string] {
  const identity = `${prefix}~${rule}`;
  return [
    stateKey(prefix, identity, '~m'),
    stateKey(prefix, identity, '~d'),
    stateKey(prefix, identity, '~s'),
    stateKey(prefix, identity, '~l'),
  ];
}

/**
 * The channel on which a concurrency limiter's slots tell waiting processes a slot may be free (the key as message).
 * @example
 * subscriber.subscribe(freedChannel(prefix))
 */
export function freedChannel(prefix: string): string {
  return `${prefix}:sluice-freed`;
}

/**
 * The channel on which `reset(key)` and `unblock(key)` tell every node to drop the key from its deny cache,
 * and a change of the limiter's configuration tells every node to read it (an empty message).
 * @example
 * await connection.publish(resetChannel('api'), '') // every node of 'api' reads its configuration again
 */
export function resetChannel(prefix: string): string {
  return `${prefix}:sluice-reset`;
}

/**
 * A key inside a hash tag or a channel message: core's one encoding of a key on the wire (encodeIdentity),
 * which holds no brace, so Redis and the client always agree on the slot.
 */
export { decodeIdentity, encodeIdentity };
