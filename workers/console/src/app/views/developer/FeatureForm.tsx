/**
 * Create or edit a feature: every field of the features API (models, route policy, prices, output
 * cap, model aliases, fallbacks). Text is sent as typed (ui/forms.ts); the API's message explains a refusal.
 */
import type { FormEvent } from 'react';
import type { ApiClient } from '../../api.ts';
import { aliasesField, aliasesText, intField, listField, usdField } from '../../ui/forms.ts';
import { Field, Outcome } from '../../ui/parts.tsx';
import { useAction } from '../../ui/useAction.ts';
import type { Feature } from './types.ts';

const text = (form: FormData, name: string) => String(form.get(name) ?? '');
const featuresPath = (appId: string) => `/v1/developer/apps/${encodeURIComponent(appId)}/features`;

export function FeatureForm({ api, appId, feature, onSaved }: { api: ApiClient; appId: string; feature?: Feature; onSaved(): void }) {
  const action = useAction();
  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const element = event.currentTarget;
    const form = new FormData(element);
    const body = {
      name: text(form, 'name'),
      default_model: text(form, 'default_model').trim(),
      allowed_models: listField(text(form, 'allowed_models')),
      route_policy: text(form, 'route_policy'),
      developer_price_per_mtok_usd: usdField(text(form, 'developer_price_per_mtok_usd')),
      open_fee_usd: usdField(text(form, 'open_fee_usd')) ?? '0.00000000',
      max_output_tokens: intField(text(form, 'max_output_tokens')),
      model_aliases: aliasesField(text(form, 'model_aliases')),
      fallback_models: listField(text(form, 'fallback_models')),
    };
    const saved = feature
      ? await action.run(
          () => api.patch(`${featuresPath(appId)}/${encodeURIComponent(feature.feature_key)}`, body),
          `Feature ${feature.feature_key} saved.`,
        )
      : await action.run(
          () => api.post(featuresPath(appId), { feature_key: text(form, 'feature_key').trim(), ...body }),
          'Feature created.',
        );
    if (saved) {
      if (!feature) element.reset();
      onSaved();
    }
  }
  const label = feature ? `Edit feature ${feature.feature_key}` : 'New feature';
  return (
    <form onSubmit={submit} aria-label={label}>
      <div className="form-grid">
        {feature ? null : (
          <Field label="Feature key" hint="What calls name in `feature`, e.g. chat">
            {(id, hint) => <input id={id} name="feature_key" required aria-describedby={hint} />}
          </Field>
        )}
        <Field label="Name">{(id) => <input id={id} name="name" defaultValue={feature?.name} />}</Field>
        <Field label="Default model" hint="provider:model, e.g. openai:gpt-4o-mini">
          {(id, hint) => <input id={id} name="default_model" defaultValue={feature?.default_model} aria-describedby={hint} />}
        </Field>
        <Field label="Allowed models" hint="Comma or line separated; empty = any">
          {(id, hint) => (
            <textarea id={id} name="allowed_models" rows={2} defaultValue={feature?.allowed_models.join('\n')} aria-describedby={hint} />
          )}
        </Field>
        <Field label="Route policy">
          {(id) => (
            <select id={id} name="route_policy" defaultValue={feature?.route_policy ?? 'platform_first'}>
              <option value="platform_first">platform_first</option>
              <option value="byok_first">byok_first</option>
            </select>
          )}
        </Field>
        <Field label="Developer price per million tokens (USD)" hint="Empty = upstream cost">
          {(id, hint) => (
            <input
              id={id}
              name="developer_price_per_mtok_usd"
              inputMode="decimal"
              defaultValue={feature?.developer_price_per_mtok_usd ?? ''}
              aria-describedby={hint}
            />
          )}
        </Field>
        <Field label="Open fee per call (USD)" hint="byok and local routes">
          {(id, hint) => (
            <input id={id} name="open_fee_usd" inputMode="decimal" defaultValue={feature?.open_fee_usd ?? ''} aria-describedby={hint} />
          )}
        </Field>
        <Field label="Max output tokens" hint="Empty = no cap">
          {(id, hint) => (
            <input
              id={id}
              name="max_output_tokens"
              inputMode="numeric"
              defaultValue={feature?.max_output_tokens ?? ''}
              aria-describedby={hint}
            />
          )}
        </Field>
        <Field label="Model aliases" hint="One per line: alias = provider:model">
          {(id, hint) => (
            <textarea
              id={id}
              name="model_aliases"
              rows={2}
              defaultValue={feature ? aliasesText(feature.model_aliases) : ''}
              aria-describedby={hint}
            />
          )}
        </Field>
        <Field label="Fallback models" hint="Tried in order when the model fails before its first byte (at most 3)">
          {(id, hint) => (
            <textarea id={id} name="fallback_models" rows={2} defaultValue={feature?.fallback_models.join('\n')} aria-describedby={hint} />
          )}
        </Field>
      </div>
      <Outcome error={action.error} done={action.done} />
      <button type="submit" disabled={action.busy}>
        {feature ? 'Save feature' : 'Create feature'}
      </button>
    </form>
  );
}
