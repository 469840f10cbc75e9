/**
 * One engine call on PostgreSQL: a connection of the user's pool, one transaction, a deadline. The call waits
 * at most `timeoutMs` (core's withDeadline), each statement a little longer on the server (statement_timeout),
 * and a call whose deadline passed before it committed rolls back: the caller was told it failed, so nothing
 * it did may stay. After each commit, a bounded sweep deletes rows that expired (outside the transaction, never
 * waiting on a row another call holds), so the tables stay bounded by what is live.
 */
import { DeadlineError, OPERATIONS_DEADLINE_MS, withDeadline } from '@sluice/core/internal';
import type { Pool, PoolClient, QueryResult, QueryResultRow } from 'pg';
import { EXPIRING } from './schema.js';
import { migrate } from './schema.js';

/** The database's clock in ms since the epoch, as a double (microseconds kept). */
export const CLOCK_MS = '(extract(epoch FROM clock_timestamp()) * 1000)::float8';

/**
 * How much longer than the call's deadline a statement may run on the server: the client's deadline answers
 * first (a DeadlineError), and statement_timeout then ends a wait the server would otherwise go on with.
 */
const STATEMENT_MARGIN_MS = 100;

/**
 * Expired rows each call deletes per table, at most: this many, plus twice the rows it wrote, so that the sweep
 * keeps ahead of what calls write (a row is written at most once per call that touches it).
 */
const SWEEP_ROWS = 32;

/** Thrown inside a call whose deadline passed: it rolls back instead of committing. */
class Abandoned extends Error {}

/**
 * One call's transaction. Statements without parameters ride with BEGIN and with COMMIT (a simple query of
 * several statements, each with a snapshot of its own under READ COMMITTED), so a call that locks, reads and
 * writes costs two round trips: `begin(locks; reads)`, then `commitWith(writes)`.
 */
export class Transaction {
  readonly #client: PoolClient;
  readonly #beginSql: string;
  #begun = false;
  /** Written with COMMIT. */
  finalSql = '';
  /** Rows the call writes (upserts): the sweep after it deletes more than this. */
  written = 0;

  constructor(client: PoolClient, beginSql: string) {
    this.#client = client;
    this.#beginSql = beginSql;
  }

  get begun(): boolean {
    return this.#begun;
  }

  /** A SQL literal of `value` (node-postgres's escapeLiteral: right whatever standard_conforming_strings is). */
  literal(value: string): string {
    return this.#client.escapeLiteral(value);
  }

  /** Opens the transaction with `statements` (no parameters) after it; the last one's rows. */
  async begin<R extends QueryResultRow>(...statements: string[]): Promise<R[]> {
    this.#begun = true;
    const results = (await this.#client.query([this.#beginSql, ...statements].join('; '))) as unknown as
      | QueryResult<R>
      | QueryResult<R>[];
    const last = Array.isArray(results) ? results[results.length - 1] : results;
    return last?.rows ?? [];
  }

  /** A statement with parameters, in the transaction (opened first if need be). */
  async query<R extends QueryResultRow>(sql: string, params: unknown[]): Promise<R[]> {
    if (!this.#begun) await this.begin();
    return (await this.#client.query<R>(sql, params)).rows;
  }

  /** Statements (no parameters) to send with COMMIT. */
  commitWith(sql: string): void {
    this.finalSql = sql;
  }
}

export class Database {
  readonly #pool: Pool;
  readonly schema: string;
  readonly timeoutMs: number;
  readonly #s: string;
  #ready: Promise<void> | undefined;

  constructor(pool: Pool, schema: string, timeoutMs: number) {
    this.#pool = pool;
    this.schema = schema;
    this.timeoutMs = timeoutMs;
    this.#s = `"${schema}"`;
  }

  /** The sweep's statements: each table's oldest expired rows, at most `rows`, none another call holds. */
  #sweep(rows: number): string {
    const s = this.#s;
    return EXPIRING.map(
      (t) =>
        `DELETE FROM ${s}.${t} WHERE key IN (SELECT key FROM ${s}.${t} WHERE expires_at <= ${CLOCK_MS} ` +
        `ORDER BY expires_at LIMIT ${rows} FOR UPDATE SKIP LOCKED)`,
    ).join('; ');
  }

  get pool(): Pool {
    return this.#pool;
  }

  /**
   * The tables, checked (created when missing) before the first call, within OPERATIONS_DEADLINE_MS rather than
   * a call's deadline: a CREATE on a new database takes longer than a decision may, and a first call refused
   * for it would fail over for nothing. Made again at the next call when that failed.
   */
  ready(): Promise<void> {
    if (this.#ready === undefined) {
      const made = withDeadline(
        migrate(this.#pool, this.schema),
        Math.max(this.timeoutMs, OPERATIONS_DEADLINE_MS),
        'checking the tables',
      );
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
  transaction<T>(what: string, body: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.ready().then(() => this.#transaction(what, body));
  }

  #transaction<T>(what: string, body: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.bounded(what, async (abandoned) => {
      const client = await this.#pool.connect();
      // A connection ended while checked out (pg_terminate_backend, a restart) emits 'error' on its client, which
      // the pool hears only while the client is idle: heard here, the call in progress fails, not the process.
      let broken: Error | undefined;
      const lost = (error: Error): void => {
        broken ??= error;
      };
      client.on('error', lost);
      const release = (error?: Error): void => {
        client.off('error', lost);
        client.release(error ?? broken);
      };
      if (abandoned()) {
        release();
        throw new Abandoned();
      }
      let committed = false;
      let written = 0;
      try {
        const tx = new Transaction(
          client,
          `BEGIN; SET LOCAL statement_timeout = ${Math.ceil(this.timeoutMs) + STATEMENT_MARGIN_MS}`,
        );
        const answer = await body(tx);
        if (abandoned()) throw new Abandoned();
        if (!tx.begun) await tx.begin();
        await client.query(tx.finalSql === '' ? 'COMMIT' : `${tx.finalSql}; COMMIT`);
        written = tx.written;
        committed = true;
        return answer;
      } catch (error) {
        if (!committed)
          await client.query('ROLLBACK').catch((e: unknown) => {
            broken = e instanceof Error ? e : new Error(String(e));
          });
        throw error;
      } finally {
        if (committed) this.#sweepThenRelease(client, SWEEP_ROWS + 2 * written, release);
        else release();
      }
    });
  }

  /** Deletes a few expired rows of each table after the call has answered, then gives the connection back. */
  #sweepThenRelease(client: PoolClient, rows: number, release: (error?: Error) => void): void {
    client.query(this.#sweep(rows)).then(
      () => release(),
      (error: unknown) => release(error instanceof Error ? error : new Error(String(error))),
    );
  }
}
