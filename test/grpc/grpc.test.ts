/**
 * @sluice/grpc with a real @grpc/grpc-js server and client over loopback: unary and server-streaming calls
 * limited per metadata key, RESOURCE_EXHAUSTED with its trailers, a stream cancelled early counted once, bad
 * metadata and a key function that throws answered by status (nothing unhandled), and the client interceptor
 * waiting out a refusal.
 */
import {
  type Client,
  Metadata,
  Server,
  ServerCredentials,
  type ServerWritableStream,
  type ServiceDefinition,
  type ServiceError,
  credentials,
  makeGenericClientConstructor,
  status,
} from '@grpc/grpc-js';
import { ManualClock, createLimiter, fixedWindow, memoryStore, throttle, tokenBucket } from '@sluice/core';
import { type GrpcRateLimitOptions, byMetadata, grpcRateLimit, grpcRetryOnLimit } from '@sluice/grpc';
import { byIp } from '@sluice/core/http';
import { describe, expect, it } from 'vitest';
import { jsonMethod } from '../../examples/beyond-http/src/json-service.js';
import { unhandledDuring } from '../harness/unhandled.js';
import { closePeersAfterEach } from './peers.js';

/** A greeter with a unary method and a server-streaming one, serialised as JSON (no .proto needed). */
const greeter: ServiceDefinition = {
  hello: jsonMethod('/test.Greeter/Hello'),
  count: jsonMethod('/test.Greeter/Count', true),
};
const GreeterClient = makeGenericClientConstructor(greeter, 'Greeter');

const { servers, clients } = closePeersAfterEach();

let handled = 0;
/** A server with the interceptor of `options`, listening on a free loopback port. */
async function serve(options: GrpcRateLimitOptions) {
  const server = new Server({ interceptors: [grpcRateLimit(options)] });
  server.addService(greeter, {
    hello: (call: { request: { name: string } }, done: (e: null, r: unknown) => void) => {
      handled++;
      done(null, { greeting: `hello ${call.request.name}` });
    },
    count: (call: ServerWritableStream<{ to: number }, { n: number }>) => {
      handled++;
      let n = 0;
      const timer = setInterval(() => {
        if (call.cancelled || n >= call.request.to) {
          clearInterval(timer);
          if (!call.cancelled) call.end();
          return;
        }
        call.write({ n: ++n });
      }, 5);
    },
  });
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
  );
  servers.push(server);
  return `127.0.0.1:${port}`;
}

type Answer = { value?: { greeting: string }; error?: ServiceError; initial?: Metadata };
function hello(client: Client, name: string, metadata = new Metadata()): Promise<Answer> {
  return new Promise((resolve) => {
    const answer: Answer = {};
    const call = (
      client as unknown as {
        hello: (
          r: unknown,
          m: Metadata,
          cb: (e: ServiceError | null, v?: { greeting: string }) => void,
        ) => { on(event: 'metadata', l: (m: Metadata) => void): void };
      }
    ).hello({ name }, metadata, (error, value) => {
      if (error) answer.error = error;
      else if (value !== undefined) answer.value = value;
      resolve(answer);
    });
    call.on('metadata', (m) => {
      answer.initial = m;
    });
  });
}
const tenant = (id: string) => {
  const m = new Metadata();
  m.set('x-tenant', id);
  return m;
};
const connect = (address: string, interceptors: unknown[] = []) => {
  const client = new GreeterClient(address, credentials.createInsecure(), { interceptors } as never);
  clients.push(client);
  return client;
};

