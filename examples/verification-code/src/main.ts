/**
 * A tiny node:http service around the decorated code sender:
 *   POST /codes?phone=5550100             (count limit)
 *   POST /codes?phone=5550100&mode=rate   (rate limit)
 * 202 with the code (a demo: a real service would text it), or 429 with Retry-After.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RateLimitedError } from '@sluice/core';
import { createCodeService } from './codes.js';

const codes = createCodeService();
const PHONE = /^\+?[0-9]{4,15}$/;

const server = createServer((req, res) => {
  const url = new URL(req.url ?? '/', 'http://localhost');
  const reply = (status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'Content-Type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  if (req.method !== 'POST' || url.pathname !== '/codes') return reply(404, { error: 'POST /codes?phone=...' });
  const phone = url.searchParams.get('phone') ?? '';
  if (!PHONE.test(phone)) return reply(400, { error: 'phone must be 4-15 digits' });
  const send = url.searchParams.get('mode') === 'rate' ? codes.sendByRate(phone) : codes.sendByCount(phone);
  send.then(
    (sent) => reply(202, sent),
    (error: unknown) => {
      if (!(error instanceof RateLimitedError)) return reply(500, { error: 'could not send' });
      const seconds = Math.ceil(error.decision.retryAfterMs / 1000);
      reply(
        429,
        { error: 'one code per phone per 60 s', retryAfterSeconds: seconds },
        { 'Retry-After': String(seconds) },
      );
    },
  );
});

server.listen(Number(process.env.PORT ?? 3001), '127.0.0.1', () => {
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  console.log(`sluice verification-code example listening on ${url}`);
  console.log(`  curl -i -X POST '${url}/codes?phone=5550100'            # count limit: 1 per 60 s`);
  console.log(`  curl -i -X POST '${url}/codes?phone=5550100&mode=rate'  # rate limit: 1 per 60 s`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => server.close(() => process.exit(0)));
