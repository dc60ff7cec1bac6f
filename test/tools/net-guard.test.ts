// Every IPv6 form that embeds an IPv4 address is judged by the IPv4 address it leads to, without
// throwing (issue 16: `::7f00:1` passed as public and `[::ffff:0:127.0.0.1]` made the check throw).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { classifyAddress, resolveChecked } from '../../src/tools/net-guard.ts';
import { ToolError } from '../../src/tools/types.ts';

const inside = (reason: string, v4: string) => `${reason} (IPv4 ${v4} inside an IPv6 address)`;
const LOOPBACK = 'loopback';
const PRIVATE = 'private (RFC 1918)';
const METADATA = 'link-local (cloud metadata service)';

describe('IPv6 forms embedding IPv4', () => {
  const forms: Array<[string, string, string | null]> = [
    // [form, address, expected]
    ['IPv4-mapped, dotted', '::ffff:127.0.0.1', inside(LOOPBACK, '127.0.0.1')],
    ['IPv4-mapped, hex', '::ffff:7f00:1', inside(LOOPBACK, '127.0.0.1')],
    ['IPv4-mapped, public', '::ffff:8.8.8.8', null],
    ['IPv4-compatible, dotted', '::127.0.0.1', inside(LOOPBACK, '127.0.0.1')],
    ['IPv4-compatible, hex', '::7f00:1', inside(LOOPBACK, '127.0.0.1')],
    ['IPv4-compatible, private', '::a00:1', inside(PRIVATE, '10.0.0.1')],
    ['IPv4-compatible, metadata', '::a9fe:a9fe', inside(METADATA, '169.254.169.254')],
    ['IPv4-compatible, public', '::808:808', null],
    ['SIIT ::ffff:0:a.b.c.d, dotted', '::ffff:0:127.0.0.1', inside(LOOPBACK, '127.0.0.1')],
    ['SIIT, hex', '::ffff:0:c0a8:101', inside(PRIVATE, '192.168.1.1')],
    ['SIIT, public', '::ffff:0:8.8.8.8', null],
    ['NAT64 64:ff9b::/96, dotted', '64:ff9b::10.1.2.3', inside(PRIVATE, '10.1.2.3')],
    ['NAT64, hex', '64:ff9b::7f00:1', inside(LOOPBACK, '127.0.0.1')],
    ['NAT64, public', '64:ff9b::8.8.8.8', null],
    ['NAT64 local-use 64:ff9b:1::/48', '64:ff9b:1::7f00:1', 'local-use NAT64 (64:ff9b:1::/48)'],
    ['NAT64 local-use, public-looking', '64:ff9b:1:808:8::808', 'local-use NAT64 (64:ff9b:1::/48)'],
    ['6to4 2002::/16', '2002:7f00:1::1', inside(LOOPBACK, '127.0.0.1')],
    ['6to4, metadata', '2002:a9fe:a9fe::1', inside(METADATA, '169.254.169.254')],
    ['6to4, public', '2002:808:808::1', null],
    ['Teredo 2001::/32', '2001:0:4136:e378:8000:63bf:80ff:fffe', 'a Teredo tunnel address (2001::/32)'],
    ['Teredo, loopback client', '2001:0:7f00:1:0:0:80ff:fffe', 'a Teredo tunnel address (2001::/32)'],
    ['plain loopback is not IPv4-compatible', '::1', LOOPBACK],
    ['unspecified is not IPv4-compatible', '::', 'unspecified'],
  ];
  for (const [form, address, want] of forms) {
    it(`${form}: ${address}`, () => assert.equal(classifyAddress(address), want));
  }

  it('never throws, whatever the text', () => {
    for (const a of ['', 'x', '::ffff:0:999.0.0.1', '1.2.3', '::ffff:0:0:0:0:0:0', 'fe80::1%eth0', '64:ff9b::', '2002::', '::ffff:0:0']) {
      assert.doesNotThrow(() => classifyAddress(a), a);
      assert.equal(typeof (classifyAddress(a) ?? ''), 'string', a);
    }
  });

  it('a URL with a bracketed embedded form is refused with a ToolError, not a crash', async () => {
    for (const host of ['[::ffff:0:127.0.0.1]', '[::7f00:1]', '[64:ff9b::a9fe:a9fe]', '[2002:a00:1::]', '[2001:0:1:2::1]']) {
      await assert.rejects(resolveChecked(new URL(`http://${host}:8080/x`), { allowPrivate: false }), (err: unknown) => {
        assert.ok(err instanceof ToolError, String(err));
        assert.match((err as Error).message, /^refusing to fetch /);
        return true;
      }, host);
    }
  });
});
