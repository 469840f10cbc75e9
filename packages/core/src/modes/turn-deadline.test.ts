import { describe, expect, it } from 'vitest';
import { DeadlineError, afterIo } from './deadline.js';
import { TurnDeadlines } from './turn-deadline.js';

/** The next turn of the event loop, after its I/O. */
const nextTurn = () => new Promise<void>((resolve) => afterIo(resolve));

describe('TurnDeadlines', () => {
  it('the calls of one turn share a deadline: one answered in time leaves it, the others are told late once each', async () => {
    const told: Array<[string, unknown]> = [];
    let allTold: () => void = () => {};
    const bothLate = new Promise<void>((resolve) => {
      allTold = resolve;
    });
    const deadlines = new TurnDeadlines<string>(20, 'a decision', (item, error) => {
      told.push([item, error]);
      if (told.length === 2) allTold();
    });
    const turn = deadlines.start('a');
    expect(deadlines.start('b')).toBe(turn);
    expect(deadlines.start('c')).toBe(turn);
    expect(deadlines.answered(turn, 'b')).toBe(true);
    await bothLate;
    expect(told.map(([item]) => item)).toEqual(['a', 'c']);
    expect(told.every(([, error]) => error instanceof DeadlineError)).toBe(true);
    // Their answers come after all: late, never told twice.
    expect(deadlines.answered(turn, 'a')).toBe(false);
    expect(deadlines.answered(turn, 'c')).toBe(false);
    expect(told).toHaveLength(2);
  });

  it('a call started in a later turn has a turn of its own; a turn answered in full tells no one', async () => {
    const told: string[] = [];
    let toldOne: () => void = () => {};
    const late = new Promise<void>((resolve) => {
      toldOne = resolve;
    });
    const deadlines = new TurnDeadlines<string>(20, 'a decision', (item) => {
      told.push(item);
      toldOne();
    });
    const first = deadlines.start('a');
    await nextTurn();
    const second = deadlines.start('b');
    expect(second).not.toBe(first);
    expect(deadlines.answered(first, 'a')).toBe(true);
    // 'b' is left out: its turn's deadline tells it, and only it.
    await late;
    expect(told).toEqual(['b']);
  });
});
