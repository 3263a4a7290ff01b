// Which webhook targets count as private. Used when a policy is saved (literal hosts) and again
// at delivery time after DNS, and for every redirect hop (SSRF, reliability.md C8).
import { isIP } from 'node:net';

const PRIVATE_HOST_NAMES = new Set(['localhost', 'metadata.google.internal', 'metadata']);

/** True for loopback, private, link-local (cloud metadata 169.254.169.254), CGNAT, unspecified and ULA addresses. */
export function isPrivateAddress(address: string): boolean {
  const ip = address.replace(/^\[|\]$/g, '').toLowerCase();
  const mapped = ip.match(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/);
  if (mapped) return isPrivateAddress(mapped[1]!);
  if (isIP(ip) === 4) {
    const [a, b] = ip.split('.').map(Number) as [number, number];
    return a === 0 || a === 10 || a === 127 || (a === 169 && b === 254) || (a === 172 && b >= 16 && b <= 31) ||
      (a === 192 && b === 168) || (a === 100 && b >= 64 && b <= 127) || a >= 224;
  }
  if (isIP(ip) === 6) {
    return ip === '::' || ip === '::1' || /^f[cd]/.test(ip) || /^fe[89ab]/.test(ip) || ip.startsWith('ff');
  }
  return false;
}

/** True when the host part of a URL is a private literal address or a well-known internal name. */
export function isPrivateHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase().replace(/\.$/, '');
  return PRIVATE_HOST_NAMES.has(host) || host.endsWith('.localhost') || isPrivateAddress(host);
}
