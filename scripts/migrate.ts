/** Applies pending migrations to `DATABASE_URL` (Neon or any Postgres reachable over TCP). */
import { migrate } from './lib/migrate.ts';
import { withClient } from './lib/postgres.ts';

const url = process.env.DATABASE_URL;
if (!url) {
  console.error('migrate: set DATABASE_URL');
  process.exit(2);
}
const applied = await withClient(url, (client) => migrate(client));
console.log(applied.length ? `migrate: applied ${applied.join(', ')}` : 'migrate: database is current');
