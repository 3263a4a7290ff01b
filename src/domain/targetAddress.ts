// Which webhook targets count as private (SSRF, reliability.md C8). Used when a policy is saved
// (literal hosts) and at delivery for every address a name resolves to and every redirect hop.
// ipaddr.js classifies: only its `unicast` (public) range is allowed. An IPv4 address carried in
// IPv6 (mapped, NAT64, 6to4, Teredo…) is judged by the IPv4 address inside, so `[::ffff:7f00:1]`
// is loopback; the WHATWG URL parser has already turned `2130706433`, `0177.0.0.1` and `0x7f.1`
// into `127.0.0.1`.
import ipaddr from 'ipaddr.js';

const PRIVATE_HOST_NAMES = new Set(['localhost', 'metadata.google.internal', 'metadata']);

/** The range ipaddr.js gives an address, e.g. `loopback`, `private`, `unicast`; null when not an IP. */
export function addressRange(address: string): string | null {
  const text = address.replace(/^\[|\]$/g, '');
  if (!ipaddr.isValid(text)) return null;
  const ip = ipaddr.parse(text);
  if (ip.kind() === 'ipv4') return ip.range();
  const embedded = embeddedIPv4(ip as ipaddr.IPv6);
  return embedded ? embedded.range() : ip.range();
}

/** True for every address outside the public unicast ranges: loopback, private, link-local, CGNAT, ULA, multicast… */
export function isPrivateAddress(address: string): boolean {
  const range = addressRange(address);
  return range !== null && range !== 'unicast';
}

/** True when the host part of a URL is a private literal address or a well-known internal name. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  return PRIVATE_HOST_NAMES.has(host) || host.endsWith('.localhost') || isPrivateAddress(host);
}

/** The IPv4 address an IPv6 address carries by a known convention, if any. */
function embeddedIPv4(ip: ipaddr.IPv6): ipaddr.IPv4 | null {
  const bytes = ip.toByteArray();
  const v4 = (at: number, xor = 0) => new ipaddr.IPv4(bytes.slice(at, at + 4).map((b) => b ^ xor));
  switch (ip.range()) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
    case 'rfc6052': // 64:ff9b::a.b.c.d (NAT64)
      return v4(12);
    case '6to4': // 2002:aabb:ccdd::
      return v4(2);
    case 'teredo': // 2001:0:server:flags:port:client, the client address inverted
      return v4(12, 0xff);
    default:
      // ::a.b.c.d, the deprecated IPv4-compatible form (but not :: and ::1 themselves).
      return bytes.slice(0, 12).every((b) => b === 0) && ip.range() !== 'unspecified' && ip.range() !== 'loopback' ? v4(12) : null;
  }
}

/** Why `targetUrl` cannot be a webhook target (INVALID_URL, PRIVATE_TARGET), or null when it can. */
export function targetUrlProblem(targetUrl: string, allowPrivateTarget: boolean): { reason: 'INVALID_URL' | 'PRIVATE_TARGET'; message: string } | null {
  let url: URL;
  try {
    url = new URL(targetUrl);
  } catch {
    return { reason: 'INVALID_URL', message: 'targetUrl is not a valid URL' };
  }
  if ((url.protocol !== 'http:' && url.protocol !== 'https:') || targetUrl.length > 2000) {
    return { reason: 'INVALID_URL', message: 'targetUrl must be an http(s) URL of at most 2000 characters' };
  }
  if (!allowPrivateTarget && isPrivateHost(url.hostname)) {
    return {
      reason: 'PRIVATE_TARGET',
      message: `targetUrl points at a private, loopback or metadata address (${url.hostname}); set allowPrivateTarget to allow it`,
    };
  }
  return null;
}
