/**
 * The packages as a new user gets them: every package packed (scripts/pack.mjs, as `pnpm pack` makes the
 * tarballs), installed into a fresh project outside the monorepo (our packages from the tarballs, never the
 * workspace or a registry; their dependencies from the local package store, the registry only for what it
 * lacks), then a small program run from CommonJS and from ESM against a real
 * Redis (so the Lua scripts must be in the tarballs), and type-checked under `module: nodenext` and under
 * `moduleResolution: bundler`. The tarballs hold dist/, README and LICENSE, no `workspace:` or `catalog:`, and
 * publint and attw find nothing in them.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestRedis } from './harness/use-redis.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['cli', 'core', 'grpc', 'hybrid', 'nestjs', 'otel', 'postgres', 'redis'];
const redis = useTestRedis();
let work: string;
let app: string;
let tarballs: string[];

/** The version the monorepo installed of a dependency the program needs (the local store has it: no network). */
function installedVersion(from: string, name: string): string {
  const manifest = join(root, from, 'node_modules', name, 'package.json');
  return (JSON.parse(readFileSync(manifest, 'utf8')) as { version: string }).version;
}

function run(command: string, args: string[], cwd: string): string {
  // A program that does not exit (a handle left open) fails here rather than hanging the suite.
  const r = spawnSync(command, args, {
    cwd,
    encoding: 'utf8',
    timeout: 240_000,
    env: { ...process.env, COREPACK_INTEGRITY_KEYS: '0', REDIS_URL: redis().server.url },
  });
  if (r.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${r.status}):\n${r.stdout}\n${r.stderr}`);
  return r.stdout;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'sluice-install-'));
  tarballs = run(process.execPath, [join(root, 'scripts', 'pack.mjs'), join(work, 'packs')], root)
    .trim()
    .split('\n');
  app = join(work, 'app');
  mkdirSync(app);
  const local = Object.fromEntries(
    tarballs.map((t) => [`@sluice/${basename(t).replace(/^sluice-(.*)-\d+\.\d+\.\d+\.tgz$/, '$1')}`, `file:${t}`]),
  );
  const peers = {
    ioredis: installedVersion('packages/redis', 'ioredis'),
    '@opentelemetry/api': installedVersion('packages/otel', '@opentelemetry/api'),
    '@opentelemetry/sdk-metrics': installedVersion('packages/otel', '@opentelemetry/sdk-metrics'),
    '@nestjs/common': installedVersion('packages/nestjs', '@nestjs/common'),
    '@nestjs/core': installedVersion('packages/nestjs', '@nestjs/core'),
    'reflect-metadata': installedVersion('packages/nestjs', 'reflect-metadata'),
    rxjs: installedVersion('packages/nestjs', 'rxjs'),
    '@grpc/grpc-js': installedVersion('packages/grpc', '@grpc/grpc-js'),
    pg: installedVersion('packages/postgres', 'pg'),
    '@types/pg': installedVersion('packages/postgres', '@types/pg'),
    '@types/node': installedVersion('.', '@types/node'),
  };
  // The tarballs depend on each other by version (0.1.0, not published): overrides point those at the files.
  writeFileSync(
    join(app, 'package.json'),
    JSON.stringify({ name: 'sluice-install-check', private: true, dependencies: { ...local, ...peers } }, null, 2),
  );
  writeFileSync(
    join(app, 'pnpm-workspace.yaml'),
    `overrides:\n${Object.entries(local)
      .map(([name, spec]) => `  "${name}": "${spec}"\n`)
      .join('')}`,
  );
  run(
    process.execPath,
    [
      join(root, 'scripts', 'pnpm.mjs'),
      'install',
      '--prefer-offline',
      '--ignore-scripts',
      '--config.auto-install-peers=false',
    ],
    app,
  );
}, 300_000);

afterAll(() => {
  if (work !== undefined) rmSync(work, { recursive: true, force: true });
});

/** What both programs do: a memory decision, an exact decision on Redis, a leased one, metrics, Nest loading. */
const program = (load: (name: string) => string) => `
${load('core')} ${load('redis')} ${load('hybrid')} ${load('otel')} ${load('grpc')} ${load('postgres')}
const { Redis } = ioredis;
const client = new Redis(process.env.REDIS_URL);
const local = core.createLimiter({ rules: core.fixedWindow({ limit: 1, windowMs: 60000 }) });
const store = redis.redisStore({ redis: client });
const exact = core.createLimiter({ rules: core.tokenBucket({ capacity: 1, refillPerSecond: 0.001 }), store, prefix: 'install-' + process.argv[2] });
const leasing = hybrid.leasedStore({ redis: client });
const leased = core.createLimiter({ rules: core.tokenBucket({ capacity: 1, refillPerSecond: 0.001 }), store: leasing, prefix: 'install-leased-' + process.argv[2] });
otel.instrumentSluice({ meterProvider: new sdk.MeterProvider() });
const out = [];
for (const l of [local, exact, leased]) out.push((await l.tryAcquire('k')).allowed, (await l.tryAcquire('k')).allowed);
await Promise.all([local.close(), exact.close(), leased.close()]);
await Promise.all([store.close(), leasing.close()]);
client.disconnect();
const serverInterceptor = typeof grpc.grpcRateLimit({ limiter: local });
console.log(JSON.stringify({ out, nest: typeof nest.SluiceModule.forRoot, http: typeof http.rateLimit, grpc: serverInterceptor, postgres: Object.keys(postgres).sort() }));
`;

describe('installed from the tarballs', () => {
  it('each tarball holds dist/, README and LICENSE, and no workspace: or catalog: range', () => {
    for (const tarball of tarballs) {
      const files = execFileSync('tar', ['tzf', tarball], { encoding: 'utf8' }).split('\n');
      expect(files, tarball).toContain('package/README.md');
      expect(files, tarball).toContain('package/LICENSE');
      expect(
        files.filter(
          (f) =>
            f !== '' &&
            !/^package\/(dist\/|src\/lua\/[\w]+\.lua$|bin\/[\w]+\.mjs$|package\.json$|README\.md$|LICENSE$)/.test(f),
        ),
        tarball,
      ).toEqual([]);
      expect(
        files.some((f) => f.endsWith('.map')),
        tarball,
      ).toBe(false);
      const manifest = execFileSync('tar', ['xzf', tarball, '-O', 'package/package.json'], { encoding: 'utf8' });
      expect(manifest, tarball).not.toMatch(/workspace:|catalog:|sluice-source/);
    }
    expect(tarballs.map((t) => basename(t)).sort()).toEqual(PACKAGES.map((p) => `sluice-${p}-0.1.0.tgz`));
  });

  it('publint (strict) and Are the Types Wrong find no problem in any tarball (node10, node16 CJS/ESM, bundler)', () => {
    const report = run(process.execPath, [join(root, 'scripts', 'check-packages.mjs'), ...tarballs], root);
    expect(report.match(/All good!/g)).toHaveLength(tarballs.length);
    expect(report.match(/No problems found/g)).toHaveLength(tarballs.length);
  });

  it('the sluice command runs from its tarball: its help, and a lists read against Redis', () => {
    const bin = join(app, 'node_modules', '.bin', 'sluice');
    expect(run(bin, ['--help'], app)).toMatch(/^usage: sluice <command>/);
    const r = spawnSync(bin, ['lists', '--prefix', 'never-ran-here', '--url', redis().server.url], {
      encoding: 'utf8',
    });
    expect([r.status, r.stderr.trim()]).toEqual([
      3,
      'sluice: no limiter with prefix "never-ran-here" has run on this Redis in the last week; check --prefix',
    ]);
  });

  it('runs from CommonJS', () => {
    const load = (name: string) => `const ${name} = require('@sluice/${name}');`;
    writeFileSync(
      join(app, 'program.cjs'),
      `(async () => { const ioredis = require('ioredis'); const sdk = require('@opentelemetry/sdk-metrics'); require('reflect-metadata');
       const nest = require('@sluice/nestjs'); const http = require('@sluice/core/http');
       ${program(load)} })();`,
    );
    expect(JSON.parse(run(process.execPath, ['program.cjs', 'cjs'], app))).toEqual({
      out: [true, false, true, false, true, false],
      nest: 'function',
      grpc: 'function',
      http: 'function',
      postgres: ['PostgresStore', 'postgresEngine', 'postgresStore'],
    });
  });

  it('runs from ESM', () => {
    const load = (name: string) => `import * as ${name} from '@sluice/${name}';`;
    writeFileSync(
      join(app, 'program.mjs'),
      `import ioredis from 'ioredis'; import * as sdk from '@opentelemetry/sdk-metrics'; import 'reflect-metadata';
       import * as nest from '@sluice/nestjs'; import * as http from '@sluice/core/http';
       ${program(load)}`,
    );
    expect(JSON.parse(run(process.execPath, ['program.mjs', 'esm'], app))).toEqual({
      out: [true, false, true, false, true, false],
      nest: 'function',
      grpc: 'function',
      http: 'function',
      postgres: ['PostgresStore', 'postgresEngine', 'postgresStore'],
    });
  });

  it.each([
    ['module nodenext', 'nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
    ['moduleResolution bundler', 'bundler', { module: 'esnext', moduleResolution: 'bundler' }],
    // A new user's app with this flag once failed on every Redis store (TS2420 in RedisStore's declaration).
    [
      'exactOptionalPropertyTypes, declarations checked',
      'exact-optional',
      { module: 'nodenext', moduleResolution: 'nodenext', exactOptionalPropertyTypes: true, skipLibCheck: false },
    ],
  ])('type-checks under %s', (_name, folder, resolution) => {
    const dir = join(app, `types-${folder}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'check.ts'),
      `import { type Decision, createLimiter, fixedWindow, concurrencyLimiter } from '@sluice/core';
       import { byIp, rateLimit } from '@sluice/core/http';
       import { fetchRateLimit } from '@sluice/core/fetch';
       import { redisStore } from '@sluice/redis';
       import { leasedStore } from '@sluice/hybrid';
       import { instrumentSluice } from '@sluice/otel';
       import { SluiceModule } from '@sluice/nestjs';
       import { type PostgresEngineOptions, postgresEngine } from '@sluice/postgres';
       import { Redis } from 'ioredis';
       import pg from 'pg';
       const redis = new Redis();
       const limiter = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), store: redisStore({ redis }) });
       export const decided: Promise<Decision> = limiter.tryAcquire('k');
       export const middleware = rateLimit({ limiter, key: byIp() });
       export const handler = fetchRateLimit({ limiter, key: () => 'k' })(async () => new Response('ok'));
       export const leased = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), store: leasedStore({ redis }) });
       export const slots = concurrencyLimiter({ max: 2 });
       const maybePrefix: string | undefined = process.env.PREFIX;
       export const optional = createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1000 }), prefix: maybePrefix });
       export const stop: () => void = instrumentSluice().stop;
       export const nest = SluiceModule.forRoot({ limiter });
       const engineOptions: PostgresEngineOptions = { pool: new pg.Pool(), timeoutMs: 100, schema: maybePrefix };
       export const engine = postgresEngine(engineOptions);
       // @ts-expect-error permits is a number
       limiter.tryAcquire('k', { permits: 'two' });
      `,
    );
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'es2022',
          strict: true,
          noEmit: true,
          skipLibCheck: true,
          types: ['node'],
          lib: ['es2022', 'dom'],
          ...resolution,
        },
        files: ['check.ts'],
      }),
    );
    run(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], app);
  });
});
