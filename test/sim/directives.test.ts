// The directive parser and the delta splitter, without HTTP.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseDirective } from '../../src/sim/directives.ts';
import { plan, splitDeltas } from '../../src/sim/script.ts';

test('a SIM line is found among other lines and removed from the rest', () => {
  const p = parseDirective('Please answer.\nSIM {"reply":"hi","deltas":2}\nThanks');
  assert.deepEqual(p.directive, { reply: 'hi', deltas: 2 });
  assert.equal(p.error, null);
  assert.equal(p.rest, 'Please answer.\n\nThanks');
  assert.deepEqual(parseDirective('no directive here').directive, {});
  assert.deepEqual(parseDirective('query words SIM {"searchStatus":500}').directive, { searchStatus: 500 });
});

test('bad directives become a visible error, not a silent default', () => {
  assert.match(parseDirective('SIM {"reply": }').error!, /not valid JSON/);
  assert.match(parseDirective('SIM {"replyy":"x"}').error!, /unknown field 'replyy'/);
  assert.match(parseDirective('SIM {"deltas":0}').error!, /positive integer/);
  assert.match(parseDirective('SIM {"failMode":"boom"}').error!, /failMode/);
  const p = plan({ system: [], turns: [{ kind: 'user', text: 'SIM {"status":"x"}', parts: ['string'], attachments: [] }] });
  assert.match(p.deltas.text, /SIM directive error/);
});

test('splitDeltas: word chunks, exact counts, padding and code points', () => {
  const w = splitDeltas('The quick brown fox jumps over a dog', undefined, false);
  assert.equal(w.pieces.join(''), 'The quick brown fox jumps over a dog');
  assert.ok(w.count >= 4 && w.count <= 8);
  const exact = splitDeltas('abcdefghij', 3, false);
  assert.deepEqual(exact.pieces, ['abc', 'def', 'ghij']);
  const padded = splitDeltas('ok', 5, false);
  assert.equal(padded.count, 5);
  assert.ok(padded.pieces.every((x) => x.length > 0));
  assert.equal(padded.text, padded.pieces.join(''));
  assert.ok(padded.text.startsWith('ok ok'));
  const emoji = splitDeltas('😀😀😀', 3, false);
  assert.deepEqual(emoji.pieces, ['😀', '😀', '😀']);
  const stamped = splitDeltas('x', 200, true);
  assert.equal(stamped.count, 200);
});

test('tool rounds count result runs after the last user turn', () => {
  const user = { kind: 'user' as const, text: 'SIM {"tools":[{"name":"t","args":{}}],"toolRounds":2}', parts: [], attachments: [] };
  assert.ok(plan({ system: [], turns: [user] }).calls);
  const oneRound = [user, { kind: 'calls' as const, callIds: ['a', 'b'] }, { kind: 'result' as const, callId: 'a', output: '1' }, { kind: 'result' as const, callId: 'b', output: '2' }];
  assert.ok(plan({ system: [], turns: oneRound }).calls);
  const twoRounds = [...oneRound, { kind: 'calls' as const, callIds: ['c'] }, { kind: 'result' as const, callId: 'c', output: 'last output' }];
  const p = plan({ system: [], turns: twoRounds });
  assert.equal(p.calls, null);
  assert.equal(p.deltas.text, 'Tool results: last output');
});

test('replyChars: a short reply repeated to exactly that many characters, in the scripted deltas', () => {
  const ask = (sim: string) => plan({ system: [], turns: [{ kind: 'user', text: `x\nSIM ${sim}`, parts: ['string'], attachments: [] }] });
  const long = ask('{"reply":"tide pool","replyChars":1000000,"deltas":400}');
  assert.equal(long.deltas.text.length, 1_000_000);
  assert.equal(long.deltas.count, 400);
  assert.equal(long.deltas.pieces.join(''), long.deltas.text);
  assert.ok(long.deltas.text.startsWith('tide pool tide pool '));
  assert.equal(ask('{"reply":"abcdef","replyChars":3}').deltas.text, 'abc');
  // A cut between the halves of a surrogate pair would leave a lone half: the cut ends on a plain character.
  assert.equal(ask('{"reply":"a😀","replyChars":2}').deltas.text, 'a.');
  assert.match(parseDirective('SIM {"replyChars":0}').error!, /'replyChars' must be a positive integer/);
});
