/**
 * A limiter over a hybrid store of its own, for tests that make many: the one form (createLimiter over
 * leasedStore / dividedStore), with the store at hand and one close for both, as a service closes both at
 * shutdown.
 */
import { type Limiter, type Rules, type Store, createLimiter } from '@sluice/core';
import {
  type DividedStore,
  type DividedStoreOptions,
  type LeasedStore,
  type LeasedStoreOptions,
  dividedStore,
  leasedStore,
} from '@sluice/hybrid';
import type { CommonLimiterOptions } from '../../packages/core/src/engine/limiter-options.js';

/** The limiter's part of the options: its rules and the options createLimiter takes beside the store. */
export type LimiterPart = { rules: Rules } & Pick<CommonLimiterOptions, 'prefix' | 'maxKeyLength' | 'shadow'>;

/** A limiter and its own store: `close()` closes the limiter, then the store. */
export type OwnedLimiter<S> = Limiter & { readonly store: S };

function owned<S extends Store>(store: S, part: LimiterPart): OwnedLimiter<S> {
  const { rules, prefix, maxKeyLength, shadow } = part;
  let limiter: Limiter;
  try {
    limiter = createLimiter({
      rules,
      store,
      ...(prefix === undefined ? {} : { prefix }),
      ...(maxKeyLength === undefined ? {} : { maxKeyLength }),
      ...(shadow === undefined ? {} : { shadow }),
    });
  } catch (error) {
    void store.close();
    throw error;
  }
  const closeLimiter = limiter.close.bind(limiter);
  // limiter.store is `store` already: only its type is narrowed here.
  return Object.assign(limiter as Limiter & { readonly store: S }, {
    close: async () => {
      await closeLimiter();
      await store.close();
    },
  });
}

/** Splits test options into the limiter's part and the store's. */
function split<O extends object>(options: LimiterPart & O): [LimiterPart, O] {
  const { rules, prefix, maxKeyLength, shadow, ...store } = options;
  return [{ rules, prefix, maxKeyLength, shadow }, store as unknown as O];
}

/** createLimiter({ rules, store: leasedStore(options) }), closed together. */
export function leasedLimiterOn(options: LimiterPart & LeasedStoreOptions): OwnedLimiter<LeasedStore> {
  const [part, storeOptions] = split<LeasedStoreOptions>(options);
  return owned(leasedStore(storeOptions), part);
}

/** createLimiter({ rules, store: dividedStore(options) }), closed together. */
export function dividedLimiterOn(options: LimiterPart & DividedStoreOptions): OwnedLimiter<DividedStore> {
  const [part, storeOptions] = split<DividedStoreOptions>(options);
  return owned(dividedStore(storeOptions), part);
}
