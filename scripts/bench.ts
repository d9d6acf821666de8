/**
 * `npm run bench`: prints the figures the issues ask for — worker bundle sizes, ledger bookings per
 * second, gateway overhead (in workerd beside Portkey, every call decided by its wallet object),
 * developer usage over a million events, request-log pages over a million calls, SDK size, the console's first-view JS,
 * quota steps (holds that grow with the answer: round trips, steps and added latency per step), the added latency
 * per surface (Responses, Messages, embeddings) beside Portkey. Each part runs against the embedded
 * PostgreSQL / local stack it starts itself. `npm run bench -- ledger` runs one part.
 */
import { measureWorkerBundles } from './bench/bundle-size.ts';

const parts: Record<string, () => Promise<void>> = {
  bundles: async () => {
    console.log('\n== Worker bundles (wrangler deploy --dry-run) ==');
    for (const size of measureWorkerBundles()) {
      console.log(`${size.worker.padEnd(8)} ${(size.bytes / 1024).toFixed(1)} KiB, gzip ${(size.gzipBytes / 1024).toFixed(1)} KiB`);
    }
  },
  ledger: async () => {
    console.log('\n== Ledger ==');
    const { runLedgerBench } = await import('./bench/ledger.ts');
    await runLedgerBench();
  },
  gateway: async () => {
    console.log('\n== Gateway ==');
    const { runGatewayStackBench } = await import('./bench/gateway-stack.ts');
    await runGatewayStackBench();
  },
  usage: async () => {
    console.log('\n== Developer usage (GET /v1/developer/usage) ==');
    const { runDeveloperUsageBench } = await import('./bench/developer-usage.ts');
    await runDeveloperUsageBench();
  },
  calls: async () => {
    console.log('\n== Request log (GET /v1/developer/calls: listCalls over a million calls) ==');
    const { runCallLogBench } = await import('./bench/call-log.ts');
    await runCallLogBench();
  },
  sdk: async () => {
    console.log('\n== SDK size (built as published, minified + gzip) ==');
    const { measureSdkSize } = await import('../sdk/scripts/size.ts');
    const size = await measureSdkSize();
    console.log(`core                  ${size.coreMinGzipBytes} bytes`);
    console.log(`react                 ${size.reactMinGzipBytes} bytes (core external), ${size.reactWithCoreMinGzipBytes} with the core`);
    console.log(
      `ai (AI SDK provider)  ${size.aiMinGzipBytes} bytes (@ai-sdk/openai-compatible external), ${size.aiWithDependenciesMinGzipBytes} with it`,
    );
  },
};

parts.surfaces = async () => {
  console.log('\n== Surface translation (its own cost per call, beside a parse + write of the same body) ==');
  const { runSurfaceTranslationBench } = await import('./bench/surface-translation.ts');
  await runSurfaceTranslationBench();
};

parts['surface-latency'] = async () => {
  console.log('\n== Added latency per surface (Responses, Messages, embeddings) beside Portkey ==');
  const { runSurfaceLatencyBench } = await import('./bench/gateway-surfaces.ts');
  await runSurfaceLatencyBench();
};

parts.catalog = async () => {
  console.log('\n== Model catalog lookup (full catalog against a reference of a few models, same run) ==');
  const { runCatalogLookupBench } = await import('./bench/catalog-lookup.ts');
  await runCatalogLookupBench();
};

parts.quota = async () => {
  console.log("\n== Holds that grow with the answer (quota steps: round trips, steps, added latency, a Claude Code turn's balance) ==");
  const { runQuotaStepsBench } = await import('./bench/quota-steps.ts');
  await runQuotaStepsBench();
};

parts.console = async () => {
  console.log('\n== Console first view (built as deployed, minified + gzip) ==');
  const { measureConsoleSize } = await import('./bench/console-size.ts');
  const size = await measureConsoleSize();
  const verdict = size.firstViewGzipBytes < size.targetGzipBytes ? 'under' : 'OVER';
  console.log(
    `first view  ${size.firstViewGzipBytes} bytes gzip (${size.firstViewMinBytes} minified), ${verdict} the ${size.targetGzipBytes / 1000} kB target`,
  );
  console.log(`on demand   ${size.onDemandGzipBytes} bytes gzip (the other views, loaded when opened)`);
};

const selected = process.argv.slice(2).filter((name) => name in parts);
let failed = false;
for (const name of selected.length ? selected : Object.keys(parts)) {
  try {
    await parts[name]!();
  } catch (error) {
    failed = true;
    console.error(`bench ${name} failed: ${(error as Error).message}`);
  }
}
process.exit(failed ? 1 : 0);
