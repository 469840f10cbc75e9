import type {
  AdjustAnswer,
  ConfigRead,
  ConfigWrite,
  DecideAnswer,
  Engine,
  EngineRules,
  HeartbeatAnswer,
  LeaseAnswer,
} from '@sluice/core/engine';
import { checkedEngine, identityOf, inCall, memoryEngineParts } from '@sluice/core/internal';
import { EngineChannels } from './channels.js';
import { type BatchedCall, DecideBatches } from './decide-batch.js';
import { keyText } from './codec.js';
import { type PostgresEngineOptions, parseEngineOptions } from './engine-options.js';
import { type Touched, loadSql, lockSql, saveSql, scratchOf } from './rows.js';
import type { ScratchState } from './scratch.js';
import { CLOCK_MS, Database, type Transaction } from './transaction.js';

const { adjustKey, compositeKey, decideAsk, heartbeatOf, leaseOf, stateKeys } = memoryEngineParts;

/** The lessee set of a state key (memory-lease.ts's name for it). */
const lesseesOf = (stateKey: string): string => compositeKey(stateKey, 'lessees');

/**
 * Runs one call's pure part on the rows it touches, in two round trips: locks them (a lessee set under its
 * state's lock) and loads them with the database's time, with BEGIN; runs `compute` on the scratch state;
 * writes back what changed, with COMMIT.
 */
async function onRows<T>(
  tx: Transaction,
  schema: string,
  touched: Touched & { readonly prefix: string },
  compute: (data: ScratchState) => T,
): Promise<T> {
  const names = [
    ...(touched.states ?? []).map((k) => `s${k}`),
    ...(touched.bans ?? []).map((k) => `b${k}`),
    ...(touched.fleets ?? []).map((k) => `f${k}`),
  ];
  const lock = lockSql(tx, names);
  const load = loadSql(tx, schema, touched);
  const data = scratchOf(await tx.begin(...(lock === undefined ? [load] : [lock, load])), touched);
  const loadedVersion = data.versions.get(touched.prefix);
  const answer = compute(data);
  const save = saveSql(tx, schema, data, touched.prefix, loadedVersion);
  if (save !== undefined) tx.commitWith(save);
  return answer;
}

/**
 * The engine contract (`@sluice/core/engine`) on PostgreSQL: each call is one transaction that locks the rows
 * it touches (advisory locks in a sorted order, so concurrent calls on one key wait in turn and never in a
 * cycle), reads them with the database's time, decides with core's own functions (memoryEngine's: answers
 * are the memory engine's bit for bit, no twin to keep equal) and writes back what changed, with its expiry on
 * the database's clock. `at` undefined decides at `clock_timestamp()`, one reading per call. Every call
 * waits at most `timeoutMs` and rejects when PostgreSQL does not answer; a call past its deadline commits
 * nothing. Messages are NOTIFY/LISTEN. The tables are created in `schema` at the first call.
 * @example
 * import pg from 'pg'
 * const engine = postgresEngine({ pool: new pg.Pool({ connectionString: process.env.DATABASE_URL }) })
 * const [answer] = await engine.decide({ prefix: 'api', rules: [rule], states: [stateName(rule)] },
 *   [{ key: 'user:1', permits: 1, maxWaitMs: 0, peek: false, at: undefined }])
 */
