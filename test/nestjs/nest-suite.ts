/**
 * The @sluice/nestjs suite, run on NestJS 12 (test/nestjs) and NestJS 11 (test/nest11, where vitest resolves
 * @nestjs/* to that package's Nest 11): on platform-express and platform-fastify, compiled as Nest apps are
 * (experimentalDecorators, emitDecoratorMetadata): the global guard, @RateLimit on controllers and handlers,
 * @SkipRateLimit, key functions of Nest's ExecutionContext, a 429 through Nest's exception layer with the
 * headers and body every sluice adapter sends, exact headers under a ManualClock, bad permits -> 400, a key
 * function that throws -> Nest's 500, and sluice method decorators keyed by request inside Nest services.
 */
import 'reflect-metadata';
import {
  ManualClock,
  SluiceTypeError,
  concurrencyLimiter,
  createLimiter,
  fixedWindow,
  memoryStore,
  tokenBucket,
} from '@sluice/core';
import { rateLimited as limitMethod } from '@sluice/core/decorators';
import { byIp, byUser } from '@sluice/core/http';
import { RateLimit, SkipRateLimit, SluiceModule } from '@sluice/nestjs';
import {
  Controller,
  Get,
  Headers,
  Injectable,
  Module,
  UnauthorizedException,
  type ExecutionContext,
  type INestApplication,
} from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { ExpressAdapter } from '@nestjs/platform-express';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { redisStore } from '@sluice/redis';
import { Redis } from 'ioredis';
import nestCore from '@nestjs/core/package.json' with { type: 'json' };
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { aclWithout } from '../harness/acl.js';
import { freePort } from '../harness/free-port.js';
import { startTestRedis } from '../harness/redis-server.js';
import { get } from '../http/servers.js';

const clock = new ManualClock(3_000);
const store = memoryStore({ clock });
const headerOf = (ctx: ExecutionContext, name: string) =>
  ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers[name];

const sendLimiter = createLimiter({
  rules: fixedWindow({ limit: 2, windowMs: 60_000, name: 'codes' }),
  store: memoryStore({ clock }),
});

@Injectable()
class CodeService {
  // A sluice method decorator inside a Nest service, keyed by the current request's client.
  @limitMethod({ limiter: sendLimiter, key: byIp({ trustProxy: 1 }) })
  async send(): Promise<string> {
    return 'sent';
  }
}

@Controller('limiter')
@RateLimit({
  algorithm: fixedWindow({ limit: 5, windowMs: 10_000, name: 'ctl' }),
  key: byUser((ctx: ExecutionContext) => headerOf(ctx, 'x-user')),
})
class LimiterController {
  constructor(private readonly codes: CodeService) {}

  @Get('count')
  count() {
    return { ok: true };
  }

  @Get('rate')
  // One bucket for every client (of this test run: both platforms share the module's store).
  @RateLimit({
    algorithm: fixedWindow({ limit: 2, windowMs: 10_000, name: 'rate' }),
    key: (ctx: ExecutionContext) => `everyone-${headerOf(ctx, 'x-run')}`,
  })
  rate() {
    return { ok: true };
  }

  @Get('health')
  @SkipRateLimit()
  health() {
    return { ok: true };
  }

  @Get('permits')
  @RateLimit({
    algorithm: fixedWindow({ limit: 5, windowMs: 10_000, name: 'permits' }),
    key: (ctx: ExecutionContext) => headerOf(ctx, 'x-run'),
    permits: (ctx: ExecutionContext) => Number(headerOf(ctx, 'x-permits')),
  })
  permits() {
    return { ok: true };
  }

  @Get('broken')
  @RateLimit({
    algorithm: fixedWindow({ limit: 5, windowMs: 10_000, name: 'broken' }),
    key: () => {
      throw new Error('auth service down');
    },
  })
  broken() {
    return { ok: true };
  }

  @Get('login')
  // Only failed logins count: 2 per minute, then an hour's ban.
  @RateLimit({
    algorithm: fixedWindow({ limit: 2, windowMs: 60_000, name: 'login', blockMs: 3_600_000 }),
    key: (ctx: ExecutionContext) => `login-${headerOf(ctx, 'x-run')}`,
    skipSuccessfulRequests: true,
  })
  login(@Headers('x-password') password: string | undefined) {
    if (password !== 'secret') throw new UnauthorizedException();
    return { ok: true };
  }

