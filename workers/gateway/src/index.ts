import { createGatewayApp } from './app.ts';

export { WalletObject } from './wallet/wallet-object.ts';
export default createGatewayApp();
