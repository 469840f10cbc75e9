/**
 * The seed's verification codes: at most one SMS code per phone number per 60 s, written both ways the
 * seed's annotations allow: a count limit (1 per 60 s, fixed window) and a rate limit (1 per 60 s, smooth).
 */
import type { Clock } from '@sluice/core';
import { countLimit, smoothRateLimit } from '@sluice/core/decorators';

export interface SentCode {
  readonly phone: string;
  readonly code: string;
}

const byPhone = ({ args }: { readonly args: readonly unknown[] }) => `phone:${String(args[0])}`;

/** Sends codes; a real service would call an SMS gateway where this returns the code. */
export function createCodeService(clock?: Clock) {
  const time = clock === undefined ? {} : { clock };
  class VerificationCodes {
    readonly sent: SentCode[] = [];

    /** Count limit: 1 code per phone per 60 s window. */
    @countLimit({ limit: 1, windowMs: 60_000, key: byPhone, ...time })
    async sendByCount(phone: string): Promise<SentCode> {
      return this.#send(phone);
    }

    /**
     * Rate limit: codes spaced 60 s apart per phone (SmoothBursty). Guava-style, an idle phone saves up to
     * maxBurstSeconds (1 s here) of rate, so after a long pause the next code may come 59 s after the last.
     */
    @smoothRateLimit({ permitsPerSecond: 1 / 60, key: byPhone, ...time })
    async sendByRate(phone: string): Promise<SentCode> {
      return this.#send(phone);
    }

    #send(phone: string): SentCode {
      const sent = { phone, code: String(Math.floor(100_000 + Math.random() * 900_000)) };
      this.sent.push(sent);
      return sent;
    }
  }
  return new VerificationCodes();
}
