import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { DiscoveryService } from '@nestjs/core';
import { load } from './contexts.js';

/** Metadata Nest reads a class's guards and a gateway's mark from (by string, as contexts.ts reads its own). */
const GUARDS = '__guards__';
const GATEWAY = 'websockets:is_gateway';

interface Reflection {
  getMetadata(key: string, target: object): unknown;
  defineMetadata(key: string, value: unknown, target: object): void;
}

/** The applications whose gateways have their guard. */
const guarded = new WeakSet<DiscoveryService>();

/**
 * Puts `guard` first among the guards of every WebSocket gateway of the application. NestJS 11 runs no global
 * guard on a gateway's messages (12 does), so without this the module's limits would never apply to them;
 * the guard decides each call once, so where it also runs as the global guard its second run lets the call
 * through. Called while the application's providers are made: Nest reads a gateway's guards when it binds
 * the gateway, later, in `app.init()`. A guard of an earlier application on the same class is replaced.
 */
export function guardGateways(discovery: DiscoveryService, guard: CanActivate): void {
  const reflect = Reflect as unknown as Partial<Reflection>;
  if (typeof reflect.getMetadata !== 'function' || typeof reflect.defineMetadata !== 'function') return;
  // Once per application (its DiscoveryService): a second instance, made for a `@UseGuards(SluiceGuard)`, leaves
  // the gateways to the first.
  if (guarded.has(discovery)) return;
  guarded.add(discovery);
  for (const wrapper of discovery.getProviders()) {
    const type = wrapper.metatype as object | null | undefined;
    if (typeof type !== 'function' || reflect.getMetadata(GATEWAY, type) !== true) continue;
    const given = reflect.getMetadata(GUARDS, type);
    const others = (Array.isArray(given) ? given : []).filter(
      (g: unknown) => (g as object | undefined)?.constructor !== guard.constructor,
    );
    reflect.defineMetadata(GUARDS, [guard, ...others], type);
  }
}

/** A `ws` socket as Nest 12's exception filter tells one from a Socket.IO socket: a numeric readyState, a send. */
interface NativeSocket {
  readonly readyState: number;
  send(data: string): void;
}

function isNativeSocket(client: unknown): client is NativeSocket {
  const c = client as Partial<NativeSocket> | undefined;
  return typeof c?.readyState === 'number' && typeof c.send === 'function';
}

/** Whether the installed @nestjs/websockets sends a gateway's exception to a `ws` client (12 does, 11 only emits it locally). */
let frameworkSends: Promise<boolean> | undefined;

/**
 * Sends what the guard refused a gateway message with to a `ws` client, as NestJS 12's exception filter does
 * (`{ event: 'exception', data }`), where the installed Nest would not: NestJS 11's filter calls the socket's
 * `emit`, which on a `ws` socket is a local event the client never hears. Socket.IO clients and NestJS 12
 * are answered by Nest itself.
 */
export async function sendRefusalToWsClient(context: ExecutionContext, error: unknown): Promise<void> {
  const client = context.switchToWs().getClient<unknown>();
  if (!isNativeSocket(client) || client.readyState !== 1) return;
  frameworkSends ??= load('@nestjs/websockets').then((ws) => {
    const filter = ws.BaseWsExceptionFilter as { prototype?: { emitMessage?: unknown } } | undefined;
    return typeof filter?.prototype?.emitMessage === 'function';
  });
  if (await frameworkSends) return;
  const { WsException } = (await load('@nestjs/websockets')) as { WsException: abstract new () => Error };
  let data: unknown = { status: 'error', message: 'Internal server error' };
  if (error instanceof WsException) {
    const given = (error as unknown as { getError(): unknown }).getError();
    data = typeof given === 'object' && given !== null ? given : { status: 'error', message: given };
  }
  client.send(JSON.stringify({ event: 'exception', data }));
}