export function postgresEngine(options: PostgresEngineOptions): Engine {
  return inCall('postgresEngine', () => {
    const o = parseEngineOptions(options);
    const db = new Database(o.pool, o.schema, o.timeoutMs);
    const channels = new EngineChannels(db);
    const s = `"${o.schema}"`;
    const onKeys = <T>(what: string, touched: Touched & { prefix: string }, compute: (data: ScratchState) => T) =>
      db.transaction(what, (tx) => onRows(tx, o.schema, touched, compute));
    // One transaction per prefix for the decide calls of one turn, each call's asks decided in call order.
    const batches = new DecideBatches((calls) => {
      const prefix = (calls[0] as BatchedCall).rules.prefix;
      const states = calls.flatMap(({ rules, asks }) => asks.flatMap((ask) => stateKeys(rules, ask.key)));
      const bans = calls.flatMap(({ asks }) => asks.map((ask) => compositeKey(prefix, ask.key)));
      return onKeys('a decision', { prefix, states, bans }, (data) =>
        calls.map(({ rules, asks }): readonly DecideAnswer[] => {
          const stale = data.stale(prefix, rules.version);
          if (stale !== undefined) return asks.map(() => ({ stale }));
          return asks.map((ask) => decideAsk(data, rules, ask, ask.at ?? data.nowMs));
        }),
      );
    });
    // The contract's checks are core's (checkedEngine): every value here is checked already.
    return checkedEngine({
      name: 'postgres',
      async decide(rules: EngineRules, asks): Promise<readonly DecideAnswer[]> {
        // Nothing asked, nothing changed: not even the version (as memoryEngine).
        if (asks.length === 0) return [];
        return batches.decide(rules, asks);
      },
      async adjust(rules, key, adjustment, at): Promise<AdjustAnswer> {
        const states = stateKeys(rules, key);
        // A carry also reads (and deletes) the key's states under the rules' earlier generations.
        const earlier =
          adjustment.op === 'carry'
            ? adjustment.links.flatMap((link) =>
                link.from.map((f) => compositeKey(rules.prefix, f.state, identityOf(f.rule, key))),
              )
            : [];
        const touched = {
          prefix: rules.prefix,
          states: [...states, ...earlier],
          bans: [compositeKey(rules.prefix, key)],
        };
        const lessees = adjustment.op === 'reset' ? { lessees: states.map(lesseesOf) } : {};
        return onKeys(adjustment.op, { ...touched, ...lessees }, (data): AdjustAnswer => {
          const stale = data.stale(rules.prefix, rules.version);
          if (stale !== undefined) return { stale };
          return { freed: adjustKey(data, rules, key, adjustment, at ?? data.nowMs) };
        });
      },
      async lease(rules, ask, at): Promise<LeaseAnswer> {
        const states = stateKeys(rules, ask.key).slice(0, 1);
        return onKeys('a lease', { prefix: rules.prefix, states, lessees: states.map(lesseesOf) }, (data) => {
          const stale = data.stale(rules.prefix, rules.version);
          if (stale !== undefined) return { stale };
          return leaseOf(data, rules, ask, at ?? data.nowMs);
        });
      },
      async heartbeat(beat, at): Promise<HeartbeatAnswer> {
        const fleet = compositeKey(beat.prefix, beat.fleet);
        return onKeys('a heartbeat', { prefix: beat.prefix, fleets: [fleet] }, (data) =>
          heartbeatOf(data, beat, at ?? data.nowMs),
        );
      },
      async readConfig(prefix): Promise<ConfigRead> {
        return db.transaction('a configuration read', async (tx) => {
          const [row] = await tx.begin<{ now: number; version: string | null; text: string | null }>(
            `SELECT ${CLOCK_MS} AS now, r.version::text AS version, r.text FROM (SELECT 1) AS one ` +
              `LEFT JOIN ${s}.configs AS r ON r.prefix = ${tx.literal(keyText(prefix))}`,
          );
          if (row === undefined) throw new Error('PostgreSQL answered no row');
          const engineNowMs = Math.floor(row.now);
          if (row.version === null || row.text === null) return { record: undefined, engineNowMs };
          return { record: { version: Number(row.version), text: row.text }, engineNowMs };
        });
      },
      // One version per prefix here: a change for one key (an override's) raises it everywhere, as any other.
      async writeConfig(prefix, expected, record): Promise<ConfigWrite> {
        return db.transaction('a configuration write', async (tx): Promise<ConfigWrite> => {
          const p = tx.literal(keyText(prefix));
          const [row] = await tx.begin<{ version: string }>(
            lockSql(tx, [`c${prefix}`]) as string,
            `SELECT version::text AS version FROM ${s}.configs WHERE prefix = ${p}`,
          );
          const stored = row === undefined ? 1 : Number(row.version);
          if (stored !== expected) return { written: false, conflict: stored };
          // The record's version is the prefix's from now on: a call under an older one is stale.
          const version = `${tx.literal(String(record.version))}::bigint`;
          tx.commitWith(
            `WITH w AS (INSERT INTO ${s}.configs (prefix, version, text) VALUES (${p}, ${version}, ` +
              `${tx.literal(record.text)}) ON CONFLICT (prefix) DO UPDATE SET version = EXCLUDED.version, ` +
              `text = EXCLUDED.text) INSERT INTO ${s}.versions (prefix, version) VALUES (${p}, ${version}) ` +
              `ON CONFLICT (prefix) DO UPDATE SET version = GREATEST(${s}.versions.version, EXCLUDED.version)`,
          );
          return { written: true };
        });
      },
      publish: (channel, message) => channels.publish(channel, message),
      subscribe: (channel, listener) => channels.subscribe(channel, listener),
    });
  });
}
