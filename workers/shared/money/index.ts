export * from './usd.ts';
export * from './wire.ts';
