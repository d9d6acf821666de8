export * from './catalog.ts';
export * from './rate-usage.ts';
export * from './rating-error.ts';
export * from './settings.ts';
