/**
 * What the README's snippets take as given, the way a reader's app has it: an Express app, a Fastify
 * instance, an ioredis client, a logger and a metrics sink, an OpenTelemetry MeterProvider, a user id, an accounts lookup, a
 * mail sender; and Express's `req.user`, as an
 * authentication middleware (Passport's types) declares it.
 */
import type { Express } from 'express';
import type { FastifyInstance } from 'fastify';
import type { MeterProvider } from '@opentelemetry/api';
import type { Redis } from 'ioredis';

declare global {
  const app: Express;
  const fastify: FastifyInstance;
  const redis: Redis;
  const log: { info(...args: unknown[]): void; warn(...args: unknown[]): void; error(...args: unknown[]): void };
  const metrics: { observe(...args: unknown[]): void };
  /** The app's OpenTelemetry MeterProvider (the SDK's). */
  const meterProvider: MeterProvider;
  const id: string;
  /** A customer's tier, as an accounts service would tell it. */
  const tierOf: (key: string) => Promise<string | undefined>;
  /** A mail job's work (the README's BullMQ snippet). */
  const sendMail: (data: { tenant: string }) => Promise<void>;
  // biome-ignore lint/suspicious/noRedeclare: declaration merging with Express's own namespace.
  namespace Express {
    interface User {
      id: string;
    }
    interface Request {
      user?: User;
    }
  }
}
