-- Stored provider keys for every catalog provider, and the endpoints a key is used at
-- (docs/provider-keys.md "Endpoints"): an Azure OpenAI resource (`https://<resource>.openai.azure.com/openai`,
-- optionally `?api-version=`) or any public OpenAI-compatible server (`custom`). Those two providers have no
-- common API root, so their keys carry one; every other provider's key is used at the catalog's root.
-- The address is checked when the key is stored and again by the outbound fetch of every call.
-- Idempotent: `if not exists`, duplicate constraints ignored.

alter table provider_credentials add column if not exists base_url text;

do $$ begin
  alter table provider_credentials add constraint provider_credentials_base_url check (
    (provider in ('azure', 'custom')) = (base_url is not null)
    and (base_url is null or length(base_url) <= 2048));
exception when duplicate_object then null;
end $$;
