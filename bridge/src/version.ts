import { version } from '../package.json';

/** The bridge's version, taken from its package.json at build time. */
export const bridgeVersion: string = version;
