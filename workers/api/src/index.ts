import { createApiApp } from './app.ts';

export default createApiApp();