describe('grpcRateLimit (server interceptor)', () => {
  it('unary: a tenant’s third call a minute is RESOURCE_EXHAUSTED with retry-after, pushback and RateLimit trailers; others go on', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60_000, name: 'calls' }) });
    const client = connect(await serve({ limiter, key: byMetadata('x-tenant') }));
    const before = handled;
    const answers = [await hello(client, 'a', tenant('a')), await hello(client, 'b', tenant('a'))];
    expect(answers.map((a) => a.value?.greeting)).toEqual(['hello a', 'hello b']);
    expect(answers[0]?.initial?.get('ratelimit')[0]).toMatch(/^"calls";r=1;t=\d+$/);
    const refused = await hello(client, 'c', tenant('a'));
    expect(refused.error?.code).toBe(status.RESOURCE_EXHAUSTED);
    expect(refused.error?.details).toMatch(/Too Many Requests: rule calls \(limit 2\), retry after \d+ s/);
    const trailers = refused.error?.metadata as Metadata;
    const retryAfter = Number(trailers.get('retry-after')[0]);
    expect(retryAfter).toBeGreaterThan(0);
    expect(Number(trailers.get('grpc-retry-pushback-ms')[0])).toBeLessThanOrEqual(retryAfter * 1000);
    expect(trailers.get('ratelimit')[0]).toBe(`"calls";r=0;t=${retryAfter}`);
    // The handler never ran for the refused call; another tenant is not held.
    expect(handled - before).toBe(2);
    expect((await hello(client, 'd', tenant('b'))).value?.greeting).toBe('hello d');
    await limiter.close();
  });

  it('server streaming: limited like unary, and a stream the client cancels early is counted once', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 3, windowMs: 60_000, name: 'streams' }) });
    const client = connect(await serve({ limiter, key: byMetadata('x-tenant'), methods: ['/test.Greeter/Count'] }));
    const stream = (to: number, cancelAfter?: number) =>
      new Promise<{ got: number[]; code: number }>((resolve) => {
        const got: number[] = [];
        const call = (
          client as unknown as {
            count: (r: unknown, m: Metadata) => NodeJS.EventEmitter & { cancel(): void };
          }
        ).count({ to }, tenant('s'));
        call.on('data', (d: { n: number }) => {
          got.push(d.n);
          if (got.length === cancelAfter) call.cancel();
        });
        call.on('error', (e: ServiceError) => resolve({ got, code: e.code }));
        call.on('end', () => resolve({ got, code: status.OK }));
      });
    expect(await stream(3)).toEqual({ got: [1, 2, 3], code: status.OK });
    expect(await stream(50, 1)).toEqual({ got: [1], code: status.CANCELLED });
    // Two streams so far: one permit each, the cancelled one too, and only once.
    expect((await limiter.peek('x-tenant:s')).remaining).toBe(1);
    expect((await stream(2)).code).toBe(status.OK);
    expect(await stream(2)).toEqual({ got: [], code: status.RESOURCE_EXHAUSTED });
    // Hello is not among `methods`: never limited.
    for (let i = 0; i < 5; i++) expect((await hello(client, 'x', tenant('s'))).value).toBeDefined();
    await limiter.close();
  });

  it('bad metadata: missing (keyed by the peer, or refused with onMissingKey reject), too long (INVALID_ARGUMENT); nothing taken', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 60_000 }) });
    const invalid: Error[] = [];
    const byPeer = connect(
      await serve({
        limiter,
        key: byMetadata('x-tenant', { maxKeyLength: 64 }),
        onInvalidInput: (error) => invalid.push(error),
      }),
    );
    expect((await hello(byPeer, 'no tenant')).value?.greeting).toBe('hello no tenant');
    // Keyed by the peer, as byIp keys an HTTP request.
    expect((await limiter.peek('ip:127.0.0.1')).remaining).toBe(4);
    const long = await hello(byPeer, 'long', tenant('t'.repeat(65)));
    // The client is told its call has no valid key; the typed error, naming the entry, goes to the developer.
    expect(long.error?.code).toBe(status.INVALID_ARGUMENT);
    expect(long.error?.details).toMatch(/no valid rate-limit key/);
    expect(invalid.map((e) => e.message)).toEqual([
      'metadata x-tenant is 65 characters, more than the 64 a key may take',
    ]);
    const strict = connect(await serve({ limiter, key: byMetadata('x-tenant'), onMissingKey: 'reject' }));
    expect((await hello(strict, 'no tenant')).error?.code).toBe(status.INVALID_ARGUMENT);
    await limiter.close();
  });

  /**
   * A proxy of ours in front of the server, as Envoy's request_headers_to_add appends: each call forwarded
   * with `name: value` added after whatever the client sent (a real grpc-js server and client in between).
   */
  async function appendingProxy(backend: string, name: string, value: string) {
    const upstream = connect(backend);
    const proxy = new Server();
    proxy.addService(greeter, {
      hello: (
        call: { request: { name: string }; metadata: Metadata },
        done: (e: ServiceError | null, r?: unknown) => void,
      ) => {
        const forwarded = call.metadata.clone();
        forwarded.add(name, value);
        hello(upstream, call.request.name, forwarded).then((a) => done(a.error ?? null, a.value));
      },
      count: () => undefined,
    });
    const port = await new Promise<number>((resolve, reject) =>
      proxy.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e ? reject(e) : resolve(p))),
    );
    servers.push(proxy);
    return `127.0.0.1:${port}`;
  }

  it('an entry given several times: the value the proxy appended is the key, not the one the client sent first', async () => {
    const limiter = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60_000, name: 'calls' }) });
    const client = connect(
      await appendingProxy(await serve({ limiter, key: byMetadata('x-tenant') }), 'x-tenant', 'acme'),
    );
    const codes = [];
    // Each call forges a new tenant before the proxy's: all ten are acme's, two a minute.
    for (let i = 0; i < 10; i++) codes.push((await hello(client, `${i}`, tenant(`forged-${i}`))).error?.code ?? 'ok');
    expect(codes).toEqual(['ok', 'ok', ...Array(8).fill(status.RESOURCE_EXHAUSTED)]);
    expect((await limiter.peek('x-tenant:acme')).remaining).toBe(0);
    expect((await limiter.peek('x-tenant:forged-0')).remaining).toBe(2);
    // byIp behind one proxy reads x-forwarded-for from the right across repeated entries alike.
    const byAddress = createLimiter({ rules: fixedWindow({ limit: 2, windowMs: 60_000, name: 'calls' }) });
    const viaProxy = connect(
      await appendingProxy(
        await serve({ limiter: byAddress, key: byIp({ trustProxy: 1 }) }),
        'x-forwarded-for',
        '198.51.100.7',
      ),
    );
    const forged = new Metadata();
    forged.add('x-forwarded-for', '203.0.113.9');
    for (let i = 0; i < 3; i++) await hello(viaProxy, `${i}`, forged.clone());
    expect((await byAddress.peek('ip:198.51.100.7')).remaining).toBe(0);
    expect((await byAddress.peek('ip:203.0.113.9')).remaining).toBe(2);
    expect(() => byMetadata('x-tenant', { maxLenght: 3 } as never)).toThrow(
      /byMetadata options have no option "maxLenght"/,
    );
    expect(() => byMetadata('x-tenant', { maxKeyLength: 0 })).toThrow(/maxKeyLength must be an integer >= 1/);
    expect(() => byMetadata('' as never)).toThrow(/byMetadata needs a metadata entry's name/);
    await Promise.all([limiter.close(), byAddress.close()]);
  });

  it('a key function that throws: INTERNAL with its message, the handler does not run, nothing unhandled', async () => {
    const unhandled = await unhandledDuring(async () => {
      const limiter = createLimiter({ rules: fixedWindow({ limit: 5, windowMs: 60_000 }) });
      const client = connect(
        await serve({
          limiter,
          key: () => {
            throw new Error('no tenant table');
          },
        }),
      );
      const before = handled;
      const answer = await hello(client, 'x', tenant('a'));
      expect(answer.error?.code).toBe(status.INTERNAL);
      expect(answer.error?.details).toBe('sluice: no tenant table');
      expect(handled).toBe(before);
      await limiter.close();
    });
    expect(unhandled).toEqual([]);
    expect(() => grpcRateLimit({ limiter: {} as never })).toThrow(/grpcRateLimit: limiter must be a sluice Limiter/);
    expect(() =>
      grpcRateLimit({ limiter: createLimiter({ rules: fixedWindow({ limit: 1, windowMs: 1 }) }), methods: 3 as never }),
    ).toThrow(/methods must be/);
  });
});

