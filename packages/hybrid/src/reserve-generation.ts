import type { Algorithm } from '@sluice/core';
import { KeyCarrier, type LiveRule, type EngineHealth } from '@sluice/core/internal';
import type { DivideContext } from './divided-context.js';
import { Reserve, reserveStateName } from './reserve.js';

/** What a divided limiter gives each generation of its reserve. */
export interface ReserveOwner {
  readonly prefix: string;
  /** The configuration version the limiter decides under. */
  version(): number;
  /** Reads the stored configuration and decides under it (a carrier that found its generation stale waits for it). */
  refresh(): Promise<void>;
  /** A draw found its slot at a newer configuration: the limiter reads it. */
  heard(): void;
  /** Whether the reserve's Redis answers (undefined: no reserve). */
  readonly health: EngineHealth | undefined;
}

/**
 * The reserve of `entry`'s generation, at `fraction` of the limit: while its change's carry window is
 * open, a key's first draw carries the key's reserve from the generations before (its states are the rule
 * scaled to the reserve's fraction, as they were written).
 */
export function generationReserve(ctx: DivideContext, owner: ReserveOwner, entry: LiveRule, fraction: number): Reserve {
  const { o, clock } = ctx;
  const rule = entry.rule;
  let carrier: KeyCarrier | undefined;
  if (entry.from.length > 0) {
    const scaled = (r: Algorithm) => r.share(Math.max(fraction, 1 / r.burst));
    carrier = new KeyCarrier({
      engine: ctx.engine,
      prefix: owner.prefix,
      timeoutMs: o.timeoutMs,
      maxKeys: o.maxKeys,
      decisionClock: ctx.decisionClock,
      localClock: clock,
      onStale: async () => {
        await owner.refresh();
        return true;
      },
    });
    carrier.adopt({
      version: owner.version(),
      rules: [
        {
          rule: scaled(rule),
          state: reserveStateName(entry.state),
          from: entry.from.map((link) => ({ ...link, rule: scaled(link.rule), state: reserveStateName(link.state) })),
        },
      ],
      overrides: new Map(),
      returning: new Map(),
    });
  }
  return new Reserve(
    {
      engine: ctx.engine,
      host: ctx.host,
      identity: ctx.identity,
      decisionClock: ctx.decisionClock,
      clock,
      timeoutMs: o.timeoutMs,
      liveMs: 3 * o.heartbeatMs,
      pauseMs: o.heartbeatMs,
      maxKeys: o.maxKeys,
      failed: (error, stateKey) => owner.health?.reportFailure(error, stateKey),
      answered: () => owner.health?.reportSuccess(),
      stale: () => owner.heard(),
    },
    rule,
    fraction,
    owner.prefix,
    { state: entry.state, version: () => owner.version(), carrier },
  );
}
