import { SluiceError } from '../foundation/errors.js';
import { warnOnce } from '../foundation/warnings.js';

/** `bytes` random bytes as hex (Web Crypto: core runs where node:crypto does not). */
function randomHex(bytes: number): string {
  const random = globalThis.crypto.getRandomValues(new Uint8Array(bytes));
  return Array.from(random, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

/**
 * A node's id in its limiters' fleets, and what tells a second live process given the same id (the engine's
 * heartbeat; Redis's node_seen.lua): per fleet (a sorted set of node id -> last seen), the score this node's last
 * answered heartbeat wrote. The heartbeat passes it back; when another process wrote under the id since, the script
 * writes nothing and this node takes an id of its own (the given id and a random suffix), says so once
 * (SLUICE_NODE_ID_REUSED) and reports a SluiceError 'NODE_ID_REUSED' naming both ids. The process that kept the id
 * is never told: it is the only one left under it.
 * @example
 * const identity = new NodeIdentity('pod-7', (e) => store.emit('store-error', e))
 * identity.lastSeen(key) // '' at first; pass it to the heartbeat, then identity.heard(key, reply.seenAt, reply.reused)
 */
export class NodeIdentity {
  readonly #given: string;
  readonly #onReused: (error: SluiceError) => void;
  #id: string;
  readonly #seen = new Map<string, string>();

  constructor(given: string, onReused: (error: SluiceError) => void) {
    this.#given = given;
    this.#id = given;
    this.#onReused = onReused;
  }

  /** The id this node goes by now: the one given, until another live process was found under it. */
  get id(): string {
    return this.#id;
  }

  /** The score this node's last answered heartbeat wrote to `fleet`, or '' when unknown. */
  lastSeen(fleet: string): string {
    return this.#seen.get(fleet) ?? '';
  }

  /**
   * A heartbeat to `fleet` under `id` was answered: recorded at `seenAt`, or `reused` (another live process
   * holds the id: nothing was written). Returns true when this node changed its id (beat again soon).
   */
  heard(fleet: string, id: string, seenAt: string, reused: boolean): boolean {
    if (id !== this.#id) return false; // answered under an id this node has left since
    if (!reused) {
      this.#seen.set(fleet, seenAt);
      return false;
    }
    const before = this.#id;
    // 100 characters at most, as the nodeId option: the suffix is kept whole.
    this.#id = `${this.#given.slice(0, 87)}.${randomHex(6)}`;
    this.#seen.clear();
    const message =
      `nodeId ${JSON.stringify(before)} is used by another live process (seen in ${fleet}); ` +
      `this one goes on as ${JSON.stringify(this.#id)}`;
    warnOnce('SLUICE_NODE_ID_REUSED', message);
    this.#onReused(new SluiceError('NODE_ID_REUSED', message));
    return true;
  }

  /** A heartbeat to `fleet` went unanswered, or the node left it: what it wrote there is no longer known. */
  forget(fleet: string): void {
    this.#seen.delete(fleet);
  }
}
