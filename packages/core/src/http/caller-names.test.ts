import { describe, expect, it } from 'vitest';
import { SluiceTypeError } from '../errors.js';
import { fetchRateLimit } from '../fetch/index.js';
import { honoRateLimit } from '../hono/index.js';
import { koaRateLimit } from '../koa/index.js';
import { rateLimitHook } from './fastify.js';
import { rateLimit } from './middleware.js';

describe('adapter errors name the function called', () => {
  it.each([
    ['rateLimit', () => rateLimit(null as never)],
    ['rateLimitHook', () => rateLimitHook(null as never)],
    ['fetchRateLimit', () => fetchRateLimit(null as never)],
    ['honoRateLimit', () => honoRateLimit(null as never)],
    ['koaRateLimit', () => koaRateLimit(null as never)],
  ])('%s', (name, call) => {
    expect(call).toThrow(SluiceTypeError);
    expect(call).toThrow(new RegExp(`^${name} options`));
  });
});
