/** @sluice/nestjs on NestJS 11: the NestJS 12 suite's scenarios, with @nestjs/* resolved to this package's Nest 11. */
import { nestSuite } from '../nestjs/nest-suite.js';

nestSuite(11);
