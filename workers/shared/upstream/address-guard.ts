/**
 * Decides whether the cloud may fetch a URL: only http(s) to a public host. The WHATWG URL parser
 * already folds decimal, octal, hex and short IPv4 forms (`0x7f.1`, `2130706433`, `0177.0.0.1`) into
 * dotted quads and compresses IPv6, so the checks below see canonical addresses only.
 *
 * Names that resolve to private addresses at request time (DNS rebinding) cannot be caught here; on
 * Cloudflare the egress itself refuses private ranges, and every hop is re-checked (no redirects).
 */

export type AddressVerdict = { allowed: true; url: URL } | { allowed: false; reason: string };

/** Suffixes that only ever name internal hosts, or public "wildcard DNS" services that map a name to any IP. */
const refusedNameSuffixes = [
  'localhost',
  'local',
  'internal',
  'localdomain',
  'lan',
  'home',
  'corp',
  'intranet',
  'home.arpa',
  'in-addr.arpa',
  'ip6.arpa',
  'nip.io',
  'sslip.io',
  'xip.io',
  'localtest.me',
  'lvh.me',
];

/** IPv4 ranges that are not publicly routable (RFC 6890 and friends), as [network, prefix length]. */
const refusedIpv4Ranges: Array<[string, number, string]> = [
  ['0.0.0.0', 8, '"this network"'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'carrier-grade NAT'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.0.0', 16, 'link-local (cloud metadata)'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'IETF protocol assignments'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, '6to4 relay'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'benchmarking'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

export interface AddressOptions {
  /** The one loopback `host:port` a local stack may call (loopback-allowance.ts); null or absent: none. */
  allowLoopback?: string | null;
}

export function checkUpstreamUrl(raw: string, options: AddressOptions = {}): AddressVerdict {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return refuse('not a valid absolute URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return refuse(`scheme ${url.protocol} is not allowed`);
  if (url.username !== '' || url.password !== '') return refuse('credentials in the URL are not allowed');
  if (options.allowLoopback != null && url.host === options.allowLoopback) return { allowed: true, url };

  const host = url.hostname.toLowerCase().replace(/\.+$/, '');
  if (host === '') return refuse('no host');

  if (host.startsWith('[')) {
    const reason = refusedIpv6Reason(host.slice(1, -1));
    return reason === null ? { allowed: true, url } : refuse(`address is ${reason}`);
  }
  const ipv4 = parseDottedQuad(host);
  if (ipv4 !== null) {
    const reason = refusedIpv4Reason(ipv4);
    return reason === null ? { allowed: true, url } : refuse(`address is ${reason}`);
  }
  // A last label of digits only that the URL parser did not turn into an address is not a real name.
  if (/^[0-9]+$/.test(host.split('.').at(-1) ?? '')) return refuse('numeric host is not a valid address');
  if (!host.includes('.')) return refuse('single-label host names are internal');
  for (const suffix of refusedNameSuffixes) {
    if (host === suffix || host.endsWith(`.${suffix}`)) return refuse(`.${suffix} names are internal`);
  }
  return { allowed: true, url };
}

function refuse(reason: string): AddressVerdict {
  return { allowed: false, reason };
}

function parseDottedQuad(host: string): number | null {
  const match = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  if (match === null) return null;
  const octets = match.slice(1).map(Number);
  if (octets.some((octet) => octet > 255)) return null;
  return ((octets[0]! << 24) >>> 0) + (octets[1]! << 16) + (octets[2]! << 8) + octets[3]!;
}

function refusedIpv4Reason(address: number): string | null {
  for (const [network, prefix, label] of refusedIpv4Ranges) {
    const mask = prefix === 0 ? 0 : (~0 << (32 - prefix)) >>> 0;
    if ((address & mask) >>> 0 === (parseDottedQuad(network)! & mask) >>> 0) return label;
  }
  return null;
}

/**
 * Only global unicast (2000::/3) is fetched, minus the ranges inside it that are documentation or
 * carry an embedded IPv4 address (6to4, Teredo); everything else (::1, ::, fc00::/7, fe80::/10,
 * ff00::/8, ::ffff:0:0/96 IPv4-mapped, 64:ff9b::/96 NAT64) falls outside it and is refused.
 */
function refusedIpv6Reason(literal: string): string | null {
  const groups = parseIpv6(literal);
  if (groups === null) return 'not a valid IPv6 address';
  const first = groups[0]!;
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) return 'IPv4-mapped IPv6';
  if ((first & 0xe000) !== 0x2000) return describeNonGlobalIpv6(groups);
  if (first === 0x2002) return '6to4 (embedded IPv4)';
  if (first === 0x2001 && groups[1] === 0x0000) return 'Teredo (embedded IPv4)';
  if (first === 0x2001 && groups[1] === 0x0db8) return 'documentation';
  return null;
}

function describeNonGlobalIpv6(groups: number[]): string {
  const first = groups[0]!;
  if (groups.every((group, index) => group === (index === 7 ? 1 : 0))) return 'loopback';
  if (groups.every((group) => group === 0)) return 'unspecified';
  if ((first & 0xfe00) === 0xfc00) return 'unique local (fc00::/7)';
  if ((first & 0xffc0) === 0xfe80) return 'link-local (fe80::/10)';
  if ((first & 0xff00) === 0xff00) return 'multicast';
  if (first === 0x0064 && groups[1] === 0xff9b) return 'NAT64 (embedded IPv4)';
  return 'not global unicast';
}

/** Parses a compressed IPv6 literal (the URL parser has already canonicalised it) into 8 groups. */
function parseIpv6(literal: string): number[] | null {
  const withoutZone = literal.split('%')[0]!;
  const halves = withoutZone.split('::');
  if (halves.length > 2) return null;
  const toGroups = (part: string): number[] | null => {
    if (part === '') return [];
    const groups: number[] = [];
    for (const piece of part.split(':')) {
      const quad = parseDottedQuad(piece);
      if (quad !== null) {
        groups.push(quad >>> 16, quad & 0xffff);
      } else if (/^[0-9a-f]{1,4}$/.test(piece)) {
        groups.push(parseInt(piece, 16));
      } else {
        return null;
      }
    }
    return groups;
  };
  const head = toGroups(halves[0]!);
  const tail = halves.length === 2 ? toGroups(halves[1]!) : [];
  if (head === null || tail === null) return null;
  if (halves.length === 1) return head.length === 8 ? head : null;
  const missing = 8 - head.length - tail.length;
  if (missing < 1) return null;
  return [...head, ...new Array<number>(missing).fill(0), ...tail];
}
