/** The provider-keys endpoints' request and response bodies (zod, also their OpenAPI description). */
import { z } from '@hono/zod-openapi';
import { WIRE_AMOUNT_PATTERN } from '../money/index.ts';
import { keyProviders } from './provider-formats.ts';

const label = z
  .string()
  .min(1)
  .max(100)
  .regex(/^[^\u0000-\u001f\u007f]+$/, 'must not contain control characters')
  .openapi({ example: 'production' });

/** An Azure resource's or a custom server's API root (provider-keys/endpoint.ts checks it). */
const baseUrl = z.string().min(1).max(2048).openapi({
  description:
    'azure and custom keys only (required there): the API root the key is used at, e.g. https://<resource>.openai.azure.com/openai[?api-version=…] or https://llm.example.com/v1; a public https address',
  example: 'https://my-resource.openai.azure.com/openai',
});

/** The raw key: accepted here, stored only encrypted, never returned or logged. */
const apiKey = z.string().min(1).max(512).openapi({ description: 'The provider API key; stored encrypted, never returned' });

export const CreateUserProviderKeyBody = z
  .object({ provider: z.enum(keyProviders), api_key: apiKey, label: label.optional(), base_url: baseUrl.optional() })
  .strict()
  .openapi('CreateUserProviderKeyRequest');

export const CreateDeveloperProviderKeyBody = z
  .object({
    provider: z.enum(keyProviders),
    api_key: apiKey,
    label: label.optional(),
    base_url: baseUrl.optional(),
    monthly_budget_usd: z
      .string()
      .regex(WIRE_AMOUNT_PATTERN, 'must be a decimal string with exactly 8 fractional digits, e.g. "25.00000000"')
      .openapi({
        description: 'Most upstream cost this key may carry per calendar month (UTC)',
        example: '25.00000000',
      }),
  })
  .strict()
  .openapi('CreateDeveloperProviderKeyRequest');

export const ProviderKeySchema = z
  .object({
    id: z.string().uuid(),
    provider: z.string(),
    label: z.string().nullable(),
    status: z.enum(['active', 'disabled']),
    masked_key: z.string().openapi({ example: 'sk-proj-...WXYZ', description: 'Prefix and last four characters' }),
    base_url: z.string().nullable().openapi({ description: 'The API root the key is used at (azure, custom); null: the provider’s own' }),
    created_at: z.string().openapi({ format: 'date-time' }),
    disabled_at: z.string().nullable().openapi({ format: 'date-time' }),
  })
  .openapi('ProviderKey');

export const DeveloperProviderKeySchema = ProviderKeySchema.extend({
  monthly_budget_usd: z.string().openapi({ example: '25.00000000' }),
  spent_this_month_usd: z.string().openapi({ description: 'Upstream cost recorded on this key this calendar month (UTC), 8 decimals' }),
}).openapi('DeveloperProviderKey');

export const ProviderKeyIdParam = z.object({
  id: z
    .string()
    .max(64)
    .openapi({ param: { name: 'id', in: 'path' }, example: '3f1c…' }),
});
