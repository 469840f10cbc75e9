/**
 * The demo controller on NestJS 12 (platform-express), with @sluice/nestjs: `PORT=3000 tsx --tsconfig
 * tsconfig.json src/nestjs.ts` (experimentalDecorators, as Nest apps compile).
 */
import 'reflect-metadata';
import { Controller, Get, Module, Query } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { byRoute } from '@sluice/core/http';
import { RateLimit, SluiceModule } from '@sluice/nestjs';
import type { ExecutionContext } from '@nestjs/common';
import { demo, port, queryKey } from './serve.js';

const { limiters, announce } = demo('nestjs');

@Controller('limiter')
class LimiterController {
  @Get('count')
  @RateLimit({
    limiter: limiters.count,
    key: (ctx: ExecutionContext) => queryKey(ctx.switchToHttp().getRequest<{ url: string }>().url),
  })
  count(@Query('key') key?: string) {
    return { ok: true, key: key ?? null };
  }

  @Get('rate')
  @RateLimit({ limiter: limiters.rate, key: byRoute() })
  rate() {
    return { ok: true };
  }
}

@Module({ imports: [SluiceModule.forRoot()], controllers: [LimiterController] })
class AppModule {}

const app = await NestFactory.create(AppModule, { logger: false });
await app.listen(port, '127.0.0.1');
announce((await app.getUrl()).replace('[::1]', '127.0.0.1'), () => app.close());
