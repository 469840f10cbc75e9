import type { HttpRequestLike } from '@sluice/core/http';
import { type CallHandler, type ExecutionContext, Injectable, type NestInterceptor } from '@nestjs/common';
import { Observable } from 'rxjs';
import { nodeRequestView, runInRequestContext } from '@sluice/core/internal';

/**
 * Runs each HTTP handler inside a sluice request context (the ExecutionContext is its request), so sluice's
 * method decorators keyed by request (`key: byIp()`, `key: byUser(...)`) work in the services it calls.
 * @example
 * ```ts
 * // installed by SluiceModule.forRoot; with the module alone:
 * @Module({ providers: [{ provide: APP_INTERCEPTOR, useClass: SluiceContextInterceptor }] })
 * ```
 */
@Injectable()
export class SluiceContextInterceptor implements NestInterceptor {
  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    if (context.getType() !== 'http') return next.handle();
    const view = nodeRequestView(context.switchToHttp().getRequest<HttpRequestLike>());
    // The handler runs when the stream is subscribed to: subscribe inside the context.
    return new Observable((subscriber) =>
      runInRequestContext({ request: context, view }, () => next.handle().subscribe(subscriber)),
    );
  }
}
