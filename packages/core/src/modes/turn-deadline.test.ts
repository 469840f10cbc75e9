import { describe, expect, it } from 'vitest';
import { DeadlineError, afterIo } from './deadline.js';
import { TurnDeadlines, type Waited } from './turn-deadline.js';

type Call = Waited & { readonly name: string };
/** A call of the test's: its name, and the turn it is waited under. */
const call = (name: string): Call => ({ name, deadlineTurn: undefined });
/** The next turn of the event loop, after its I/O. */
const nextTurn = () => new Promise<void>((resolve) => afterIo(resolve));

describe('TurnDeadlines', () => {
  it('the calls of one turn share a deadline: one answered in time leaves it, the others are told late once each', async () => {
    const told: Array<[string, unknown]> = [];
    let allTold: () => void = () => {};
    const bothLate = new Promise<void>((resolve) => {
      allTold = resolve;
    });
    const deadlines = new TurnDeadlines<Call>(20, 'a decision', (item, error) => {
      told.push([item.name, error]);
      if (told.length === 2) allTold();
    });
    const [a, b, c] = [call('a'), call('b'), call('c')];
    for (const item of [a, b, c]) deadlines.start(item);
    expect(b.deadlineTurn).toBe(a.deadlineTurn);
    expect(c.deadlineTurn).toBe(a.deadlineTurn);
    expect(deadlines.answered(b)).toBe(true);
    await bothLate;
    expect(told.map(([name]) => name)).toEqual(['a', 'c']);
    expect(told.every(([, error]) => error instanceof DeadlineError)).toBe(true);
    // Their answers come after all: late, never told twice; b's answer counted once.
    expect(deadlines.answered(a)).toBe(false);
    expect(deadlines.answered(c)).toBe(false);
    expect(deadlines.answered(b)).toBe(false);
    expect(told).toHaveLength(2);
  });

  it('a call started in a later turn has a turn of its own; a turn answered in full tells no one', async () => {
    const told: string[] = [];
    let toldOne: () => void = () => {};
    const late = new Promise<void>((resolve) => {
      toldOne = resolve;
    });
    const deadlines = new TurnDeadlines<Call>(20, 'a decision', (item) => {
      told.push(item.name);
      toldOne();
    });
    const [a, b] = [call('a'), call('b')];
    deadlines.start(a);
    const first = a.deadlineTurn;
    await nextTurn();
    deadlines.start(b);
    expect(b.deadlineTurn).not.toBe(first);
    expect(deadlines.answered(a)).toBe(true);
    // 'b' is left out: its turn's deadline tells it, and only it.
    await late;
    expect(told).toEqual(['b']);
  });
});
