/** The Nest guard on GraphQL, WebSocket and microservice handlers, on NestJS 11 (test/nestjs/contexts-suite.ts). */
import { contextsSuite } from '../nestjs/contexts-suite.js';

contextsSuite(11);
