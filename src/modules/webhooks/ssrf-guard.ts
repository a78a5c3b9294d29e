import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP } from 'node:net';

// SSRF defence for webhook deliveries (D13): an operator-supplied URL must not reach the service's
// own network. The check runs on the address the socket is about to connect to (a `lookup` given to
// the HTTP agent), not on the URL's text, so a DNS name that resolves to 127.0.0.1 (`localhost`,
// or a rebinding name that answered differently when the endpoint was created) is refused too.
// IPv6 forms that carry an IPv4 address (NAT64, 6to4, IPv4-compatible, IPv4-mapped and -translated)
// are judged by that IPv4 address: a NAT64 gateway or 6to4 relay would connect to it.

const BLOCKED = new BlockList();
const RANGES: Array<[string, number, 'ipv4' | 'ipv6', string]> = [
  ['0.0.0.0', 8, 'ipv4', 'unspecified'],
  ['10.0.0.0', 8, 'ipv4', 'private'],
  ['100.64.0.0', 10, 'ipv4', 'shared (carrier-grade NAT)'],
  ['127.0.0.0', 8, 'ipv4', 'loopback'],
  ['169.254.0.0', 16, 'ipv4', 'link-local'],
  ['172.16.0.0', 12, 'ipv4', 'private'],
  ['192.0.0.0', 24, 'ipv4', 'reserved'],
  ['192.0.2.0', 24, 'ipv4', 'documentation'],
  ['192.88.99.0', 24, 'ipv4', 'reserved'],
  ['192.168.0.0', 16, 'ipv4', 'private'],
  ['198.18.0.0', 15, 'ipv4', 'benchmarking'],
  ['198.51.100.0', 24, 'ipv4', 'documentation'],
  ['203.0.113.0', 24, 'ipv4', 'documentation'],
  ['224.0.0.0', 4, 'ipv4', 'multicast'],
  ['240.0.0.0', 4, 'ipv4', 'reserved'],
  ['::', 128, 'ipv6', 'unspecified'],
  ['::1', 128, 'ipv6', 'loopback'],
  ['100::', 64, 'ipv6', 'discard-only'],
  ['2001::', 23, 'ipv6', 'reserved'],
  ['2001:db8::', 32, 'ipv6', 'documentation'],
  ['3fff::', 20, 'ipv6', 'documentation'],
  // Segment Routing over IPv6 identifiers (RFC 9602): never a host's address on the internet.
  ['5f00::', 16, 'ipv6', 'reserved'],
  // Local-use NAT64 (RFC 8215): a site's own translator, which may map any IPv4 address, internal ones included.
  ['64:ff9b:1::', 48, 'ipv6', 'local-use NAT64'],
  ['fc00::', 7, 'ipv6', 'private'],
  ['fe80::', 10, 'ipv6', 'link-local'],
  // Site-local (deprecated, but still routed inside some networks as their own addresses).
  ['fec0::', 10, 'ipv6', 'site-local'],
  ['ff00::', 8, 'ipv6', 'multicast'],
];
for (const [network, prefix, type] of RANGES) BLOCKED.addSubnet(network, prefix, type);
// Per-range lists name the reason; BlockList matches IPv4-mapped IPv6 (::ffff:127.0.0.1) against IPv4 rules.
const BY_REASON = RANGES.map(([network, prefix, type, reason]) => {
  const list = new BlockList();
  list.addSubnet(network, prefix, type);
  return { list, reason };
});

/**
 * Why the address may not be delivered to, or null when it is a public address. An IPv6 address
 * that embeds an IPv4 one, outside the ranges above, has that IPv4 address's reason.
 */
export function blockedReason(address: string): string | null {
  const family = isIP(address);
  if (family === 0) return 'not an IP address';
  const type = family === 4 ? 'ipv4' : 'ipv6';
  if (BLOCKED.check(address, type)) return BY_REASON.find(({ list }) => list.check(address, type))?.reason ?? 'blocked';
  const embedded = family === 6 ? embeddedIPv4(address) : null;
  return embedded === null ? null : blockedReason(embedded);
}

/**
 * The IPv4 address an IPv6 one carries, or null: NAT64 64:ff9b::/96, IPv4-mapped ::ffff:0:0/96,
 * IPv4-translated ::ffff:0:0:0/96, IPv4-compatible ::/96 (its last 32 bits), 6to4 2002::/16 (bits 16–47).
 */
