/**
 * One engine call on PostgreSQL: a connection of the user's pool, one transaction, a deadline. The call waits
 * at most `timeoutMs` (core's withDeadline), each statement a little longer on the server (statement_timeout),
 * and a call whose deadline passed before it committed rolls back: the caller was told it failed, so nothing
 * it did may stay. After each commit, a bounded sweep deletes rows that expired (outside the transaction, never
 * waiting on a row another call holds), so the tables stay bounded by what is live.
 */
import { DeadlineError, withDeadline } from '@sluice/core/internal';
import type { Pool, PoolClient } from 'pg';
import { EXPIRING } from './schema.js';
import { migrate } from './schema.js';

/** The database's clock in ms since the epoch, as a double (microseconds kept). */
export const CLOCK_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::float8';

/**
 * How much longer than the call's deadline a statement may run on the server: the client's deadline answers
 * first (a DeadlineError), and statement_timeout then ends a wait the server would otherwise go on with.
 */
const STATEMENT_MARGIN_MS = 100;

/** Expired rows each call deletes per table, at most. */
const SWEEP_ROWS = 32;

/** Thrown inside a call whose deadline passed: it rolls back instead of committing. */
class Abandoned extends Error {}

export class Database {
  readonly #pool: Pool;
  readonly schema: string;
  readonly timeoutMs: number;
  readonly #sweep: string;
  #ready: Promise<void> | undefined;

  constructor(pool: Pool, schema: string, timeoutMs: number) {
    this.#pool = pool;
    this.schema = schema;
    this.timeoutMs = timeoutMs;
    const s = `"${schema}"`;
    this.#sweep = EXPIRING.map(
      (t) =>
        `DELETE FROM ${s}.${t} WHERE key IN (SELECT key FROM ${s}.${t} WHERE expires_at <= ${CLOCK_MS} ` +
        `ORDER BY expires_at LIMIT ${SWEEP_ROWS} FOR UPDATE SKIP LOCKED)`,
    ).join('; ');
  }

  get pool(): Pool {
    return this.#pool;
  }

  /** The tables, created at the first call (again at the next call when that failed). */
  ready(): Promise<void> {
    if (this.#ready === undefined) {
      const made = migrate(this.#pool, this.schema);
      this.#ready = made;
      made.catch(() => {
        if (this.#ready === made) this.#ready = undefined;
      });
    }
    return this.#ready;
  }

  /** Runs `work` within the deadline; `what` names the call in a DeadlineError. */
  async bounded<T>(what: string, work: (abandoned: () => boolean) => Promise<T>): Promise<T> {
    let abandoned = false;
    try {
      return await withDeadline(
        work(() => abandoned),
        this.timeoutMs,
        what,
      );
    } catch (error) {
      if (!(error instanceof DeadlineError)) throw error;
      abandoned = true;
      throw new DeadlineError(`${what}: PostgreSQL did not answer within ${this.timeoutMs} ms`);
    }
  }

  /**
   * Runs `body` in one transaction on one connection, within the deadline: committed when it returns in time,
   * rolled back when it throws or the deadline passed first.
   */
  transaction<T>(what: string, body: (client: PoolClient) => Promise<T>): Promise<T> {
    return this.bounded(what, async (abandoned) => {
      await this.ready();
      const client = await this.#pool.connect();
      if (abandoned()) {
        client.release();
        throw new Abandoned();
      }
      let broken: Error | undefined;
      let committed = false;
      try {
        await client.query(`BEGIN; SET LOCAL statement_timeout = ${Math.ceil(this.timeoutMs) + STATEMENT_MARGIN_MS}`);
        const answer = await body(client);
        if (abandoned()) throw new Abandoned();
        await client.query('COMMIT');
        committed = true;
        return answer;
      } catch (error) {
        if (!committed)
          await client.query('ROLLBACK').catch((e: unknown) => {
            broken = e instanceof Error ? e : new Error(String(e));
          });
        throw error;
      } finally {
        if (committed) this.#sweepThenRelease(client);
        else client.release(broken);
      }
    });
  }

  /** Deletes a few expired rows of each table after the call has answered, then gives the connection back. */
  #sweepThenRelease(client: PoolClient): void {
    client.query(this.#sweep).then(
      () => client.release(),
      (error: unknown) => client.release(error instanceof Error ? error : new Error(String(error))),
    );
  }
}
