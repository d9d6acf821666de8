import { describe, expect, it } from 'vitest';
import { checkUpstreamUrl } from './address-guard.ts';

const hostile: Array<[string, string]> = [
  ['http://localhost/v1', 'localhost'],
  ['http://LOCALHOST./v1', 'localhost, upper case, trailing dot'],
  ['http://api.localhost/v1', 'subdomain of localhost'],
  ['http://127.0.0.1/', 'loopback'],
  ['http://127.1/', 'short loopback'],
  ['http://2130706433/', 'decimal loopback'],
  ['http://0x7f000001/', 'hex loopback'],
  ['http://0x7f.0.0.1/', 'hex octet loopback'],
  ['http://017700000001/', 'octal loopback'],
  ['http://0177.0.0.1/', 'octal octet loopback'],
  ['http://10.0.0.5/', 'private 10/8'],
  ['http://172.16.0.1/', 'private 172.16/12 (low end)'],
  ['http://172.31.255.254/', 'private 172.16/12 (high end)'],
  ['http://192.168.1.1/', 'private 192.168/16'],
  ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
  ['http://0xa9fea9fe/', 'cloud metadata, hex'],
  ['http://169.254.1.1/', 'link-local'],
  ['http://100.64.0.1/', 'CGNAT (low end)'],
  ['http://100.127.255.254/', 'CGNAT (high end)'],
  ['http://0.0.0.0/', 'this network'],
  ['http://0/', 'this network, short'],
  ['http://224.0.0.1/', 'multicast'],
  ['http://255.255.255.255/', 'broadcast'],
  ['http://[::1]/', 'IPv6 loopback'],
  ['http://[0:0:0:0:0:0:0:1]/', 'IPv6 loopback, long form'],
  ['http://[::]/', 'IPv6 unspecified'],
  ['http://[fc00::1]/', 'IPv6 unique local fc00::/7'],
  ['http://[fd00:ec2::254]/', 'IPv6 unique local (AWS metadata)'],
  ['http://[fe80::1]/', 'IPv6 link-local'],
  ['http://[febf::1]/', 'IPv6 link-local, high end'],
  ['http://[ff02::1]/', 'IPv6 multicast'],
  ['http://[::ffff:127.0.0.1]/', 'IPv4-mapped loopback'],
  ['http://[::ffff:7f00:1]/', 'IPv4-mapped loopback, hex'],
  ['http://[::ffff:169.254.169.254]/', 'IPv4-mapped metadata'],
  ['http://[::ffff:8.8.8.8]/', 'IPv4-mapped, even public'],
  ['http://[::127.0.0.1]/', 'IPv4-compatible loopback'],
  ['http://[64:ff9b::a9fe:a9fe]/', 'NAT64 metadata'],
  ['http://[2002:7f00:1::]/', '6to4 loopback'],
  ['http://[2001:0:4136:e378::1]/', 'Teredo'],
  ['http://[2001:db8::1]/', 'IPv6 documentation'],
  ['http://printer.local/', '.local name'],
  ['http://metadata.google.internal/computeMetadata/v1/', '.internal name'],
  ['http://metadata/', 'single-label name'],
  ['http://router.lan/', '.lan name'],
  ['http://10.0.0.1.nip.io/', 'wildcard DNS to a private address'],
  ['http://169.254.169.254.sslip.io/', 'wildcard DNS to metadata'],
  ['http://app.localtest.me/', 'public name that resolves to loopback'],
  ['file:///etc/passwd', 'file scheme'],
  ['ftp://example.com/', 'ftp scheme'],
  ['gopher://example.com/', 'gopher scheme'],
  ['ws://example.com/', 'websocket scheme'],
  ['data:text/plain,hello', 'data scheme'],
  ['javascript:alert(1)', 'javascript scheme'],
  ['https://user:secret@api.openai.com/v1', 'credentials in URL'],
  ['https://user@api.openai.com/v1', 'user name in URL'],
  ['not a url', 'not a URL'],
  ['/v1/chat/completions', 'relative URL'],
];

const allowed = [
  'https://api.openai.com/v1/chat/completions',
  'https://api.anthropic.com/v1/messages',
  'https://api.groq.com/openai/v1',
  'https://example.com:8443/v1',
  'http://8.8.8.8/',
  'https://172.32.0.1/',
  'https://100.128.0.1/',
  'https://11.0.0.1/',
  'https://[2606:4700:4700::1111]/',
];

describe('upstream address guard', () => {
  it.each(hostile)('refuses %s (%s)', (url) => {
    const verdict = checkUpstreamUrl(url);
    expect(verdict.allowed).toBe(false);
  });

  it.each(allowed)('allows the public address %s', (url) => {
    expect(checkUpstreamUrl(url).allowed).toBe(true);
  });

  it('explains the refusal without echoing credentials', () => {
    const verdict = checkUpstreamUrl('https://user:hunter2@api.openai.com/v1');
    expect(verdict).toEqual({ allowed: false, reason: 'credentials in the URL are not allowed' });
  });

  it('names the range that a private address falls in', () => {
    expect(checkUpstreamUrl('http://169.254.169.254/')).toEqual({ allowed: false, reason: 'address is link-local (cloud metadata)' });
    expect(checkUpstreamUrl('http://[::ffff:10.0.0.1]/')).toEqual({ allowed: false, reason: 'address is IPv4-mapped IPv6' });
  });
});
