-- The current definition of faucet_byok_fallback_keys (migrations/README.md: edit it here; the runner re-applies a changed file).
-- On the byok route a fallback to another provider uses the end user's key of that provider (the
-- hold, the open fee, is the same for every model); a provider without one: that candidate is
-- skipped. The end user's newest active key of each provider named in p_fallbacks ("provider:model")
-- other than p_provider, as {provider: {id, ciphertext, iv, key_version}}. faucet_lease_context answers it.
create or replace function faucet_byok_fallback_keys(p_end_user_id uuid, p_provider text, p_fallbacks jsonb)
returns jsonb
language sql stable as $$
  select coalesce(jsonb_object_agg(k.provider, jsonb_build_object('id', k.id, 'ciphertext', k.ciphertext, 'iv', k.iv,
                                                                   'key_version', k.key_version)), '{}'::jsonb)
    from (select distinct on (pk.provider) pk.* from provider_credentials pk
           where pk.owner_type = 'end_user' and pk.end_user_id = p_end_user_id and pk.status = 'active'
             and pk.provider <> p_provider
             and pk.provider in (select split_part(m, ':', 1) from jsonb_array_elements_text(p_fallbacks) m)
           order by pk.provider, pk.created_at desc) k
$$;