  @Get('tokens')
  // 1 permit up front, 3 more once the platform's response says it succeeded.
  @RateLimit({
    algorithm: tokenBucket({ capacity: 10, refillPerSecond: 0.001, name: 'tokens' }),
    key: (ctx: ExecutionContext) => `tokens-${headerOf(ctx, 'x-run')}`,
    permitsAfterResponse: (_ctx: ExecutionContext, res: unknown) =>
      (res as { statusCode?: number }).statusCode === 200 ? 3 : 0,
  })
  tokens() {
    return { ok: true };
  }

  @Get('slow')
  // One request in flight per run; the slot comes back when the response ends.
  @RateLimit({
    concurrency: concurrencyLimiter({ max: 1 }),
    key: (ctx: ExecutionContext) => `slow-${headerOf(ctx, 'x-run')}`,
  })
  async slow() {
    await new Promise((resolve) => setTimeout(resolve, 150));
    return { ok: true };
  }

  @Get('send')
  @SkipRateLimit()
  async sendCode() {
    return { result: await this.codes.send().catch((error: unknown) => (error as { code?: string }).code) };
  }
}

@Module({ imports: [SluiceModule.forRoot({ store })], controllers: [LimiterController], providers: [CodeService] })
class AppModule {}

/** Every scenario, on the Nest major `major` (checked against the @nestjs/core the test resolved). */
export function nestSuite(major: number): void {
  it(`runs on NestJS ${major}`, () => {
    expect(Number(nestCore.version.split('.')[0])).toBe(major);
  });

  const apps: INestApplication[] = [];
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((app) => app.close()));
  });

  async function start(platform: 'express' | 'fastify', module: object = AppModule): Promise<string> {
    const adapter = platform === 'express' ? new ExpressAdapter() : new FastifyAdapter();
    const app = await NestFactory.create(module, adapter, { logger: false });
    apps.push(app);
    await app.listen(0, '127.0.0.1');
    return (await app.getUrl()).replace('[::1]', '127.0.0.1');
  }

  describe.each(['express', 'fastify'] as const)(`@sluice/nestjs on NestJS ${major}, platform-%s`, (platform) => {
    it("a controller's @RateLimit keyed by user through ExecutionContext: exact headers, then a 429 through Nest's exception layer", async () => {
      const url = await start(platform);
      const user = `u-${platform}`;
      for (let i = 1; i <= 5; i++) {
        const r = await get(`${url}/limiter/count`, { 'x-user': user });
        expect(r.status).toBe(200);
        expect(r.headers.get('ratelimit')).toBe(`"ctl";r=${5 - i};t=7`);
        expect(r.headers.get('ratelimit-policy')).toBe('"ctl";q=5;w=10');
      }
      const denied = await get(`${url}/limiter/count`, { 'x-user': user });
      expect(denied.status).toBe(429);
      expect(denied.headers.get('retry-after')).toBe('7');
      expect(denied.headers.get('ratelimit')).toBe('"ctl";r=0;t=7');
      expect(denied.body).toEqual({ error: 'Too Many Requests', rule: 'ctl', limit: 5, retryAfterSeconds: 7 });
      expect((await get(`${url}/limiter/count`, { 'x-user': `${user}-other` })).status).toBe(200);
    });

    it("a handler's @RateLimit overrides its controller's; @SkipRateLimit exempts", async () => {
      const url = await start(platform);
      const run = { 'x-run': platform };
      const first = await get(`${url}/limiter/rate`, run);
      expect([first.status, first.headers.get('ratelimit')]).toEqual([200, '"rate";r=1;t=7']);
      await get(`${url}/limiter/rate`, run);
      expect((await get(`${url}/limiter/rate`, run)).status).toBe(429);
      for (let i = 0; i < 10; i++) {
        const r = await get(`${url}/limiter/health`);
        expect([r.status, r.headers.get('ratelimit')]).toEqual([200, null]);
      }
    });

    it('invalid permits are a 400 consuming nothing; a key function that throws reaches Nest as a 500', async () => {
      const url = await start(platform);
      const bad = await get(`${url}/limiter/permits`, { 'x-permits': '0.5', 'x-run': platform });
      expect(bad.status).toBe(400);
      expect(bad.body).toEqual({ error: 'Bad Request', message: "the request's rate-limit permits are invalid" });
      const ok = await get(`${url}/limiter/permits`, { 'x-permits': '5', 'x-run': platform });
      expect([ok.status, ok.headers.get('ratelimit')]).toEqual([200, '"permits";r=0;t=7']);
      expect((await get(`${url}/limiter/broken`)).status).toBe(500);
    });

    it('skipSuccessfulRequests with a ban: successes are free, the third failure is banned even with the right password', async () => {
      const url = await start(platform);
      const run = { 'x-run': `login-${platform}` };
      for (let i = 0; i < 4; i++)
        expect((await get(`${url}/limiter/login`, { ...run, 'x-password': 'secret' })).status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 20));
      for (let i = 0; i < 2; i++)
        expect((await get(`${url}/limiter/login`, { ...run, 'x-password': 'guess' })).status).toBe(401);
      const banned = await get(`${url}/limiter/login`, { ...run, 'x-password': 'guess' });
      expect([banned.status, banned.headers.get('retry-after')]).toEqual([429, '3600']);
      expect((await get(`${url}/limiter/login`, { ...run, 'x-password': 'secret' })).status).toBe(429);
    });

    it("permitsAfterResponse charges what the platform's response says, after it is sent", async () => {
      const url = await start(platform);
      const run = { 'x-run': `tokens-${platform}` };
      const remaining = [];
      for (let i = 0; i < 3; i++) {
        remaining.push((await get(`${url}/limiter/tokens`, run)).headers.get('ratelimit'));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      expect(remaining).toEqual(['"tokens";r=9;t=1000', '"tokens";r=5;t=5000', '"tokens";r=1;t=9000']);
    });

    it('concurrency on a route: one in flight, the other 429 (rule concurrency), the slot back once the response ends', async () => {
      const url = await start(platform);
      const run = { 'x-run': `slow-${platform}` };
      const replies = await Promise.all([get(`${url}/limiter/slow`, run), get(`${url}/limiter/slow`, run)]);
      expect(replies.map((r) => r.status).sort()).toEqual([200, 429]);
      expect(replies.find((r) => r.status === 429)?.body).toMatchObject({ rule: 'concurrency' });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await get(`${url}/limiter/slow`, run)).status).toBe(200);
    });

    it('concurrency: HEAD requests give their slot back (no body is sent), as GETs do', async () => {
      const url = await start(platform);
      const headers = { 'x-run': `head-${platform}` };
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const res = await fetch(`${url}/limiter/slow`, { method: 'HEAD', headers });
        await res.arrayBuffer();
        statuses.push(res.status);
      }
      statuses.push((await get(`${url}/limiter/slow`, headers)).status);
      expect(statuses).toEqual([200, 200, 200, 200]);
    });

    it('a sluice method decorator keyed by request works inside a Nest service (the request context)', async () => {
      const url = await start(platform);
      const client = platform === 'express' ? '203.0.113.1' : '203.0.113.2';
      const results = [];
      for (let i = 0; i < 3; i++) results.push((await get(`${url}/limiter/send`, { 'x-forwarded-for': client })).body);
      expect(results).toEqual([{ result: 'sent' }, { result: 'sent' }, { result: 'RATE_LIMITED' }]);
    });
  });

  describe('options checked when the class is defined', () => {
    it('@RateLimit without a limiter or rules, or with both, or with a bad option: a typed error naming it', () => {
      expect(() => RateLimit({})).toThrow(SluiceTypeError);
      expect(() => RateLimit({ limiter: sendLimiter, algorithm: fixedWindow({ limit: 1, windowMs: 1_000 }) })).toThrow(
        /not both/,
      );
      expect(() => RateLimit({ algorithm: fixedWindow({ limit: 1, windowMs: 1_000 }), permits: 0 })).toThrow(
        expect.objectContaining({ argument: 'permits' }),
      );
      expect(() =>
        SluiceModule.forRoot({ algorithm: fixedWindow({ limit: 1, windowMs: 1_000 }), headers: 'draft-7' as never }),
      ).toThrow(expect.objectContaining({ argument: 'headers' }));
    });
  });

  describe('start-up', () => {
    /** A module whose only limit comes from @RateLimit({ algorithm }) on the module's store. */
    function routeModule(moduleImport: object): object {
      @Controller('start')
      class StartController {
        @Get()
        @RateLimit({ algorithm: fixedWindow({ limit: 1, windowMs: 60_000 }), key: () => 'k' })
        get() {
          return { ok: true };
        }
      }
      @Module({ imports: [moduleImport as never], controllers: [StartController] })
      class StartModule {}
      return StartModule;
    }

    it('a Redis user who may not run scripts fails the application start, naming the permission', async () => {
      const server = await startTestRedis();
      const admin = new Redis(server.url);
      await admin.call('ACL', 'SETUSER', 'no-scripts', '>secret', ...aclWithout('+evalsha', '+eval'));
      const redis = new Redis(server.url, { username: 'no-scripts', password: 'secret' });
      try {
        // The limiters of @RateLimit({ algorithm }) bind at start-up, so the store's check runs before any request.
        const started = start('express', routeModule(SluiceModule.forRoot({ store: redisStore({ redis }) })));
        await expect(started).rejects.toMatchObject({ code: 'STORE_MISCONFIGURED' });
        await expect(started).rejects.toThrow(/'eval(sha)?' command/i);
      } finally {
        redis.disconnect();
        admin.disconnect();
        await server.stop();
      }
    });

    it('forRootAsync: options from a factory with injected providers (a connected client)', async () => {
      const server = await startTestRedis();
      const redis = new Redis(server.url);
      const REDIS = Symbol('redis');
      @Module({ providers: [{ provide: REDIS, useValue: redis }], exports: [REDIS] })
      class RedisModule {}
      try {
        const url = await start(
          'fastify',
          routeModule(
            SluiceModule.forRootAsync({
              imports: [RedisModule],
              inject: [REDIS],
              useFactory: async (client) => ({ store: redisStore({ redis: client as Redis }) }),
            }),
          ),
        );
        expect((await get(`${url}/start`)).status).toBe(200);
        expect((await get(`${url}/start`)).status).toBe(429);
        expect(() => SluiceModule.forRootAsync({} as never)).toThrow(SluiceTypeError);
      } finally {
        await Promise.all(apps.splice(0).map((app) => app.close()));
        redis.disconnect();
        await server.stop();
      }
    });
  });

  describe('Redis down behind the Nest guard', () => {
    let dead: Redis | undefined;
    afterAll(() => dead?.disconnect());
    const expected = { open: 200, closed: 429, local: 200 } as const;

    /** An app whose module store is a Redis nobody listens on. */
    function downModule(failMode: keyof typeof expected, redis: Redis): object {
      @Controller('down')
      class DownController {
        @Get()
        @RateLimit({ algorithm: fixedWindow({ limit: 5, windowMs: 60_000 }), key: () => 'k' })
        get() {
          return { ok: true };
        }
      }
      @Module({
        imports: [SluiceModule.forRoot({ store: redisStore({ redis, failMode, timeoutMs: 50 }) })],
        controllers: [DownController],
      })
      class DownModule {}
      return DownModule;
    }

    it.each(['express', 'fastify'] as const)(
      'platform-%s: each failMode answers as it says, within a bound only a hang breaks',
      async (platform) => {
        dead ??= new Redis({ host: '127.0.0.1', port: await freePort(), retryStrategy: () => 100 });
        dead.on('error', () => {});
        for (const failMode of ['open', 'closed', 'local'] as const) {
          const url = await start(platform, downModule(failMode, dead));
          const started = performance.now();
          const r = await get(`${url}/down`);
          const tookMs = performance.now() - started;
          expect([failMode, r.status]).toEqual([failMode, expected[failMode]]);
          expect(tookMs).toBeLessThan(2_000);
        }
      },
    );
  });
}
