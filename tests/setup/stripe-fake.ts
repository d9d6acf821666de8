/**
 * Global setup of the Workers-runtime tests: the fake Stripe API (scripts/lib/stripe-fake.ts) runs in
 * Node, and the workers reach it over real HTTP through the `STRIPE_API_*` bindings.
 */
import type { TestProject } from 'vitest/node';
import { startStripeFake } from '../../scripts/lib/stripe-fake.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    stripeApiPort: number;
  }
}

export default async function setup(project: TestProject) {
  const fake = await startStripeFake();
  project.provide('stripeApiPort', fake.port);
  return () => fake.close();
}
