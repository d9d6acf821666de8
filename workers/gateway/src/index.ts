import { createGatewayApp } from './app.ts';

export default createGatewayApp();
