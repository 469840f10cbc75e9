import { type Server, type Socket, createConnection, createServer } from 'node:net';

/**
 * A TCP proxy in front of Redis for fault injection: forwards bytes both ways, optionally late by a fixed
 * latency, and can cut every connection it carries.
 */
export class FaultProxy {
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #latencyMs = 0;
  #hold: { pattern: RegExp; held: () => void } | undefined;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<FaultProxy> {
    const server = createServer();
    const proxy = new FaultProxy(server);
    server.on('connection', (client) => proxy.#carry(client, targetHost, targetPort));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return proxy;
  }

  get port(): number {
    const address = this.#server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy not listening');
    return address.port;
  }

  /** Every chunk from now on arrives this much later (in order: equal delays keep timer order). */
  setLatency(ms: number): void {
    this.#latencyMs = ms;
  }

  /**
   * From now on Redis's replies whose bytes match `pattern` never reach the client (the command stays
   * unanswered); resolves when the first one is held back.
   */
  holdReplies(pattern: RegExp): Promise<void> {
    return new Promise((held) => {
      this.#hold = { pattern, held };
    });
  }

  /** Redis's replies reach the client again (those held back are lost). */
  passReplies(): void {
    this.#hold = undefined;
  }

  /** Cuts every connection now (clients see ECONNRESET or close and reconnect). */
  dropConnections(): void {
    for (const socket of this.#sockets) socket.destroy();
    this.#sockets.clear();
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #carry(client: Socket, host: string, port: number): void {
    const upstream = createConnection({ host, port });
    for (const s of [client, upstream]) {
      this.#sockets.add(s);
      s.on('error', () => {});
      s.on('close', () => {
        this.#sockets.delete(s);
        client.destroy();
        upstream.destroy();
      });
    }
    const forward = (from: Socket, to: Socket) => {
      // Never before an earlier chunk: when the latency drops, later bytes wait for the ones still delayed.
      let lastAt = 0;
      from.on('data', (chunk: Buffer) => {
        if (from === upstream && this.#hold?.pattern.test(chunk.toString('latin1'))) {
          this.#hold.held();
          return;
        }
        const now = performance.now();
        const at = Math.max(now + this.#latencyMs, lastAt);
        lastAt = at;
        if (at <= now) to.write(chunk);
        else setTimeout(() => to.destroyed || to.write(chunk), at - now);
      });
    };
    forward(client, upstream);
    forward(upstream, client);
  }
}
