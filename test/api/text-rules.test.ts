// The text rules under the input check and the store: sliceUnits never splits a pair, jsonProblem
// names the first bad field at any depth without recursion, and the store repairs upstream text
// (model output, fetched pages) that carries NUL or a lone surrogate instead of failing the write.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { jsonProblem } from '../../src/http/json-check.ts';
import { cleanText, toJson } from '../../src/store/values.ts';
import { sliceUnits, textProblem } from '../../src/base/text.ts';

describe('text rules', () => {
  it('sliceUnits backs off one unit rather than cut inside a surrogate pair', () => {
    assert.equal(sliceUnits('ab😀', 3), 'ab');
    assert.equal(sliceUnits('ab😀', 4), 'ab😀');
    assert.equal(sliceUnits('abc', 2), 'ab');
    assert.equal(sliceUnits('😀', 0), '');
    for (let n = 0; n < 12; n++) assert.ok(sliceUnits('😀a😀😀b😀', n).isWellFormed(), `cut at ${n}`);
  });

  it('textProblem: NUL and lone surrogates of both halves, nothing else', () => {
    assert.match(textProblem('a\u0000')!, /U\+0000/);
    assert.match(textProblem('\ud800')!, /lone UTF-16 surrogate/);
    assert.match(textProblem('x\udc00y')!, /lone UTF-16 surrogate/);
    assert.equal(textProblem('\udbff\udfff\u0001\uffff'), null);
  });

  it('jsonProblem walks arrays and keys, names the path, and stops at the depth limit without recursing', () => {
    assert.equal(jsonProblem({ a: [1, 'x', { b: null }] }), null);
    assert.equal(jsonProblem({ a: [1, { 'odd key': ['\u0000'] }] }), 'a[1]["odd key"][0]: contains U+0000 (NUL), which cannot be stored');
    assert.equal(jsonProblem({ m: { ['\ud800']: 1 } }), 'm["\\ud800"]: key contains a lone UTF-16 surrogate (not valid Unicode)');
    let deep: unknown = 1;
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    assert.equal(jsonProblem({ x: deep }, 3), 'x[0][0]: nested deeper than the 3-level limit');
    assert.match(jsonProblem(deep)!, /^\[0\]\[0\]\[0\]\[0\]\[0\]\[0\]…: nested deeper than the 64-level limit$/);
  });

  it('the store repairs upstream text instead of failing the write', () => {
    assert.equal(cleanText('a\u0000b\ud800'), 'ab\ufffd');
    assert.equal(toJson({ t: 'ok😀' }), '{"t":"ok😀"}');
    assert.equal(toJson({ t: 'x\ud800', u: ['\u0000'] }), '{"t":"x\ufffd","u":[""]}');
    // Keys too (a model's tool-call arguments); an object whose keys are fine is not copied.
    assert.equal(toJson({ a: { '\u0000x': 1, ['k\udc00']: [{ n: '\u0000' }] } }), '{"a":{"x":1,"k\ufffd":[{"n":""}]}}');
  });
});