describe('grpcRetryOnLimit (client interceptor)', () => {
  it('waits out the pushback and sends the call again; pauses the throttle for the same time', async () => {
    // One call, then one every 1.5 s: the second call, made at once, is refused for about 1.5 s.
    const limiter = createLimiter({ rules: tokenBucket({ capacity: 1, refillPerSecond: 1 / 1.5, name: 'tight' }) });
    const address = await serve({ limiter, key: () => 'all' });
    const clock = new ManualClock(0);
    const outgoing = throttle({
      limiter: createLimiter({ rules: fixedWindow({ limit: 100, windowMs: 1_000 }), store: memoryStore({ clock }) }),
    });
    const paused: number[] = [];
    const pause = outgoing.pause.bind(outgoing);
    outgoing.pause = async (ms: number, key?: string) => {
      paused.push(ms);
      return pause(ms, key);
    };
    const client = connect(address, [grpcRetryOnLimit({ throttle: outgoing })]);
    expect((await hello(client, 'first')).value?.greeting).toBe('hello first');
    const started = performance.now();
    const second = await hello(client, 'second');
    expect(second.value?.greeting).toBe('hello second');
    // It waited what the server said, and the throttle was paused for it.
    expect(paused).toHaveLength(1);
    expect(performance.now() - started).toBeGreaterThanOrEqual((paused[0] as number) - 5);
    // A client that takes no wait passes the refusal on at once.
    const impatient = connect(address, [grpcRetryOnLimit({ maxRetries: 0 })]);
    await hello(impatient, 'use it up');
    expect((await hello(impatient, 'now')).error?.code).toBe(status.RESOURCE_EXHAUSTED);
    await outgoing.close();
    await limiter.close();
  });
});
