import type { RouteHandler } from '../context';
import { sendJson } from '../http/send';
import { bridgeVersion } from '../version';

export const health: RouteHandler = async ({ response }) => {
  sendJson(response, 200, { status: 'ok', version: bridgeVersion });
};