function embeddedIPv4(address: string): string | null {
  const w = ipv6Words(address);
  const zero = (from: number, to: number) => w.slice(from, to).every((word) => word === 0);
  const ipv4 = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;
  if (w[0] === 0x2002) return ipv4(w[1]!, w[2]!);
  const last32 = (w[0] === 0x64 && w[1] === 0xff9b && zero(2, 6))
    || (zero(0, 5) && w[5] === 0xffff)
    || (zero(0, 4) && w[4] === 0xffff && w[5] === 0)
    || zero(0, 6);
  return last32 ? ipv4(w[6]!, w[7]!) : null;
}

/** A valid IPv6 address (isIP said so) as its eight 16-bit words; a zone (%eth0) is dropped. */
function ipv6Words(address: string): number[] {
  let text = address.replace(/%.*$/, '');
  const dotted = /^(.*:)(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(2).map(Number) as [number, number, number, number];
    text = `${dotted[1]}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const words = (part: string | undefined) => (part ? part.split(':').map((hex) => parseInt(hex, 16)) : []);
  const [head, tail] = text.split('::');
  if (tail === undefined) return words(head);
  const before = words(head);
  const after = words(tail);
  return [...before, ...new Array<number>(8 - before.length - after.length).fill(0), ...after];
}

/** The reason with its article: "a loopback address", "an unspecified address". */
export function addressKind(reason: string): string {
  return `${/^[aeiou]/i.test(reason) ? 'an' : 'a'} ${reason} address`;
}

/** A delivery refused before any byte was sent; its message goes to the delivery log. */
export class RefusedAddressError extends Error {
  override name = 'RefusedAddressError';
  readonly code = 'EWEBHOOKREFUSED';

  /** The address refused, after the name it was resolved from when there is one: "hooks.example (10.0.0.1)". */
  readonly which: string;

  constructor(readonly host: string, readonly address: string, readonly reason: string) {
    const which = host === address ? address : `${host} (${address})`;
    super(`refused: ${which} is ${addressKind(reason)}; set WEBHOOK_ALLOW_PRIVATE_NETWORKS=true to allow it`);
    this.which = which;
  }
}

export function refusal(host: string, address: string, reason: string): RefusedAddressError {
  return new RefusedAddressError(host, address, reason);
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * The one rule on a host's resolved addresses: the blocked ones are dropped; when none is left, the
 * refusal names the first. Used at connection time (guardedLookup) and when an endpoint's URL is set
 * (hostRefusal).
 */
function screen(hostname: string, addresses: LookupAddress[]): { allowed: LookupAddress[]; refused: RefusedAddressError | null } {
  const allowed = addresses.filter((a) => blockedReason(a.address) === null);
  const first = addresses[0];
  const refused = allowed.length === 0 && first ? refusal(hostname, first.address, blockedReason(first.address)!) : null;
  return { allowed, refused };
}

/**
 * A drop-in `lookup` for net/http that resolves as usual and drops blocked addresses; when nothing
 * is left, the connection fails with the reason. Node calls it with `all: true` (happy eyeballs) or
 * without; both answer shapes are kept.
 */
export function guardedLookup(hostname: string, options: { family?: number | string; all?: boolean } | number, callback: LookupCallback): void {
  const opts = typeof options === 'number' ? { family: options } : options;
  dnsLookup(hostname, { family: Number(opts.family ?? 0) as 0 | 4 | 6, all: true }, (error, addresses) => {
    if (error) return callback(error, []);
    const { allowed, refused } = screen(hostname, addresses);
    if (allowed.length === 0) return callback(refused ?? new Error(`no address for ${hostname}`), []);
    if (opts.all) return callback(null, allowed);
    return callback(null, allowed[0]!.address, allowed[0]!.family);
  });
}

/** How long setting an endpoint's URL waits for its name to resolve before it stops checking. */
export const HOST_CHECK_TIMEOUT_MS = 3000;

type HostLookup = (host: string, options: { all: true }, callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

/**
 * Why a delivery to this host would be refused now, or null: an IP literal as it is, a name as it
 * resolves at this moment. A name that does not resolve (yet), or not within HOST_CHECK_TIMEOUT_MS,
 * is not refused: the check that counts is made again on every delivery, on the address the
 * connection uses, and a slow resolver must not hold the request that sets the URL.
 */
export function hostRefusal(hostname: string, lookup: HostLookup = dnsLookup): Promise<RefusedAddressError | null> {
  const host = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(host)) {
    const reason = blockedReason(host);
    return Promise.resolve(reason ? refusal(host, host, reason) : null);
  }
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(null), HOST_CHECK_TIMEOUT_MS);
    lookup(host, { all: true }, (error, addresses) => {
      clearTimeout(timer);
      resolve(error ? null : screen(host, addresses).refused);
    });
  });
}
