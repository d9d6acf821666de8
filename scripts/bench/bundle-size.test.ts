import { describe, expect, it } from 'vitest';
import { measureWorkerBundles } from './bundle-size.ts';

describe('wrangler deploy --dry-run', () => {
  it('builds every worker offline', () => {
    const sizes = measureWorkerBundles();
    expect(sizes.map((size) => size.worker)).toEqual(['api', 'gateway', 'metrics']);
    // A Worker script must stay under Cloudflare's 10 MiB compressed limit (paid plan); ours are far below.
    for (const size of sizes) expect(size.gzipBytes).toBeLessThan(3 * 1024 * 1024);
  }, 180_000);
});
