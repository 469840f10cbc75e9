/** The Nest guard on GraphQL, WebSocket and microservice handlers, on NestJS 12 (scenarios in contexts-suite.ts). */
import { contextsSuite } from './contexts-suite.js';

contextsSuite(12);
