import { SluiceRangeError, SluiceTypeError } from './errors.js';
import { describe } from './validate.js';

/**
 * Every warning sluice gives, by code, with what to do about it. A warning is said once per code in a
 * process, as a process warning of type 'SluiceWarning' (Node's 'warning' event and stderr; the console in
 * other runtimes). Listed with their causes in docs/warnings.md.
 */
export const WARNINGS = {
  /** A callback of yours (onDecision, an event listener, an observer) threw; sluice went on. */
  SLUICE_CALLBACK_ERROR: "Listen to 'callback-error' on the store or limiter to handle these errors yourself.",
  /** Post-response accounting (skipSuccessfulRequests, permitsAfterResponse) could not refund or penalize. */
  SLUICE_ACCOUNTING_FAILED: 'Pass onAccountingError to the middleware to see each failure.',
  /** A store's start-up check found it cannot work with this Redis (a missing permission, a client of the wrong mode). */
  SLUICE_STORE_MISCONFIGURED:
    "Give the Redis user the commands named (the README's ACL line) or pass a client of the server's mode; await " +
    'store.ready() at start-up to fail fast.',
  /** An ioredis client queues commands while disconnected and retries them forever. */
  SLUICE_OFFLINE_QUEUE: 'Set maxRetriesPerRequest or commandTimeout on the client, or enableOfflineQueue: false.',
  /** On a Cluster, a policy counts rules against other keys, which live in other slots. */
  SLUICE_CROSS_SLOT: "Keep a policy's rules on the request's own key to decide it in one call.",
  /** The Redis a store uses may evict keys when full (maxmemory with a policy other than noeviction). */
  SLUICE_EVICTING_REDIS:
    'Run limiters on a Redis with maxmemory-policy noeviction (writes then fail, and failMode decides), or one ' +
    "with no maxmemory; see the README's production section.",
  /** A divided fleet heartbeats faster than its Redis can be asked to sustain (its size x 1000 / heartbeatMs). */
  SLUICE_FLEET_HEARTBEATS:
    'Raise heartbeatMs for a fleet this size (the warning names the least that keeps it under 5,000 heartbeats ' +
    'per second).',
  /** This process's clock is more than a second from its Redis's TIME (seen at a fleet heartbeat). */
  SLUICE_CLOCK_SKEW:
    "Synchronise the host's clock (NTP, chrony); sluice decides on Redis TIME by default (clock: 'server').",
  /** Two live processes were given one nodeId: the second to notice went on under an id of its own. */
  SLUICE_NODE_ID_REUSED:
    'Give each process a nodeId of its own (a pod name with the worker number, say), or leave nodeId out for a ' +
    'random one.',
  /** A limiter's lists hold addresses or ranges, and a decision gave no client address: they held for none of it. */
  SLUICE_LIST_NO_ADDRESS:
    "Pass the client's address (tryAcquire(key, { address })), as the HTTP, Fetch, Hono, Koa, gRPC and Nest " +
    'adapters do; a key is never read as an address.',
  /** A limiter's stored lists hold an entry it cannot enforce (an older version's, or one written by hand): it holds for nothing. */
  SLUICE_LIST_ENTRY_UNENFORCED:
    "Remove it (unlist takes any listed text as it is) and list what was meant: the range's usual form, or a key as key=<the key>.",
  /** instrumentSluice() found no MeterProvider registered globally: its instruments record nothing. */
  SLUICE_OTEL_NO_PROVIDER:
    'Register the OpenTelemetry SDK before calling instrumentSluice(), or pass it a meterProvider.',
} as const;

/** The code of a sluice warning (a key of WARNINGS). */
export type SluiceWarningCode = keyof typeof WARNINGS;

interface WarningState {
  readonly shown: Set<string>;
  readonly silenced: Set<string>;
  silenceAll: boolean;
}

// Per process, on globalThis: ESM and CommonJS copies of sluice say each warning once between them.
const STATE_KEY = Symbol.for('sluice.warnings.v1');
const host = globalThis as {
  [STATE_KEY]?: WarningState;
  process?: {
    env?: Record<string, string | undefined>;
    emitWarning?: (message: string, options: { type: string; code: string }) => void;
  };
};
const state: WarningState = (host[STATE_KEY] ??= fromEnvironment());

/** SLUICE_SILENCE_WARNINGS: a comma-separated list of codes, or `all`. */
function fromEnvironment(): WarningState {
  const listed = (host.process?.env?.SLUICE_SILENCE_WARNINGS ?? '')
    .split(',')
    .map((code) => code.trim())
    .filter((code) => code !== '');
  return { shown: new Set(), silenced: new Set(listed), silenceAll: listed.includes('all') };
}

function isCode(value: unknown): value is SluiceWarningCode {
  return typeof value === 'string' && Object.hasOwn(WARNINGS, value);
}

/** `text` ending as a sentence does, so the advice after it never runs on from it. */
function sentence(text: string): string {
  const trimmed = text.trimEnd();
  return /[.!?:)]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

/**
 * Says `message` with the code's advice, unless the code was said before in this process or silenced.
 * Never throws (a warning must not break the code that gives it).
 * @example
 * warnOnce('SLUICE_CROSS_SLOT', `limiter ${JSON.stringify(prefix)} spans slots.`)
 */
export function warnOnce(code: SluiceWarningCode, message: string): void {
  if (state.silenceAll || state.silenced.has(code) || state.shown.has(code)) return;
  state.shown.add(code);
  const text = `${sentence(message)} ${WARNINGS[code]} (Shown once; silence it with silenceWarnings('${code}') or SLUICE_SILENCE_WARNINGS=${code}.)`;
  try {
    if (typeof host.process?.emitWarning === 'function')
      host.process.emitWarning(text, { type: 'SluiceWarning', code });
    else console.warn(`SluiceWarning [${code}]: ${text}`);
  } catch {
    // A host that throws on warnings (node --throw-deprecation does not, but a patched emitWarning may).
  }
}

/**
 * Silences the warnings of the given codes in this process, or every sluice warning when called with
 * none. (On Node, `--disable-warning=SluiceWarning` silences them all from the command line, and the
 * environment variable SLUICE_SILENCE_WARNINGS takes a comma-separated list of codes, or `all`.)
 *
 * @example
 * silenceWarnings('SLUICE_CROSS_SLOT') // this policy spans slots on purpose
 */
export function silenceWarnings(...codes: SluiceWarningCode[]): void {
  for (const code of codes) {
    if (typeof code !== 'string')
      throw new SluiceTypeError(
        'code',
        code,
        `silenceWarnings takes warning codes such as 'SLUICE_CROSS_SLOT', got ${describe(code)}`,
      );
    if (!isCode(code))
      throw new SluiceRangeError(
        'code',
        code,
        `silenceWarnings: ${JSON.stringify(code)} is not a sluice warning code; known codes: ` +
          `${Object.keys(WARNINGS).join(', ')}`,
      );
  }
  if (codes.length === 0) state.silenceAll = true;
  for (const code of codes) state.silenced.add(code);
}
