/**
 * docs/vocabulary.md is the table of what each word means: every option name in docs/options.md's tables
 * must have a row there, or be listed in ONE_ENTRY_POINT below (an option only one entry point takes, whose
 * meaning its section in docs/options.md gives). An allowed word that a second entry point takes must get
 * its row, so the table cannot silently miss a word shared by two entry points.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (name: string) => readFileSync(new URL(`../docs/${name}`, import.meta.url), 'utf8');

/**
 * The options only one entry point takes (its section of docs/options.md says what it means), in the order
 * of docs/options.md. The CLI's flags (a `| flag |` table) are the command line's own and not checked here.
 */
const ONE_ENTRY_POINT: ReadonlySet<string> = new Set([
  // createLimiter, limiter calls
  'retryJitterMs',
  'limitedKeys',
  'accessList',
  'decision',
  'carry',
  'cursor',
  'count',
  'minutes',
  'reason',
  // rule factories' own parameters
  'period',
  'timeZone',
  'anchor',
  'refillPerSecond',
  'maxDebt',
  'leakPerSecond',
  'mode',
  'burst',
  'autoAdvance',
  // concurrency, throttle
  'max',
  'order',
  'maxPauseMs',
  'minPauseMs',
  'fetch',
  'onResponse',
  // HTTP adapters' shared options (one section: createEvaluator) and their own
  'concurrency',
  'onMissingKey',
  'headers',
  'onInvalidInput',
  'skipSuccessfulRequests',
  'skipFailedRequests',
  'requestWasSuccessful',
  'onAccountingError',
  'getConnInfo',
  'ipv6Subnet',
  // decorators, admin, BullMQ, gRPC, NestJS, otel
  'limiters',
  'authorize',
  'basePath',
  'challenge',
  'onAction',
  'queue',
  'methods',
  'throttle',
  'throttleKey',
  'algorithm',
  'contexts',
  'graphqlPer',
  'imports',
  'inject',
  'useFactory',
  'meterProvider',
  // checkEngine (the conformance suite)
  'seed',
  'steps',
  'sharedIdentities',
  // Redis-backed stores (one shared section) and each store's own
  'nodeId',
  'assumedNodes',
  'maxClockSkewMs',
  'maxBatch',
  'targetMs',
  'maxLease',
  'lowWater',
  'liveMs',
  'share',
  'reserve',
]);

/** Each `| option |` table's option names, with the `##` sections that list them. */
function optionSections(markdown: string): Map<string, Set<string>> {
  const sections = new Map<string, Set<string>>();
  let section = '';
  let inTable = false;
  for (const line of markdown.split('\n')) {
    if (line.startsWith('#')) section = line;
    if (line.startsWith('| option |')) inTable = true;
    else if (!line.startsWith('|')) inTable = false;
    const name = inTable ? /^\| `([^`]+)` \|/.exec(line)?.[1] : undefined;
    if (name === undefined) continue;
    const where = sections.get(name) ?? new Set<string>();
    sections.set(name, where.add(section));
  }
  return sections;
}

/** The words a table row of the vocabulary defines: each backticked name in its first cell. */
function vocabularyWords(markdown: string): Set<string> {
  const words = new Set<string>();
  for (const line of markdown.split('\n')) {
    const first = /^\| ([^|]+) \|/.exec(line)?.[1];
    if (first === undefined) continue;
    for (const match of first.matchAll(/`([^`]+)`/g)) words.add(match[1] as string);
  }
  return words;
}

describe('docs/vocabulary.md', () => {
  const options = optionSections(read('options.md'));
  const words = vocabularyWords(read('vocabulary.md'));

  it('reads the tables it checks (a parser that found nothing would pass anything)', () => {
    expect(options.get('maxWaitMs')?.size).toBeGreaterThan(3);
    expect(words.has('timeoutMs')).toBe(true);
  });

  it('has a row for every option in docs/options.md but those one entry point alone takes', () => {
    const missing = [...options.keys()].filter((name) => !words.has(name) && !ONE_ENTRY_POINT.has(name));
    expect(missing, 'options with no row in docs/vocabulary.md (add one, or allow a one-entry-point word)').toEqual([]);
  });

  it('allows only words that one entry point takes and that have no row', () => {
    const wrong = [...ONE_ENTRY_POINT].filter((name) => words.has(name) || options.get(name)?.size !== 1);
    expect(wrong, 'allowed words with a row, in no section, or in several (give them a row instead)').toEqual([]);
  });
});
