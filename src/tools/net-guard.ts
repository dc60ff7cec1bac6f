// SSRF defence for fetch_url: which addresses a model-chosen URL may reach, and name resolution that
// checks every address the name resolves to. The checked addresses are what the connection then uses
// (see pinnedLookup), so a DNS answer that changes between check and connect (rebinding) cannot slip through.
import dns from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { ToolError } from './types.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Returns why an address must not be fetched, or null when it may be. */
export type AddressCheck = (address: string, url: URL) => string | null;
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

const RANGE_NAMES: Record<string, string> = {
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  multicast: 'multicast',
  linkLocal: 'link-local',
  loopback: 'loopback',
  carrierGradeNat: 'carrier-grade NAT (100.64.0.0/10)',
  private: 'private (RFC 1918)',
  uniqueLocal: 'private (unique local, fc00::/7)',
  deprecatedSiteLocal: 'private (site-local, fec0::/10)',
  reserved: 'reserved',
};

/**
 * IPv6 forms that carry an IPv4 address inside, and where it sits: the IPv4 address is what the
 * packets finally reach, so it is the one to check. ipaddr.js names most of these ranges but
 * converts only the IPv4-mapped one (toIPv4Address throws for SIIT), so the bytes are read here.
 */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const b = ip.toByteArray();
  const last4 = () => new ipaddr.IPv4(b.slice(12, 16));
  switch (ip.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d (SIIT)
      return last4();
    case 'rfc6052': // NAT64 64:ff9b::/96; the local-use 64:ff9b:1::/48 is refused whole (see below)
      return b.slice(4, 12).every((x) => x === 0) ? last4() : null;
    case '6to4': // 2002:AABB:CCDD::/16
      return new ipaddr.IPv4(b.slice(2, 6));
    default:
      // IPv4-compatible ::a.b.c.d (deprecated, ::/96), which ipaddr.js calls unicast; not :: or ::1.
      if (b.slice(0, 12).every((x) => x === 0) && (b[12]! | b[13]! | b[14]!) !== 0) return last4();
      return null;
  }
}

/** IPv6 ranges refused whatever they embed: where they lead cannot be known from the address. */
function tunnelRange(ip: ipaddr.IPv6): string | null {
  const range = ip.range();
  // Teredo relays to a client behind NAT (2001::/32).
  if (range === 'teredo') return 'a Teredo tunnel address (2001::/32)';
  // RFC 8215 local-use NAT64: the operator picks the prefix length, so the IPv4 part has no fixed place.
  if (range === 'rfc6052' && embeddedIPv4(ip) === null) return 'local-use NAT64 (64:ff9b:1::/48)';
  return null;
}

/** The default policy: only globally routable unicast addresses. Never throws. */
export function classifyAddress(address: string): string | null {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(address);
  } catch {
    return 'not a valid IP address';
  }
  if (ip.kind() === 'ipv6') {
    const v6 = ip as ipaddr.IPv6;
    const tunnel = tunnelRange(v6);
    if (tunnel) return tunnel;
    const v4 = embeddedIPv4(v6);
    if (v4) {
      const inner = classifyAddress(v4.toString());
      return inner ? `${inner} (IPv4 ${v4.toString()} inside an IPv6 address)` : null;
    }
  }
  const range = ip.range();
  if (range === 'unicast') return null;
  if (address === '169.254.169.254' || address.toLowerCase() === 'fd00:ec2::254') {
    return 'link-local (cloud metadata service)';
  }
  return RANGE_NAMES[range] ?? `special-purpose (${range})`;
}

export const defaultAddressCheck: AddressCheck = (address) => classifyAddress(address);

export const systemResolver: Resolver = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

/** Host name of a URL without the brackets of an IPv6 literal. */
export function bareHost(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

export interface GuardOptions {
  allowPrivate: boolean;
  check?: AddressCheck;
  resolve?: Resolver;
}

/**
 * Resolves the URL's host and checks every address. Throws a ToolError naming the first refused one;
 * one bad address refuses the whole name, since the OS could pick any of them.
 */
export async function resolveChecked(url: URL, opts: GuardOptions): Promise<ResolvedAddress[]> {
  const host = bareHost(url);
  let addresses: ResolvedAddress[];
  if (ipaddr.isValid(host)) {
    addresses = [{ address: host, family: ipaddr.parse(host).kind() === 'ipv6' ? 6 : 4 }];
  } else {
    try {
      addresses = await (opts.resolve ?? systemResolver)(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new ToolError(`could not resolve host ${host} for ${url.href}${code ? ` (${code})` : ''}`, { cause: err });
    }
    if (addresses.length === 0) throw new ToolError(`host ${host} has no addresses (${url.href})`);
  }
  if (opts.allowPrivate) return addresses;
  const check = opts.check ?? defaultAddressCheck;
  for (const a of addresses) {
    const reason = check(a.address, url);
    if (reason) {
      throw new ToolError(
        `refusing to fetch ${url.href}: address ${a.address} is ${reason} (set FETCH_URL_ALLOW_PRIVATE=true to allow)`,
      );
    }
  }
  return addresses;
}

/** A `lookup` for node:net that answers only with the already-checked addresses, never asking DNS again. */
export function pinnedLookup(addresses: ResolvedAddress[]): LookupFunction {
  return ((_hostname: string, options: dns.LookupOptions, callback: (...args: unknown[]) => void) => {
    const wanted = options.family === 4 || options.family === 6 ? options.family : 0;
    const usable = addresses.filter((a) => wanted === 0 || a.family === wanted);
    if (usable.length === 0) {
      const err = Object.assign(new Error(`no checked IPv${wanted} address`), { code: 'ENOTFOUND' });
      callback(err);
      return;
    }
    if (options.all) callback(null, usable);
    else callback(null, usable[0]!.address, usable[0]!.family);
  }) as LookupFunction;
}
