/** @sluice/nestjs on NestJS 12 (the scenarios are in nest-suite.ts; test/nest11 runs them on NestJS 11). */
import { nestSuite } from './nest-suite.js';

nestSuite(12);
